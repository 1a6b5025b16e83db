"""The scope levels of an organisation, as one ordered table: system, cluster, department, project.

Run:ai's tree is tenant -> cluster -> department -> project (its ``ScopeType``: ``system``, ``tenant``,
``cluster``, ``department``, ``project``).  Here the top scope is ``system``: the tenant of a single-tenant
install, as the seeds use it; Run:ai's ``tenant`` is accepted wherever Run:ai accepts it and means the same
scope (docs/decisions.md).  Everything that walks the tree (the loader's layout, the layers, ``explain``, the
views, the CLI, the pytest plugin, the service's scopes and authorization) reads this table, so a level is a
row here and not an ``if`` on a name somewhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

#: The levels of the tree, top first.
ScopeType = Literal["system", "cluster", "department", "project"]
#: Every name Run:ai gives a scope level (``tenant`` is the system's).
RunaiScopeType = Literal["system", "tenant", "cluster", "department", "project"]


@dataclass(frozen=True, slots=True)
class ScopeLevel:
    """One level of the tree."""

    #: The level's name here (``Scope.type``).
    type: ScopeType
    #: The level right above (``None`` for the top).
    parent: ScopeType | None
    #: The folder of a templates folder that holds one sub-folder per scope of this level (``None``: the top
    #: scope's own folder, :attr:`own_folder`).
    folder: str | None
    #: The folder of the top scope (``system/``); ``None`` for the named levels.
    own_folder: str | None
    #: The name Run:ai's policy ``scope`` query and ``AssetMeta.scope`` give this level.
    runai_scope: str
    #: Every name Run:ai may use for this level in a ``scopeType`` or ``scope``.
    aliases: tuple[str, ...]
    #: The body or query field that names a scope of this level (``clusterId``...; ``None`` for the top).
    id_field: str | None
    #: The Python keyword a :class:`template_engine.org.View` takes for it (``None`` for the top).
    view_field: str | None

    @property
    def named(self) -> bool:
        """Whether scopes of this level have names (every level but the top)."""
        return self.parent is not None


SYSTEM_LEVEL = ScopeLevel("system", None, None, "system", "tenant", ("system", "tenant"), None, None)
CLUSTER_LEVEL = ScopeLevel(
    "cluster", "system", "clusters", None, "cluster", ("cluster",), "clusterId", "cluster"
)
DEPARTMENT_LEVEL = ScopeLevel(
    "department", "cluster", "departments", None, "department", ("department",), "departmentId", "department"
)
PROJECT_LEVEL = ScopeLevel(
    "project", "department", "projects", None, "project", ("project",), "projectId", "project"
)

#: The levels, top first: the order of a composition's scope layers.
LEVELS: tuple[ScopeLevel, ...] = (SYSTEM_LEVEL, CLUSTER_LEVEL, DEPARTMENT_LEVEL, PROJECT_LEVEL)
LEVEL_BY_TYPE: dict[str, ScopeLevel] = {level.type: level for level in LEVELS}
#: Every name of a level, Run:ai's included -> its level.
LEVEL_BY_ALIAS: dict[str, ScopeLevel] = {alias: level for level in LEVELS for alias in level.aliases}
#: The named levels, top first (cluster, department, project).
NAMED_LEVELS: tuple[ScopeLevel, ...] = tuple(level for level in LEVELS if level.named)
SCOPE_TYPES: tuple[str, ...] = get_args(ScopeType)


def level_of(name: str) -> ScopeLevel:
    """The level named ``name`` (``tenant`` is the system); ``KeyError`` for any other."""
    return LEVEL_BY_ALIAS[name]


def scope_type_of(name: str) -> ScopeType:
    """``name`` as this table's type: ``tenant`` -> ``system``, the others as they are."""
    return LEVEL_BY_ALIAS[name].type


def depth(scope_type: str) -> int:
    """The position of a level, top first (system 0 ... project 3)."""
    return LEVELS.index(LEVEL_BY_ALIAS[scope_type])


def below(scope_type: str) -> tuple[ScopeLevel, ...]:
    """The levels under ``scope_type``, nearest first."""
    return LEVELS[depth(scope_type) + 1 :]
