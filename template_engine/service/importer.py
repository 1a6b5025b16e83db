"""``db import`` and ``serve --seed``: a templates folder into the database, refused whole or taken whole.

The folder is read with the engine's loader (so it is held to exactly the rules of ``validate``), and every
value is checked to be one that every supported database stores as given (no NUL character or lone
surrogate in any text, descriptions that fit their column); a folder with any problem is refused before the
database is touched, with each problem's file, field and what is expected.

The import is one transaction. Into an empty database, a folder written by ``db export`` (one with
``.template-engine/export.yaml``, see :mod:`.bookkeeping`) is restored as it was exported: the same ids (and
clusters' UUIDs), versions, audit fields, project descriptions, id counters and workloads. Otherwise
clusters, departments, projects, defaults, policies, assets and templates are added or replaced by name, with
ids of the database's choosing, and nothing the folder does not name is removed (an export's workloads, which
belong to the ids of the database they were exported from, are then not imported: the report says so).

A folder that names clusters puts each department in its cluster and each document of ``clusters/C/`` at
cluster C's scope (``cluster:<id>``); the first cluster of a database that had none adopts every department
and the org's cluster settings, as ``POST /api/v1/clusters`` does (:func:`.clusters.adopt_org`).  A folder
that names none adds no department to a database that has clusters (the department would belong to none).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table

from template_engine.errors import InputError, Location, Problem
from template_engine.kinds import DISTRIBUTED
from template_engine.loader.sources import FolderSource
from template_engine.loader.tree import department_entries, load_org, read_source, reference_problems
from template_engine.loader.validate import locate, validate
from template_engine.loader.values import quantities_as_text
from template_engine.models.documents import AssetKind, OrgCluster, OrgDepartment, OrgDocument, asset_refs
from template_engine.org import Org, Scope, Source, Template
from template_engine.paths import Path as FieldPath
from template_engine.service.bookkeeping import META_FILE, Audited, ExportMeta, fingerprint, read_meta
from template_engine.service.clusters import adopt_org
from template_engine.service.policy_store import stored_problems
from template_engine.service.schemas import NAME_PATTERN, NAME_RULE
from template_engine.service.storage import snapshot
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import transaction
from template_engine.service.storage.repository import (
    CLUSTERS,
    DEPARTMENTS,
    PROJECTS,
    Repository,
    Unstorable,
    scope_columns,
    scope_key,
    unstorable,
)
from template_engine.service.stored import stored_assets
from template_engine.service.yamltext import dump_yaml

_ADVISORY = 7_345_010_418
#: The width of the description columns.
_DESCRIPTION = 250
#: The report's name for ``cluster.yaml``'s settings.
_CLUSTER = "cluster settings"
_STORABLE = "text without NUL characters or lone surrogates (U+D800 to U+DFFF), and finite numbers"


@dataclass(frozen=True)
class Folder:
    """A templates folder, read and checked: its documents, and the bookkeeping of an export if it has one."""

    root: Path
    org: Org
    doc: OrgDocument
    meta: ExportMeta | None
    #: Every file read, by its path relative to ``root``: org.yaml, the documents and the bookkeeping.
    sources: Mapping[str, Source]
    #: The text of each policy file, by its path (stored with the policy: its comments and lines are kept).
    texts: Mapping[str, str] = field(default_factory=dict)


@dataclass
class Report:
    """What an import did."""

    added: dict[str, int] = field(default_factory=dict)
    replaced: dict[str, int] = field(default_factory=dict)
    #: The folder's workloads (``None`` when the folder has no bookkeeping).
    workloads: int | None = None
    #: Restored from the bookkeeping, ids and audit fields included (into an empty database).
    restored: bool = False
    #: Documents edited since they were exported: restored with the next version.
    edited: int = 0

    def count(self, what: str, added: bool) -> None:
        target = self.added if added else self.replaced
        target[what] = target.get(what, 0) + 1

    def summary(self) -> str:
        kinds: tuple[str, ...] = ("departments", "projects", "defaults", "policies", "assets", "templates")
        if self.added.get("clusters") or self.replaced.get("clusters"):  # said only of an org that has them
            kinds = ("clusters", *kinds)
        parts = [f"{self.added.get(k, 0)} added, {self.replaced.get(k, 0)} replaced {k}" for k in kinds]
        added, replaced = self.added.get(_CLUSTER, 0), self.replaced.get(_CLUSTER, 0)
        if added + replaced == 1:
            parts.append(f"cluster settings {'added' if added else 'replaced'}")
        elif added + replaced > 1:
            parts.append(f"{added} added, {replaced} replaced cluster settings")
        text = "; ".join(parts)
        if self.workloads is None:
            return text
        if not self.restored:
            return (
                f"{text}; matched by name, as the database was not empty: the ids are this database's and "
                f"the export's {self.workloads} workloads were not imported"
            )
        edited = f"; {self.edited} edited since the export got a new version" if self.edited else ""
        return f"{text}; {self.workloads} added workloads; ids, versions and audit fields restored{edited}"


# -- reading ------------------------------------------------------------------------------------------------


def read_folder(root: Path) -> Folder:
    """The folder at ``root``; raises :class:`InputError` with every problem of every file."""
    files = FolderSource(root)  # the loader's own source: every file is read the way `validate` reads it
    org = load_org(files)
    problems = [p for file in sorted(org.broken) for p in org.broken[file]] + reference_problems(org)
    source, more = read_source(files, "org.yaml")
    doc = None
    if source is not None:
        doc, more = validate(OrgDocument, source.data, "org.yaml", source.lines)
    problems += more
    for name in [*org.clusters, *org.departments, *org.projects()]:
        if not re.fullmatch(NAME_PATTERN, name):  # the pattern bounds the length too
            problems.append(
                Problem(
                    f"{name!r} cannot be a cluster, department or project name of the service",
                    (),
                    Location("org.yaml"),
                    NAME_RULE,
                )
            )
    sources = {s.file: s for s in _documents(org)}
    texts: dict[str, str] = {}
    for policy in [*org.policies.values(), *org.kind_policies.values()]:
        read, more = read_source(files, policy.file)
        problems += more
        raw = files.read(policy.file)
        if read is not None and isinstance(raw, bytes):
            sources[read.file] = read
            texts[read.file] = raw.decode("utf-8")
    settings = [org.cluster_source, *(entry.source for entry in org.clusters.values())]
    for cluster in settings:  # each cluster.yaml, kept with its text as a policy file is
        if cluster is None:
            continue
        sources[cluster.file] = cluster
        raw = files.read(cluster.file)
        if isinstance(raw, bytes):
            texts[cluster.file] = raw.decode("utf-8")
    if source is not None:
        sources["org.yaml"] = source
        problems += _long_descriptions(source, doc)
    meta, meta_source, more = read_meta(root)
    problems += more
    if meta_source is not None:
        sources[META_FILE] = meta_source
    for read in sources.values():
        problems += _unstorable(read)
    if problems or doc is None:
        raise InputError(problems or [Problem("org.yaml cannot be read", (), Location("org.yaml"))])
    return Folder(root, org, doc, meta, sources, texts)


def _documents(org: Org) -> Iterator[Source]:
    yield from (entry.source for entry in org.defaults.values())
    yield from (a.source for by_name in org.assets.values() for a in by_name.values())
    yield from (tpl.source for by_name in org.templates.values() for tpl in by_name.values())


def _unstorable(source: Source) -> list[Problem]:
    return [
        Problem(
            f"{reason}: no database stores it as given",
            path,
            locate(source.file, source.lines, path),
            _STORABLE,
        )
        for path, reason in sorted(unstorable(source.data, True), key=lambda found: str(found[0]))
    ]


def _long_descriptions(source: Source, doc: OrgDocument | None) -> list[Problem]:
    """The descriptions of departments and clusters longer than the database keeps."""
    if doc is None:
        return []
    problems = []
    described = [(at, dept.description) for at, dept in department_entries(doc)]
    described += [(("clusters", index), c.description) for index, c in enumerate(doc.clusters or ())]
    for at, description in described:
        if description is not None and len(description) > _DESCRIPTION:
            path = (*at, "description")
            problems.append(
                Problem(
                    f"description of {len(description)} characters is longer than the database keeps",
                    path,
                    locate("org.yaml", source.lines, path),
                    f"at most {_DESCRIPTION} characters",
                )
            )
    return problems


# -- importing ----------------------------------------------------------------------------------------------


def import_folder(
    engine: Engine, folder: Path | Folder, subject: str = "import", only_if_empty: bool = False
) -> Report | None:
    """Import ``folder`` (a path is read first); with ``only_if_empty``, only into an empty database (returns
    ``None`` otherwise).  One transaction: on any error nothing is written."""
    read = folder if isinstance(folder, Folder) else read_folder(folder)
    report = Report(workloads=None if read.meta is None else len(read.meta.workloads))
    try:
        with transaction(engine, write=True) as connection:
            if connection.dialect.name == "postgresql":
                connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY})")
            repo = Repository(connection)
            if only_if_empty and not repo.is_empty():
                return None
            restore = read.meta if read.meta is not None and snapshot.is_blank(connection) else None
            report.restored = restore is not None
            _Import(repo, read, subject, report, restore).run()
    except Unstorable as exc:  # read_folder refuses these first; this is the repository's own guard
        raise InputError(
            [
                Problem(
                    f"{exc.column}: {exc.reason}: no database stores it as given", exc.path, None, _STORABLE
                )
            ]
        ) from None
    return report


def seed_if_empty(engine: Engine, root: Path) -> Report | None:
    return import_folder(engine, root, subject="seed", only_if_empty=True)


class _Import:
    """One import, in one transaction; ``meta`` is the bookkeeping to restore (an empty database only)."""

    def __init__(
        self, repo: Repository, folder: Folder, subject: str, report: Report, meta: ExportMeta | None
    ) -> None:
        self.repo = repo
        self.folder = folder
        self.subject = subject
        self.report = report
        self.meta = meta
        self.now = t.now()
        self.clusters: dict[str, int] = {}
        self.departments: dict[str, int] = {}
        self.projects: dict[str, int] = {}
        #: The clusters whose settings were restored with their row (not written again).
        self.restored_settings: set[str] = set()

    def run(self) -> None:
        if self.meta is not None:
            self.restore_clusters(self.meta)
            self.restore_org_units(self.meta)
        else:
            self.merge_clusters()
            self.merge_org_units()
        self.put_cluster()
        self.put_cluster_units()
        self.put_defaults()
        self.put_policies()
        asset_ids = self.put_assets()
        self.put_templates(asset_ids)
        # The folder's policies were checked with the folder; with the database's they may not hold together
        # (an imposed data source the folder does not have, a field two scopes of a branch rule).
        problems = stored_problems(self.repo, *stored_assets(self.repo))
        if problems:
            raise InputError(problems)
        if self.meta is not None:
            self.restore_workloads(self.meta)

    # -- audit fields ---------------------------------------------------------------------------------------

    def stamp(self, kept: Audited, edited: bool) -> dict[str, Any]:
        """The audit columns of a restored row: as exported, or the next version when edited since."""
        if edited:
            self.report.edited += 1
            values: tuple[Any, ...] = (
                kept.version + 1,
                kept.createdBy,
                kept.createdAt,
                self.subject,
                self.now,
            )
        else:
            values = (kept.version, kept.createdBy, kept.createdAt, kept.updatedBy, kept.updatedAt)
        return dict(zip(snapshot.AUDIT_COLUMNS, values, strict=True))

    def kept(self, source: Source) -> tuple[Any, dict[str, Any]] | None:
        """The exported id (``None`` for defaults) and audit columns of a document file, if it has them."""
        entry = self.meta.files.get(source.file) if self.meta is not None else None
        if entry is None:
            return None
        return entry.id, self.stamp(entry, fingerprint(dict(source.data)) != entry.sha256)

    def restamp(self, table: Table, key: Any, kept: tuple[Any, dict[str, Any]] | None) -> None:
        if kept is not None:
            snapshot.set_audit(self.repo.connection, table, key, kept[1])

    # -- clusters -------------------------------------------------------------------------------------------

    def settings_of(self, name: str) -> tuple[dict[str, Any] | None, str | None]:
        """The document of cluster ``name``'s ``cluster.yaml`` (``None``: the folder has none) and its text
        when an export would not write that text."""
        source = self.folder.org.clusters[name].source
        if source is None:
            return None, None
        data = dict(source.data)
        text = self.folder.texts.get(source.file)
        return data, text if text is not None and text != dump_yaml(data) else None

    def restore_clusters(self, meta: ExportMeta) -> None:
        """Into an empty database: each exported cluster with its id, UUID, audit fields and settings as
        exported (the next version of what was edited since: its fields in org.yaml, its cluster.yaml), then
        the counter, then the folder's new clusters."""
        added = []
        for cluster in self.folder.doc.clusters or ():
            entry = meta.cluster(cluster.name)
            if entry is None:
                added.append(cluster)
                continue
            runai = cluster.runai()
            settings, text = self.settings_of(cluster.name)
            settings_version = entry.settingsVersion
            found = fingerprint(settings) if settings is not None else None
            audit = self.stamp(entry, fingerprint(runai) != entry.sha256)
            if found != entry.settingsSha256:  # as a write of the settings: their version on, the row stamped
                self.report.edited += 1
                settings_version += 1
                audit |= {"updated_by": self.subject, "updated_at": self.now}
            row: dict[str, Any] = {"id": entry.id, "uuid": entry.uuid, "name": cluster.name, **audit}
            row |= {"runai": runai or None, "settings_text": text, "settings_version": settings_version}
            if settings is not None:  # none stored is the column's NULL, as a new cluster has
                row["settings"] = settings
            snapshot.insert_rows(self.repo.connection, t.clusters, [row])
            self.clusters[cluster.name] = entry.id
            self.restored_settings.add(cluster.name)
            self.report.count("clusters", True)
            if settings is not None:
                self.report.count(_CLUSTER, True)
        snapshot.raise_high_water(self.repo.connection, t.clusters, meta.sequences.clusters)
        for cluster in added:
            self.add_cluster(cluster)
        kept = meta.clusterSettings
        if kept is not None and self.folder.doc.clusters is not None:
            # the org's settings of before its first cluster, which no file of a folder with clusters holds
            self.repo.put_cluster_settings(kept.document, kept.text, None, self.subject)
            snapshot.set_audit(self.repo.connection, t.cluster_settings, 1, self.stamp(kept, False))

    def add_cluster(self, cluster: OrgCluster) -> None:
        """A new cluster, with a new UUID; the first of a database that had none adopts every department and
        the org's cluster settings, as ``POST /api/v1/clusters`` does."""
        first = not self.repo.units(CLUSTERS)
        cluster_id = self.repo.add_cluster(str(uuid.uuid4()), cluster.name, cluster.runai(), self.subject)
        if first:
            adopt_org(self.repo, cluster_id, self.subject)
        self.clusters[cluster.name] = cluster_id
        self.report.count("clusters", True)

    def merge_clusters(self) -> None:
        """Add the folder's clusters by name, or update their fields beside the name when they changed."""
        for cluster in self.folder.doc.clusters or ():
            found = self.repo.unit_named(CLUSTERS, cluster.name)
            if found is None:
                self.add_cluster(cluster)
                continue
            self.clusters[cluster.name] = found.id
            if (found.runai or {}) != cluster.runai():
                version = found.audit.version
                self.repo.update_unit(
                    CLUSTERS, found.id, version, found.name, None, self.subject, cluster.runai()
                )
            self.report.count("clusters", False)

    def put_cluster_units(self) -> None:
        """Each cluster's ``cluster.yaml``, when the folder has one (as :meth:`put_cluster`)."""
        for name, cluster_id in self.clusters.items():
            settings, text = self.settings_of(name)
            if settings is None or name in self.restored_settings:
                continue
            row = self.repo.unit(CLUSTERS, cluster_id)
            assert row is not None
            self.repo.put_cluster_unit_settings(
                cluster_id, settings, text, row.settings_version, self.subject
            )
            self.report.count(_CLUSTER, row.settings is None)

    # -- departments and projects ---------------------------------------------------------------------------

    def folder_departments(self) -> list[tuple[FieldPath, OrgDepartment, str | None]]:
        """Every department of org.yaml with its path there and its cluster's name (``None``: an org that
        names no clusters)."""
        of = {d.name: c.name for c in self.folder.doc.clusters or () for d in c.departments}
        return [(at, dept, of.get(dept.name)) for at, dept in department_entries(self.folder.doc)]

    def restore_org_units(self, meta: ExportMeta) -> None:
        """Into an empty database: the exported ids and audit fields, then the counters, then new names."""
        connection = self.repo.connection
        new_departments = []
        for _, dept, cluster in self.folder_departments():
            entry = meta.department(dept.name)
            if entry is None:
                new_departments.append((dept, cluster))
                continue
            edited = entry.description != dept.description or entry.cluster != cluster
            audit = self.stamp(entry, edited)
            row = {"id": entry.id, "name": dept.name, "description": dept.description, **audit}
            row["runai"] = dept.runai() or None
            row["cluster_id"] = self.clusters[cluster] if cluster is not None else None
            snapshot.insert_rows(connection, t.departments, [row])
            self.departments[dept.name] = entry.id
            self.report.count("departments", True)
        snapshot.raise_high_water(connection, t.departments, meta.sequences.departments)
        for dept, cluster in new_departments:
            self.departments[dept.name] = self.repo.add_unit(
                DEPARTMENTS, dept.name, dept.description, self.subject, dept.runai(), self.cluster_id(cluster)
            )
            self.report.count("departments", True)
        new_projects = []
        for dept in (dept for _, dept, _ in self.folder_departments()):
            for unit in dept.projects:
                name = unit.name
                project = meta.project(name)
                if project is None:
                    new_projects.append((unit, dept.name))
                    continue
                audit = self.stamp(project, project.department != dept.name)
                department_id = self.departments[dept.name]
                values = {"description": project.description, "department_id": department_id}
                row = {"id": project.id, "name": name, **values, **audit, "runai": unit.runai() or None}
                snapshot.insert_rows(connection, t.projects, [row])
                self.projects[name] = project.id
                self.report.count("projects", True)
        snapshot.raise_high_water(connection, t.projects, meta.sequences.projects)
        for unit, department in new_projects:
            project_id = self.repo.add_unit(
                PROJECTS, unit.name, None, self.subject, unit.runai(), self.departments[department]
            )
            self.projects[unit.name] = project_id
            self.report.count("projects", True)

    def cluster_id(self, cluster: str | None) -> int | None:
        return self.clusters[cluster] if cluster is not None else None

    def merge_org_units(self) -> None:
        """Add or update by name; a department goes to its cluster (moved there when it was in another); a
        project keeps its department (moving one is refused)."""
        repo, subject = self.repo, self.subject
        described = self.folder.meta
        for at, dept, cluster in self.folder_departments():
            found = repo.unit_named(DEPARTMENTS, dept.name)
            cluster_id = self.cluster_id(cluster)
            if found is None:
                if cluster_id is None:
                    self.refuse_outside_clusters(at, dept.name)
                self.departments[dept.name] = repo.add_unit(
                    DEPARTMENTS, dept.name, dept.description, subject, dept.runai(), cluster_id
                )
            else:
                self.departments[dept.name] = found.id
                moved = cluster_id is not None and found.cluster_id != cluster_id
                if moved or found.description != dept.description or (found.runai or {}) != dept.runai():
                    repo.update_unit(
                        DEPARTMENTS,
                        found.id,
                        found.audit.version,
                        dept.name,
                        dept.description,
                        subject,
                        dept.runai(),
                        cluster_id if moved else None,
                    )
            self.report.count("departments", found is None)
        for dept in (dept for _, dept, _ in self.folder_departments()):
            for unit in dept.projects:
                name = unit.name
                entry = described.project(name) if described is not None else None
                description = entry.description if entry is not None else None
                project = repo.unit_named(PROJECTS, name)
                if project is None:
                    department_id = self.departments[dept.name]
                    self.projects[name] = repo.add_unit(
                        PROJECTS, name, description, subject, unit.runai(), department_id
                    )
                elif project.department_id != self.departments[dept.name]:
                    raise InputError(
                        [
                            Problem(
                                f"project {name!r} belongs to another department in the database",
                                (),
                                Location("org.yaml"),
                            )
                        ]
                    )
                else:
                    self.projects[name] = project.id
                    changed = entry is not None and project.description != description
                    if changed or (project.runai or {}) != unit.runai():
                        kept = description if entry is not None else project.description
                        repo.update_unit(
                            PROJECTS, project.id, project.audit.version, name, kept, subject, unit.runai()
                        )
                self.report.count("projects", project is None)

    def refuse_outside_clusters(self, at: FieldPath, name: str) -> None:
        """A new department of a folder that names no clusters, into a database that has some: it would
        belong to none of them (as ``POST .../departments`` without ``clusterId`` is refused there)."""
        clusters = [row.name for row in self.repo.units(CLUSTERS)]
        if not clusters:
            return
        source = self.folder.sources["org.yaml"]
        raise InputError(
            [
                Problem(
                    f"department {name!r} would belong to no cluster: the database's org has clusters "
                    f"({', '.join(clusters)})",
                    at,
                    locate("org.yaml", source.lines, at),
                    "org.yaml naming the clusters and the departments of each: "
                    "clusters: [{name, departments}]",
                )
            ]
        )

    def place(self, scope: Scope) -> tuple[str, int | None]:
        """The scope key of ``scope`` (``system``, ``cluster:<id>``...) and its unit's id (``None``: the
        system)."""
        units = {"cluster": self.clusters, "department": self.departments, "project": self.projects}
        if scope.name is None or scope.type not in units:
            return "system", None
        unit_id = units[scope.type][scope.name]
        return scope_key(scope.type, unit_id), unit_id

    def columns(self, scope: Scope) -> dict[str, int | None]:
        """The unit columns of a document of ``scope``."""
        return scope_columns(scope.type, self.place(scope)[1])

    def asset_place(self, scope: Scope) -> tuple[str, int | None]:
        """The asset columns of ``scope`` (the folder an asset file is in): ``tenant`` for the system's."""
        return ("tenant" if scope.type == "system" else scope.type), self.place(scope)[1]

    # -- documents ------------------------------------------------------------------------------------------

    def put_cluster(self) -> None:
        """``cluster.yaml``, when the folder has one (a folder without leaves the stored settings as they are,
        as it leaves a department it does not name)."""
        source = self.folder.org.cluster_source
        if source is None:
            return
        current = self.repo.cluster_settings()
        data = dict(source.data)
        text = self.folder.texts.get(source.file)
        kept_text = text if text is not None and text != dump_yaml(data) else None
        version = current.audit.version if current is not None else None
        self.repo.put_cluster_settings(data, kept_text, version, self.subject)
        self.restamp(t.cluster_settings, 1, self.kept(source))
        self.report.count(_CLUSTER, current is None)

    def put_defaults(self) -> None:
        for scope, entry in self.folder.org.defaults.items():
            key, _ = self.place(scope)
            current, version = self.repo.defaults_at(key)
            data = quantities_as_text(dict(entry.source.data))
            self.repo.put_defaults(key, data, version, self.subject, **self.columns(scope))
            self.restamp(t.defaults, key, self.kept(entry.source))
            self.report.count("defaults", current is None)

    def put_policies(self) -> None:
        """Each scope's policy document of every kind (``policy.yaml``, ``training-policy.yaml``...), with the
        file's text when an export would not write that text."""
        org = self.folder.org
        every: list[tuple[Scope, str, Any]] = [(s, DISTRIBUTED.name, p) for s, p in org.policies.items()]
        every += [(scope, kind, p) for (scope, kind), p in org.kind_policies.items()]
        for scope, kind, policy in every:
            key, _ = self.place(scope)
            current, version = self.repo.policy_at(key, kind=kind)
            data = dict(self.folder.sources[policy.file].data)
            text = self.folder.texts.get(policy.file)
            kept_text = text if text is not None and text != dump_yaml(data) else None
            columns = self.columns(scope)
            self.repo.put_policy(key, data, kept_text, version, self.subject, kind=kind, **columns)
            table, row = (t.policies, key) if kind == DISTRIBUTED.name else (t.kind_policies, (key, kind))
            self.restamp(table, row, self.kept(self.folder.sources[policy.file]))
            self.report.count("policies", current is None)

    def put_assets(self) -> dict[tuple[str, str], str]:
        asset_ids: dict[tuple[str, str], str] = {}
        for kind, assets in self.folder.org.assets.items():
            for name, asset in assets.items():
                data = quantities_as_text(dict(asset.source.data))
                stored = self.repo.assets_named([(kind, name)]).get((kind, name))
                kept = self.kept(asset.source)
                if stored is None:
                    asset_id = str(kept[0] if kept is not None and kept[0] else uuid.uuid4())
                    self.repo.add_asset(asset_id, kind, name, data, self.subject)
                    self.restamp(t.assets, asset_id, kept)
                else:
                    asset_id = stored.id
                    self.repo.update_asset(asset_id, stored.audit.version, name, data, self.subject)
                self.repo.set_asset_scope(asset_id, *self.asset_place(asset.scope))
                asset_ids[(kind, name)] = asset_id
                self.report.count("assets", stored is None)
        return asset_ids

    def put_templates(self, asset_ids: dict[tuple[str, str], str]) -> None:
        for scope, by_name in self.folder.org.templates.items():
            key, unit = self.place(scope)
            for name, template in by_name.items():
                data = _stored_template(template)
                kind = template.kind.name
                existing = self.repo.template_named(key, name)
                kept = self.kept(template.source)
                if existing is None:
                    template_id = str(kept[0] if kept is not None and kept[0] else uuid.uuid4())
                    self.repo.add_template(template_id, scope.type, unit, data, self.subject, kind)
                    self.restamp(t.templates, template_id, kept)
                else:
                    template_id = existing.id
                    version = existing.audit.version
                    self.repo.update_template(template_id, version, data, self.subject, kind)
                refs = [
                    asset_ids.get((k, n)) or _asset_id(self.repo, k, n)
                    for k, n, _ in asset_refs(template.doc)
                ]
                self.repo.set_template_assets(template_id, refs)
                self.report.count("templates", existing is None)

    def restore_workloads(self, meta: ExportMeta) -> None:
        rows = [
            {
                "id": w.id,
                "name": w.name,
                "requested_name": w.requestedName,
                "project_id": w.projectId,
                "department_id": w.departmentId,
                "cluster_id": w.clusterId,
                "template_id": w.templateId,
                "desired_phase": w.desiredPhase,
                "actual_phase": w.actualPhase,
                "master_same_as_worker": w.masterSpecSameAsWorker,
                "spec": w.spec,
                "master_spec": w.masterSpec,
                "deleted_at": w.deletedAt,
                "kind": w.kind,
                **self.stamp(w, edited=False),
            }
            for w in meta.workloads
        ]
        snapshot.insert_rows(self.repo.connection, t.workloads, rows)


def _stored_template(template: Template) -> dict[str, Any]:
    """The document the database keeps of a template file: as written, but a kind other than distributed,
    which ``templates.kind`` keeps (the API's bodies never say it; ``db export`` writes it back)."""
    data: dict[str, Any] = quantities_as_text(dict(template.source.data))
    if template.kind is not DISTRIBUTED:
        data.pop("kind", None)
    return data


def _asset_id(repo: Repository, kind: AssetKind, name: str) -> str:
    found = repo.assets_named([(kind, name)]).get((kind, name))
    if found is None:  # reference_problems made this impossible
        raise InputError([Problem(f"unknown {kind} asset {name!r}")])
    return found.id
