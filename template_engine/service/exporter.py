"""``db export``: the database as a templates folder plus its bookkeeping, replaced whole or not at all.

The folder is what ``validate`` reads (``org.yaml``, ``cluster.yaml`` or ``clusters/``, ``system/``,
``departments/``, ``projects/``, ``assets/``), with the documents as stored (a policy imported from a file as
that file was written, comments included, so that the lines its rules are named by stay where they were), and
``.template-engine/export.yaml`` (:mod:`.bookkeeping`) for what those files cannot hold. Everything is read in
one consistent transaction, checked, written into a new sibling folder and read back with the importer's own
reader; only then does it replace the managed entries of the target, by renames. A record that could not be
written or read back as stored (a name too long for a file name, a NUL character or lone surrogate in a
text...) stops the export with its name and field, and the previous export is left as it was.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine

from template_engine.errors import InputError, Location, Problem
from template_engine.kinds import DISTRIBUTED, kind_named
from template_engine.loader.layout import asset_file, scope_folder
from template_engine.loader.tree import CLUSTER_FILE
from template_engine.loader.validate import locate
from template_engine.models.documents import ASSET_FOLDERS
from template_engine.org import SYSTEM, Scope
from template_engine.paths import Path as FieldPath
from template_engine.service.bookkeeping import FORMAT, HEADER, META_FILE, META_FOLDER, fingerprint
from template_engine.service.importer import read_folder
from template_engine.service.storage import snapshot
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import transaction
from template_engine.service.storage.repository import (
    CLUSTERS,
    Audit,
    ClusterUnitRow,
    DepartmentRow,
    ProjectRow,
    Repository,
    unstorable,
)
from template_engine.service.stored import kind_document
from template_engine.service.yamltext import dump_yaml
from template_engine.staging import exists, sibling

#: The entries of the target folder an export writes (and ``--overwrite`` replaces); nothing else is touched.
MANAGED = ("org.yaml", "cluster.yaml", "system", "clusters", "departments", "projects", "assets", META_FOLDER)
_READABLE = (
    "text without NUL characters or lone surrogates (U+D800 to U+DFFF), and finite numbers: "
    "change the value through the API, then export again"
)


@dataclass(frozen=True, slots=True)
class _File:
    rel: str
    #: The record, as messages name it.
    label: str
    document: Mapping[str, Any]
    #: The file's text as imported (a policy's, with its comments), written instead of the document's YAML.
    text: str | None = None


@dataclass(frozen=True, slots=True)
class ExportReport:
    counts: Mapping[str, int]
    files: int

    def summary(self) -> str:
        kinds = ("departments", "projects", "defaults", "policies", "assets", "templates", "workloads")
        clusters = ("clusters",) if self.counts.get("clusters") else ()  # said only of an org that has them
        return ", ".join(f"{self.counts.get(k, 0)} {k}" for k in (*clusters, *kinds))


def export_folder(engine: Engine, root: Path, overwrite: bool = False) -> ExportReport:
    """Write the database as a templates folder at ``root``; raises :class:`InputError` (nothing changed)."""
    target = Path(os.path.realpath(root))
    if target.exists() and not target.is_dir():
        raise InputError(
            [Problem(f"{str(root)!r} is not a folder", (), None, "a folder to write the export to")]
        )
    present = [name for name in MANAGED if exists(target / name)]
    if present and not overwrite:
        raise InputError(
            [
                Problem(
                    f"{str(root)!r} already holds {', '.join(present)}",
                    (),
                    None,
                    "an empty or new folder, or --overwrite to replace those",
                )
            ]
        )
    files, problems, counts = _collect(engine)
    if problems:
        raise InputError(problems)
    missing = [folder for folder in target.parents if not folder.exists()]
    try:
        staged = sibling(target, "export")
        try:
            _write(staged, files)
            _verify(staged, files)
            _replace(target, staged)
        finally:
            shutil.rmtree(staged, ignore_errors=True)
    except BaseException:
        for folder in missing:  # the folders above --root that this export created, nearest first
            with suppress(OSError):
                folder.rmdir()
        raise
    return ExportReport(counts, len(files))


# -- what to write ------------------------------------------------------------------------------------------


def _audit(audit: Audit | Mapping[str, Any]) -> dict[str, Any]:
    a = audit if isinstance(audit, Mapping) else {c: getattr(audit, c) for c in snapshot.AUDIT_COLUMNS}
    return {
        "version": a["version"],
        "createdBy": a["created_by"],
        "createdAt": a["created_at"].isoformat(),
        "updatedBy": a["updated_by"],
        "updatedAt": a["updated_at"].isoformat(),
    }


def _collect(engine: Engine) -> tuple[list[_File], list[Problem], dict[str, int]]:
    """Every file of the export, the problems of records that cannot be exported, and the counts."""
    with transaction(engine, write=False, consistent=True) as connection:
        repo = Repository(connection)
        clusters = repo.units(CLUSTERS)
        departments = repo.departments()
        projects = repo.projects()
        all_defaults = repo.all_defaults()
        all_policies = repo.every_policy()
        assets = repo.assets()
        templates = repo.templates()
        cluster = repo.cluster_settings()
        workloads = snapshot.workload_rows(connection)
        sequences = {
            "departments": snapshot.high_water(connection, t.departments),
            "projects": snapshot.high_water(connection, t.projects),
        }
        cluster_counter = snapshot.high_water(connection, t.clusters)
    if cluster_counter:  # said only by a database that has had clusters: the export of others is as before
        sequences["clusters"] = cluster_counter
    names: dict[str, dict[int, str]] = {
        "cluster": {c.id: c.name for c in clusters},
        "department": {d.id: d.name for d in departments},
        "project": {p.id: p.name for p in projects},
    }
    cluster_names, dept_names = names["cluster"], names["department"]
    problems: list[Problem] = []

    def folder(key: str) -> tuple[str, str]:
        """The folder of the scope of ``key`` (``system``, ``clusters/C``...) and the scope as messages say
        it."""
        kind, _, ident = key.partition(":")
        if kind not in names:
            return "system", "system"
        scope = Scope(kind, names[kind][int(ident)])  # type: ignore[arg-type]
        return scope_folder(scope), f"{kind} {scope.name!r}"

    files = [_org_file(clusters, departments, projects, problems)]
    entries: dict[str, dict[str, Any]] = {}
    kept_settings: dict[str, Any] | None = None
    if cluster is not None and clusters:
        # The settings of the org before its first cluster: no file holds them beside ``clusters:``.
        kept_settings = {"document": cluster.document, "text": cluster.text, **_audit(cluster.audit)}
    elif cluster is not None:
        files.append(_File(CLUSTER_FILE, "the cluster settings", cluster.document, cluster.text))
        entries[CLUSTER_FILE] = {"sha256": fingerprint(cluster.document), **_audit(cluster.audit)}
    for unit in clusters:
        if unit.settings is not None:
            rel = f"{scope_folder(Scope('cluster', unit.name))}/{CLUSTER_FILE}"
            label = f"the settings of cluster {unit.name!r}"
            files.append(_File(rel, label, unit.settings, unit.settings_text))
    for row in all_defaults:
        where, scope = folder(row.scope_key)
        files.append(_File(f"{where}/defaults.yaml", f"the defaults of {scope}", row.document))
        entries[files[-1].rel] = {"sha256": fingerprint(row.document), **_audit(row.audit)}
    for policy in all_policies:
        where, scope = folder(policy.scope_key)
        kind = kind_named(policy.kind)  # each kind's policy file: policy.yaml, training-policy.yaml...
        label = f"the policy of {scope}" if kind is DISTRIBUTED else f"the {kind.name} policy of {scope}"
        files.append(_File(f"{where}/{kind.policy_file}", label, policy.document, policy.text))
        entries[files[-1].rel] = {"sha256": fingerprint(policy.document), **_audit(policy.audit)}
    for asset in assets:
        kind_folder = ASSET_FOLDERS.get(asset.kind)  # type: ignore[call-overload]
        label = f"{asset.kind} asset {asset.name!r} ({asset.id})"
        if kind_folder is None:
            problems.append(Problem(f"{label} has an unknown kind", (), None, ", ".join(ASSET_FOLDERS)))
            continue
        owner, level = asset.unit_id, asset.scope_type
        home = SYSTEM if owner is None else Scope(level, names[level][owner])  # type: ignore[arg-type]
        rel = asset_file(asset.kind, asset.name, home)  # type: ignore[arg-type]  # a kind of ASSET_FOLDERS
        files.append(_File(rel, label, asset.document))
        entries[files[-1].rel] = {
            "id": asset.id,
            "sha256": fingerprint(asset.document),
            **_audit(asset.audit),
        }
    for template in templates:
        where, scope = folder(template.scope_key)
        label = f"template {template.name!r} of {scope} ({template.id})"
        document = kind_document(template)  # a file says its kind (a distributed one as it was written)
        files.append(_File(f"{where}/templates/{template.name}.yaml", label, document))
        audit = _audit(template.audit)
        entries[files[-1].rel] = {"id": template.id, "sha256": fingerprint(document), **audit}

    cluster_entries = {f"cluster {c.name!r} ({c.uuid})": _cluster_entry(c) for c in clusters}
    dept_entries = {
        f"department {d.name!r} ({d.id})": {"name": d.name, "id": d.id, "description": d.description}
        | ({"cluster": cluster_names[d.cluster_id]} if d.cluster_id in cluster_names else {})
        | _audit(d.audit)
        for d in departments
    }
    project_entries = {
        f"project {p.name!r} ({p.id})": {
            "name": p.name,
            "id": p.id,
            "department": dept_names[p.department_id],
            "description": p.description,
        }
        | _audit(p.audit)
        for p in projects
    }
    workload_entries = {f"workload {w['name']!r} ({w['id']})": _workload(w) for w in workloads}
    meta: dict[str, Any] = {"format": FORMAT, "schemaVersion": t.SCHEMA_VERSION, "sequences": sequences}
    if cluster_entries:  # said only by an org that has clusters
        meta["clusters"] = list(cluster_entries.values())
    if kept_settings is not None:
        meta["clusterSettings"] = kept_settings
    meta |= {
        "departments": list(dept_entries.values()),
        "projects": list(project_entries.values()),
        "files": {rel: entries[rel] for rel in sorted(entries)},
        "workloads": list(workload_entries.values()),
    }
    records = {**cluster_entries, **dept_entries, **project_entries, **workload_entries}
    if kept_settings is not None:
        records["the cluster settings of the org before its clusters"] = kept_settings
    records |= {f"the audit fields of {rel}": entry for rel, entry in entries.items()}
    for file in files:
        problems += _refused(file.label, file.document, file.rel)
        if file.text is not None:
            problems += _refused(file.label, file.text, file.rel)
    for label, fields in records.items():
        problems += _refused(label, fields, META_FILE)
    files.append(_File(META_FILE, "the bookkeeping of the export", meta))
    counts = {
        "clusters": len(clusters),
        "departments": len(departments),
        "projects": len(projects),
        "defaults": len(all_defaults),
        "policies": len(all_policies),
        "assets": len(assets),
        "templates": len(templates),
        "workloads": len(workloads),
    }
    return files, problems, counts


def _org_file(
    clusters: Sequence[ClusterUnitRow],
    departments: Sequence[DepartmentRow],
    projects: Sequence[ProjectRow],
    problems: list[Problem],
) -> _File:
    """``org.yaml``: the departments and their projects, or in an org that has clusters the clusters (each
    with its Run:ai fields beside its name, as stored) and the departments of each.  A department of no
    cluster in an org that has clusters (which no request makes) is a problem: no folder could hold it."""

    def department(dept: DepartmentRow) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": dept.name}
        if dept.description is not None:
            entry["description"] = dept.description
        entry |= dept.runai or {}  # Run:ai's fields beside the name, as stored
        entry["projects"] = [
            {"name": p.name, **p.runai} if p.runai else p.name for p in projects if p.department_id == dept.id
        ]
        return entry

    if not clusters:
        document = {"departments": [department(d) for d in departments]}
        return _File("org.yaml", "the departments and their projects", document)
    known = {c.id for c in clusters}
    for dept in departments:
        if dept.cluster_id not in known:
            problems.append(
                Problem(
                    f"department {dept.name!r} ({dept.id}) cannot be exported: it belongs to no cluster "
                    "of an org that has clusters",
                    (),
                    Location("org.yaml"),
                    "a department of one of the clusters: give it its clusterId through the API, then export "
                    "again",
                )
            )
    entries = [
        {
            "name": c.name,
            **(c.runai or {}),
            "departments": [department(d) for d in departments if d.cluster_id == c.id],
        }
        for c in clusters
    ]
    return _File("org.yaml", "the clusters, their departments and their projects", {"clusters": entries})


def _cluster_entry(row: ClusterUnitRow) -> dict[str, Any]:
    """The bookkeeping of a cluster (:class:`..bookkeeping.ClusterUnitEntry`)."""
    entry: dict[str, Any] = {
        "name": row.name,
        "id": row.id,
        "uuid": row.uuid,
        "sha256": fingerprint(row.runai or {}),
        "settingsVersion": row.settings_version,
    }
    if row.settings is not None:
        entry["settingsSha256"] = fingerprint(row.settings)
    return entry | _audit(row.audit)


def _workload(row: Mapping[str, Any]) -> dict[str, Any]:
    deleted = row["deleted_at"]
    return {
        "id": row["id"],
        "name": row["name"],
        "requestedName": row["requested_name"],
        "projectId": row["project_id"],
        "departmentId": row["department_id"],
        "clusterId": row["cluster_id"],
        "templateId": row["template_id"],
        "desiredPhase": row["desired_phase"],
        "actualPhase": row["actual_phase"],
        "masterSpecSameAsWorker": row["master_same_as_worker"],
        "spec": row["spec"],
        "masterSpec": row["master_spec"],
        "deletedAt": deleted.isoformat() if deleted is not None else None,
        # Said only when not distributed: an export of distributed workloads reads as before the kinds.
        **({"kind": row["kind"]} if row["kind"] != "distributed" else {}),
        **_audit(row),
    }


def _refused(label: str, value: Any, rel: str) -> list[Problem]:
    """The values of one record that no file would read back (and no database would store) as they are."""
    found = sorted(unstorable(value, True), key=lambda item: str(item[0]))
    return [
        Problem(f"{label} cannot be exported: {reason}", path, Location(rel), _READABLE)
        for path, reason in found
    ]


# -- writing, reading back, replacing -----------------------------------------------------------------------


def _yaml(file: _File) -> str:
    if file.text is not None:
        return file.text
    text = dump_yaml(file.document)
    return HEADER + text if file.rel == META_FILE else text


def _write(staged: Path, files: list[_File]) -> None:
    for file in files:
        path = staged / file.rel
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_yaml(file), encoding="utf-8", newline="\n")
        except OSError as exc:
            expected = (
                "a name that fits in a file name (with '.yaml', at most 255 bytes on most file systems): "
                "rename the record through the API"
                if exc.errno == errno.ENAMETOOLONG
                else None
            )
            raise InputError(
                [Problem(f"cannot write {file.label}: {exc.strerror}", (), Location(file.rel), expected)]
            ) from None


def _verify(staged: Path, files: list[_File]) -> None:
    """Read the written folder back with the importer's reader: every file, and each as it was stored."""
    folder = read_folder(staged)
    problems = []
    for file in files:
        read = folder.sources.get(file.rel)
        if read is None:
            problems.append(
                Problem(f"{file.label} cannot be exported: {file.rel} would not be read back", (), None)
            )
            continue
        if fingerprint(dict(read.data)) != fingerprint(dict(file.document)):
            path = next(_differences(file.document, read.data, ()), ())
            problems.append(
                Problem(
                    f"{file.label} cannot be exported: it would not read back as stored",
                    path,
                    locate(file.rel, read.lines, path),
                    "a value a YAML file gives back unchanged",
                )
            )
    if problems:
        raise InputError(problems)


def _differences(a: Any, b: Any, path: FieldPath) -> Iterator[FieldPath]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if list(a) != list(b):
            yield path
            return
        for key in a:
            yield from _differences(a[key], b[key], (*path, key))
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from _differences(x, y, (*path, index))
    elif fingerprint(a) != fingerprint(b):
        yield path


def _replace(target: Path, staged: Path) -> None:
    """Put the staged entries in place of the target's managed ones, by renames; undone on failure."""
    if not exists(target):
        staged.rename(target)
        return
    previous = sibling(target, "previous")
    moved_out: list[str] = []
    moved_in: list[str] = []
    try:
        for name in MANAGED:
            if exists(target / name):
                (target / name).rename(previous / name)
                moved_out.append(name)
        for name in sorted(p.name for p in staged.iterdir()):
            (staged / name).rename(target / name)
            moved_in.append(name)
    except OSError:
        try:
            for name in reversed(moved_in):
                (target / name).rename(staged / name)
            for name in reversed(moved_out):
                (previous / name).rename(target / name)
        except OSError as undo:
            message = f"{undo.strerror}; the previous export is kept in {previous}"
            raise OSError(undo.errno, message) from undo
        previous.rmdir()
        raise
    shutil.rmtree(previous, ignore_errors=True)
