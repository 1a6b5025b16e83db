"""``db import`` and ``db export``: a templates folder in and out of the database, losslessly.

Import reads the folder with the engine's loader (so it is held to exactly the rules of ``validate``) and
refuses it whole when any file has a problem.  In one transaction it then adds or replaces, by name, the
departments and projects of ``org.yaml``, every defaults file, asset and template; nothing the folder does not
name is removed.  Export writes the database back as a templates folder (``org.yaml``, ``system/``,
``departments/``, ``projects/``, ``assets/``); documents are written as stored, so import -> export -> import
gives the same database and the same files.
"""

from __future__ import annotations

import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import Engine

from template_engine.errors import InputError, Location, Problem
from template_engine.loader.rules import asset_refs
from template_engine.loader.tree import load_org, read_source, reference_problems
from template_engine.loader.validate import validate
from template_engine.models.documents import ASSET_FOLDERS, AssetKind, OrgDocument
from template_engine.org import Org, Scope
from template_engine.service.schemas import NAME_PATTERN
from template_engine.service.storage.database import transaction
from template_engine.service.storage.repository import Repository, scope_key

_MANAGED = ("org.yaml", "system", "departments", "projects", "assets")
_ADVISORY = 7_345_010_418


@dataclass
class Report:
    """What an import did."""

    added: dict[str, int] = field(default_factory=dict)
    replaced: dict[str, int] = field(default_factory=dict)

    def count(self, what: str, added: bool) -> None:
        target = self.added if added else self.replaced
        target[what] = target.get(what, 0) + 1

    def summary(self) -> str:
        kinds = ("departments", "projects", "defaults", "assets", "templates")
        parts = [f"{self.added.get(k, 0)} added, {self.replaced.get(k, 0)} replaced {k}" for k in kinds]
        return "; ".join(parts)


def read_folder(root: Path) -> tuple[Org, OrgDocument]:
    """The org of ``root``; raises :class:`InputError` with every problem of every file."""
    org = load_org(root)
    problems = [p for file in sorted(org.broken) for p in org.broken[file]] + reference_problems(org)
    source, more = read_source(root, "org.yaml")
    doc = None
    if source is not None:
        doc, more = validate(OrgDocument, source.data, "org.yaml", source.lines)
    problems += more
    for name in [*org.departments, *org.projects()]:
        if not re.match(NAME_PATTERN, name) or len(name) > 253:
            problems.append(
                Problem(
                    f"{name!r} cannot be a department or project name of the service",
                    (),
                    Location("org.yaml"),
                    "letters, digits, '.', '_' and '-', starting and ending with a letter or digit",
                )
            )
    if problems or doc is None:
        raise InputError(problems or [Problem("org.yaml cannot be read", (), Location("org.yaml"))])
    return org, doc


def import_folder(
    engine: Engine, root: Path, subject: str = "import", only_if_empty: bool = False
) -> Report | None:
    """Import ``root``; with ``only_if_empty``, only into an empty database (returns ``None`` otherwise)."""
    org, org_doc = read_folder(root)
    report = Report()
    with transaction(engine, write=True) as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_ADVISORY})")
        repo = Repository(connection)
        if only_if_empty and not repo.is_empty():
            return None
        _import(repo, org, org_doc, subject, report)
    return report


def seed_if_empty(engine: Engine, root: Path) -> Report | None:
    return import_folder(engine, root, subject="seed", only_if_empty=True)


def _import(repo: Repository, org: Org, org_doc: OrgDocument, subject: str, report: Report) -> None:
    departments: dict[str, int] = {}
    for dept in org_doc.departments:
        found = repo.department_named(dept.name)
        if found is None:
            departments[dept.name] = repo.add_department(dept.name, dept.description, subject)
        else:
            departments[dept.name] = found.id
            if found.description != dept.description:
                repo.update_department(found.id, found.audit.version, dept.name, dept.description, subject)
        report.count("departments", found is None)
    projects: dict[str, int] = {}
    for dept in org_doc.departments:
        for name in dept.projects:
            project = repo.project_named(name)
            if project is None:
                projects[name] = repo.add_project(name, None, departments[dept.name], subject)
            elif project.department_id != departments[dept.name]:
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
                projects[name] = project.id
            report.count("projects", project is None)

    def place(scope: Scope) -> tuple[str, int | None, int | None]:
        if scope.type == "department" and scope.name is not None:
            return scope_key("department", departments[scope.name]), departments[scope.name], None
        if scope.type == "project" and scope.name is not None:
            return scope_key("project", projects[scope.name]), None, projects[scope.name]
        return "system", None, None

    for scope, entry in org.defaults.items():
        key, dept_id, project_id = place(scope)
        current = repo.defaults([key]).get(key)
        data = dict(entry.source.data)
        repo.put_defaults(key, data, current.audit.version if current else None, subject, dept_id, project_id)
        report.count("defaults", current is None)

    asset_ids: dict[tuple[str, str], str] = {}
    for kind, assets in org.assets.items():
        for name, asset in assets.items():
            data = dict(asset.source.data)
            stored = repo.assets_named([(kind, name)]).get((kind, name))
            new_id = str(uuid.uuid4()) if stored is None else stored.id
            if stored is None:
                repo.add_asset(new_id, kind, name, data, subject)
            else:
                repo.update_asset(new_id, stored.audit.version, name, data, subject)
            asset_ids[(kind, name)] = new_id
            report.count("assets", stored is None)

    for scope, by_name in org.templates.items():
        key, dept_id, project_id = place(scope)
        for name, template in by_name.items():
            data = dict(template.source.data)
            existing = repo.template_named(key, name)
            if existing is None:
                template_id = str(uuid.uuid4())
                repo.add_template(template_id, scope.type, dept_id or project_id, data, subject)
            else:
                template_id = existing.id
                repo.update_template(template_id, existing.audit.version, data, subject)
            refs = [asset_ids.get((k, n)) or _asset_id(repo, k, n) for k, n, _ in asset_refs(template.doc)]
            repo.set_template_assets(template_id, refs)
            report.count("templates", existing is None)


def _asset_id(repo: Repository, kind: AssetKind, name: str) -> str:
    found = repo.assets_named([(kind, name)]).get((kind, name))
    if found is None:  # reference_problems made this impossible
        raise InputError([Problem(f"unknown {kind} asset {name!r}")])
    return found.id


# -- export -------------------------------------------------------------------------------------------------


def _dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    path.write_text(text, encoding="utf-8")


def export_folder(engine: Engine, root: Path, overwrite: bool = False) -> int:
    """Write the database as a templates folder at ``root``; returns the number of files written."""
    present = [name for name in _MANAGED if (root / name).exists()]
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
    with transaction(engine, write=False) as connection:
        repo = Repository(connection)
        departments = repo.departments()
        projects = repo.projects()
        all_defaults = repo.all_defaults()
        assets = repo.assets()
        templates = repo.templates()
    for name in present:
        target = root / name
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink()
    dept_names = {d.id: d.name for d in departments}
    project_names = {p.id: p.name for p in projects}
    org_yaml: list[dict[str, Any]] = []
    for dept in departments:
        entry: dict[str, Any] = {"name": dept.name}
        if dept.description is not None:
            entry["description"] = dept.description
        entry["projects"] = [p.name for p in projects if p.department_id == dept.id]
        org_yaml.append(entry)
    _dump(root / "org.yaml", {"departments": org_yaml})
    written = 1

    def folder(key: str) -> str:
        kind, _, ident = key.partition(":")
        if kind == "department":
            return f"departments/{dept_names[int(ident)]}"
        if kind == "project":
            return f"projects/{project_names[int(ident)]}"
        return "system"

    for row in all_defaults:
        _dump(root / folder(row.scope_key) / "defaults.yaml", row.document)
        written += 1
    for asset in assets:
        _dump(root / "assets" / ASSET_FOLDERS[asset.kind] / f"{asset.name}.yaml", asset.document)  # type: ignore[index]
        written += 1
    for template in templates:
        _dump(root / folder(template.scope_key) / "templates" / f"{template.name}.yaml", template.document)
        written += 1
    return written
