"""Stored policies as the engine reads them: one document per scope and workload kind (the ``policies`` table
holds the distributed ones, a ``policy.yaml`` each; ``kind_policies`` every other kind's, a
``training-policy.yaml``...: ``WorkloadKind.policy_file``).

A stored policy is the document its file holds (``rules``, ``imposedAssets`` by data source name, and for a
kind but distributed its value defaults), read with the kind's reader (``read_policy(..., kind=)``).
The engine names a rule by its file and line; the service names it by the file a ``db export`` writes for
it (``system/policy.yaml``, ``departments/D/training-policy.yaml``, ``projects/P/policy.yaml``) and its line
there: in the text the policy was imported from when it was (:attr:`PolicyRow.text`, comments included),
otherwise in the YAML the export writes for the document.  So a compliance issue's ``source`` is the same
whether the org is read from its folder or served from the database, and points at a real line of the export.

Policies are held to the loader's rules whenever they are written: :func:`stored_problems` checks every
stored policy together (each imposed asset a data source of the database, one owner per field in every
branch), as ``load_org`` checks a folder's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from template_engine.errors import InputError, Problem
from template_engine.kinds import DISTRIBUTED, KINDS, WorkloadKind, kind_named
from template_engine.loader.policies import org_policy_problems
from template_engine.loader.yaml_safe import load_yaml
from template_engine.models.documents import AssetKind
from template_engine.org import SYSTEM, Asset, Scope
from template_engine.paths import Path
from template_engine.policy.document import PolicyDocument, read_policy
from template_engine.scopes import LEVEL_BY_TYPE
from template_engine.service.cache import CACHE, MODEL_BYTES_PER_JSON_BYTE, json_size
from template_engine.service.storage.repository import (
    CLUSTERS,
    ClusterUnitRow,
    PolicyRow,
    Repository,
    scope_key,
)
from template_engine.service.yamltext import dump_yaml


def policy_file(scope: Scope, kind: WorkloadKind = DISTRIBUTED) -> str:
    """The file of a scope's policy of ``kind`` in a templates folder (and in an export): the scope table's
    folder of its level (``clusters/east/``, ``departments/research/``...), ``system/`` for the top."""
    level = LEVEL_BY_TYPE[scope.type]
    if level.named:
        return f"{level.folder}/{scope.name}/{kind.policy_file}"
    return f"{level.own_folder}/{kind.policy_file}"


def _lines(row: PolicyRow, file: str) -> Mapping[Path, tuple[int, int]]:
    text = row.text if row.text is not None else dump_yaml(row.document)
    try:
        return load_yaml(text, file).lines
    except InputError:  # pragma: no cover - the text was read (or written) as YAML before it was stored
        return {}


def stored_policy(row: PolicyRow, scope: Scope) -> PolicyDocument | list[Problem]:
    """The policy of ``row`` (the policy of its kind of ``scope``) as the engine reads it, or why it no
    longer reads (a stored document that a newer vocabulary refuses)."""
    kind = kind_named(row.kind)
    file = policy_file(scope, kind)

    def build() -> PolicyDocument | list[Problem]:
        doc, problems = read_policy(row.document, file, _lines(row, file), scope, kind=kind)
        if doc is not None:
            return doc
        return [replace(p, message=f"the stored policy is no longer valid: {p.message}") for p in problems]

    key = ("policy", row.scope_key, row.kind, file, row.audit.version, row.audit.updated_at)

    def size() -> int:  # the lines read from its text are of the same order
        return MODEL_BYTES_PER_JSON_BYTE * json_size(row.document)

    found: PolicyDocument | list[Problem] = CACHE.get(key, build, size)
    return found


@dataclass(frozen=True, slots=True)
class OrgUnits:
    """The departments and projects of the database, by scope key and as the loader's tree."""

    scopes: Mapping[str, Scope]
    tree: Mapping[str, tuple[str, ...]]
    ids: Mapping[Scope, tuple[int | None, int | None]]
    #: The clusters' rows by name, each with its departments' names (empty: an org without clusters).
    clusters: Mapping[str, tuple[ClusterUnitRow, tuple[str, ...]]] = field(default_factory=dict)

    @property
    def cluster_tree(self) -> dict[str, tuple[str, ...]]:
        """Each cluster's departments, by the cluster's name (the loader's ``clusters``)."""
        return {name: departments for name, (_row, departments) in self.clusters.items()}

    @classmethod
    def read(cls, repo: Repository) -> OrgUnits:
        departments = repo.departments()
        projects = repo.projects()
        scopes: dict[str, Scope] = {"system": SYSTEM}
        ids: dict[Scope, tuple[int | None, int | None]] = {SYSTEM: (None, None)}
        clusters: dict[str, tuple[ClusterUnitRow, tuple[str, ...]]] = {}
        for c in repo.units(CLUSTERS):
            scopes[scope_key("cluster", c.id)] = Scope("cluster", c.name)
            ids[Scope("cluster", c.name)] = (c.id, None)
            clusters[c.name] = (c, tuple(d.name for d in departments if d.cluster_id == c.id))
        for d in departments:
            scope = Scope("department", d.name)
            scopes[scope_key("department", d.id)] = scope
            ids[scope] = (d.id, None)
        for p in projects:
            scope = Scope("project", p.name)
            scopes[scope_key("project", p.id)] = scope
            ids[scope] = (p.department_id, p.id)
        tree = {d.name: tuple(p.name for p in projects if p.department_id == d.id) for d in departments}
        return cls(scopes, tree, ids, clusters)

    def name_of(self, kind: str, unit_id: int) -> str:
        """The name of the department or project ``unit_id`` (``kind``: ``department``, ``project``)."""
        name = self.scopes[scope_key(kind, unit_id)].name
        assert name is not None
        return name


def stored_policies(
    repo: Repository, units: OrgUnits, kind: WorkloadKind = DISTRIBUTED
) -> tuple[dict[Scope, PolicyDocument], list[Problem]]:
    """Every stored policy of ``kind`` the engine reads, by scope, and the problems of those it does not."""
    found: dict[Scope, PolicyDocument] = {}
    problems: list[Problem] = []
    for row in repo.all_policies(kind.name):
        scope = units.scopes.get(row.scope_key)
        if scope is None:  # pragma: no cover - the foreign keys delete a scope's policy with it
            continue
        read = stored_policy(row, scope)
        if isinstance(read, list):
            problems += read
        else:
            found[scope] = read
    return found, problems


def stored_problems(
    repo: Repository, assets: Mapping[AssetKind, Mapping[str, Asset]], broken: set[str]
) -> list[Problem]:
    """What is wrong with the stored policies taken together, kind by kind: the loader's checks of a folder's
    policies (every imposed asset a data source of a scope that contains the policy's, one scope of a branch
    rules a field), each with its file and line.  ``assets``: the stored assets the engine reads, by kind and
    name (:func:`..stored.stored_assets`); ``broken``: the names of those it no longer reads."""
    units = OrgUnits.read(repo)
    problems: list[Problem] = []
    for kind in KINDS:
        policies, found = stored_policies(repo, units, kind)
        by_file = org_policy_problems(policies, units.tree, assets, broken, units.cluster_tree)
        problems += found
        for file in sorted(by_file):
            problems += by_file[file]
    return problems


def policies_imposing(repo: Repository, name: str) -> list[tuple[PolicyRow, Scope]]:
    """The stored policies of every kind that impose the data source ``name`` (on any role)."""
    units = OrgUnits.read(repo)
    out: list[tuple[PolicyRow, Scope]] = []
    for row in repo.every_policy():
        imposed: Any = row.document.get("imposedAssets")
        lists = imposed.values() if isinstance(imposed, Mapping) else [imposed]
        if any(isinstance(names, list) and name in names for names in lists):
            scope = units.scopes.get(row.scope_key)
            if scope is not None:
                out.append((row, scope))
    return out
