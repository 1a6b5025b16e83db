"""One request's view of the service: a transaction, the caller's access, and the scopes it touches.

:meth:`Store.read` and :meth:`Store.write` open exactly one transaction per request: everything a request
reads and writes happens in it, and it commits only when the request's work is done (a failure rolls all
of it back, so there is never a partial write).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from sqlalchemy import Engine

from template_engine.org import SYSTEM, Scope, View
from template_engine.scopes import LEVELS, ScopeLevel, ScopeType
from template_engine.service.auth import Access, Principal, ScopeRef
from template_engine.service.errors import ApiError, field_error, not_found
from template_engine.service.ids import id_number, is_uuid, parse_id
from template_engine.service.storage.database import transaction
from template_engine.service.storage.repository import (
    CLUSTERS,
    DEPARTMENTS,
    PROJECTS,
    UNIT_TABLES,
    ClusterUnitRow,
    DepartmentRow,
    Lock,
    ProjectRow,
    Repository,
    UnitTable,
    scope_key,
)

_U = TypeVar("_U", ClusterUnitRow, DepartmentRow, ProjectRow)
#: A unit's row, of any level.
UnitRow = ClusterUnitRow | DepartmentRow | ProjectRow

#: The levels the service serves, top first: every row of :data:`template_engine.scopes.LEVELS`.  A
#: :class:`Placement` has one field per named level, named after it.
SERVED_LEVELS: tuple[ScopeLevel, ...] = LEVELS
SERVED: dict[str, ScopeLevel] = {level.type: level for level in SERVED_LEVELS}
#: Each served level's position, top first.
_DEPTH: dict[str, int] = {level.type: depth for depth, level in enumerate(SERVED_LEVELS)}
_NAMED_TYPES = tuple(level.type for level in SERVED_LEVELS[1:])
#: The named levels at and above each served level (a :class:`Placement`'s fields that make it that scope).
_AT_AND_ABOVE = {level.type: _NAMED_TYPES[:depth] for depth, level in enumerate(SERVED_LEVELS)}


@dataclass(frozen=True, slots=True)
class Placement:
    """A scope with its rows: the system, a cluster, a department (with its cluster, in an org that has
    clusters), or a project (with its department and cluster); a row for each named level at and above the
    scope, in the field named after the level."""

    type: ScopeType
    department: DepartmentRow | None = None
    project: ProjectRow | None = None
    cluster: ClusterUnitRow | None = None

    @property
    def own(self) -> UnitRow | None:
        """The scope's own row (``None`` for the system)."""
        row: UnitRow | None = getattr(self, self.type, None)
        return row

    @property
    def id(self) -> int | None:
        row = self.own
        return row.id if row is not None else None

    @property
    def key(self) -> str:
        return scope_key(self.type, self.id)

    @property
    def ref(self) -> ScopeRef:
        return ScopeRef(
            self.type,
            self.department.name if self.department is not None else None,
            self.project.name if self.project is not None else None,
            self.cluster.name if self.cluster is not None else None,
        )

    def scope(self) -> Scope:
        row = self.own
        return Scope(self.type, row.name) if row is not None else SYSTEM

    def view(self) -> View:
        return View(
            self.department.name if self.department is not None else None,
            self.project.name if self.project is not None else None,
            self.cluster.name if self.cluster is not None else None,
        )

    def chain_keys(self) -> list[str]:
        """The keys of the scopes a composition seen from here reads, top first."""
        keys = ["system"]
        for name in _NAMED_TYPES:
            row = getattr(self, name)
            if row is not None:
                keys.append(scope_key(name, row.id))
        return keys

    def contains(self, other: Placement) -> bool:
        """Whether ``other`` is this scope or below it: this scope's own row is also ``other``'s (a unit's
        row is one of its level's, so the own level decides)."""
        mine = self.own
        if mine is None:
            return True
        theirs = getattr(other, self.type)
        return theirs is not None and theirs.id == mine.id

    def parent(self) -> Placement:
        """The scope right above this one (the system's is itself): the nearest level above that has a row
        (a department of an org without clusters is right below the system)."""
        if self.type == SERVED_LEVELS[0].type:
            return self
        above = replace(self, type=SERVED_LEVELS[_DEPTH[self.type] - 1].type, **{self.type: None})
        return above if above.own is not None else above.parent()

    def below(self, level: str, row: UnitRow) -> Placement:
        """The scope of ``row``, a unit of ``level`` right below this scope."""
        return replace(self, type=level, **{level: row})  # type: ignore[arg-type]


@dataclass
class Ctx:
    """The repository of the request's transaction and the caller's access."""

    repo: Repository
    access: Access
    _units: dict[tuple[str, int], Any] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        return self.access.subject

    def unit(self, table: UnitTable[_U], unit_id: int, lock: Lock = False) -> _U:
        """The unit ``unit_id`` of a level (404 when there is none); read once per request unless locked."""
        found: _U | None = self._units.get((table.type, unit_id)) if not lock else None
        if found is None:
            found = self.repo.unit(table, unit_id, lock=lock)
            if found is None:
                raise not_found(f"{table.type} {unit_id}")
            self._units[(table.type, unit_id)] = found
        return found

    def cluster(self, cluster_id: int, lock: Lock = False) -> ClusterUnitRow:
        return self.unit(CLUSTERS, cluster_id, lock)

    def department(self, department_id: int, lock: Lock = False) -> DepartmentRow:
        return self.unit(DEPARTMENTS, department_id, lock)

    def project(self, project_id: int, lock: Lock = False) -> ProjectRow:
        return self.unit(PROJECTS, project_id, lock)

    def placement(self, scope_type: str, scope_id: int | None, lock: Lock = False) -> Placement:
        """The scope ``scope_type``/``scope_id`` (404 when the department or project does not exist): the
        unit's row, locked with ``lock``, below its parent's placement."""
        if not SERVED[scope_type].named:
            return Placement("system")
        if scope_id is None:
            raise ApiError(500, "a scope without its id")  # the schema makes this impossible
        table = UNIT_TABLES[scope_type]
        row = self.unit(table, scope_id, lock=lock)
        above = SERVED_LEVELS[_DEPTH[scope_type] - 1].type
        parent_id = getattr(row, table.parent) if table.parent else None
        # a department of an org without clusters has none above it but the system
        parent = self.placement(above, parent_id) if parent_id is not None else Placement("system")
        return parent.below(scope_type, row)

    def unit_id(self, scope_type: str, given: object) -> int | None:
        """The id of the unit of ``scope_type`` a request names by ``given`` (a cluster by its UUID, as Run:ai
        names it; a department or project by its id), or ``None`` when there is no such unit.  A value that
        is not an id of the level's form is a 400 at the caller (:func:`public_id_problem`)."""
        if scope_type == "cluster":
            found = self.repo.cluster_by_uuid(str(given).lower()) if is_uuid(given) else None
            return found.id if found is not None else None
        number = id_number(given)
        if number is None or self.repo.unit(UNIT_TABLES[scope_type], number) is None:
            return None
        return number

    def project_placement(self, project_id: str | int, field_name: str, lock: Lock = False) -> Placement:
        """The placement of the project a query or body field names; an unknown one is a 400 on it."""
        number = parse_id(project_id, field_name)
        try:
            return self.placement("project", number, lock=lock)
        except ApiError as exc:
            if exc.status == 404:
                raise field_error((field_name,), f"unknown project {project_id!r}") from None
            raise


class Store:
    """The database behind the service."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @contextmanager
    def read(self, principal: Principal) -> Iterator[Ctx]:
        with transaction(self.engine, write=False) as connection:
            repo = Repository(connection)
            yield Ctx(repo, self._access(principal, repo))

    @contextmanager
    def write(self, principal: Principal) -> Iterator[Ctx]:
        with transaction(self.engine, write=True) as connection:
            repo = Repository(connection)
            yield Ctx(repo, self._access(principal, repo))

    @staticmethod
    def _access(principal: Principal, repo: Repository) -> Access:
        """The principal with its binding resolved against the database: the unit its role is bound to, with
        the units above it (a binding to a unit the database does not have names that unit alone)."""
        level, name = principal.level, principal.bound_to
        if level is None or name is None:
            return Access(principal, None)
        row = repo.unit_named(UNIT_TABLES[level], name)
        if row is None:
            names = {
                "department": principal.department,
                "project": principal.project,
                "cluster": principal.cluster,
            }
            return Access(principal, principal.department, ScopeRef(level, **names))  # type: ignore[arg-type]
        binding = Ctx(repo, Access(principal, None)).placement(level, row.id).ref
        return Access(principal, binding.department, binding)
