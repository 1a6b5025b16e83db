"""Asset scopes between the folder and the database: ``db import`` writes an asset's scope columns from its
folder, ``db export`` writes each asset back into its scope's folder, and every door (a folder's files,
``validate``, ``db import``, the API's template create and update, a policy write) refuses an asset used
outside its scope with the core's one message (``template_engine.org.out_of_scope``); a department or
project that still has assets is not deleted (409 naming them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from conftest import Ids, MakeApp, open_client
from sqlalchemy import select

from template_engine.cli import main
from template_engine.errors import InputError, Problem
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org, reference_problems
from template_engine.paths import format_path
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import create_db_engine, ensure_schema

ORG = "departments:\n- name: research\n  projects: [vision, nlp]\n"
SPEC = "spec:\n  image: python:3.11\n  distributedFramework: PyTorch\n  numWorkers: 2\n"
TEMPLATES = "/api/v1/workload-templates/distributed"


def datasource(name: str) -> str:
    return (
        f"meta:\n  name: {name}\nspec:\n  storage:\n    pvc:\n    - claimName: {name}\n      path: /{name}\n"
    )


def template(name: str, uses: str) -> str:
    return f"meta:\n  name: {name}\nassets:\n  datasources:\n  - name: {uses}\n{SPEC}"


#: A tenant, a department and a project data source, each used where it may be.
SCOPED = {
    "org.yaml": ORG,
    "assets/datasources/shared.yaml": datasource("shared"),
    "departments/research/assets/datasources/corpus.yaml": datasource("corpus"),
    "projects/vision/assets/datasources/scratch.yaml": datasource("scratch"),
    "departments/research/templates/dept.yaml": template("dept", "corpus"),
    "projects/vision/templates/job.yaml": template("job", "scratch"),
    "projects/nlp/templates/nlp-job.yaml": template("nlp-job", "shared"),
}


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def documents(root: Path) -> dict[str, Any]:
    """Every YAML document of a folder but its bookkeeping, parsed, by path."""
    return {
        p.relative_to(root).as_posix(): yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in sorted(root.rglob("*.yaml"))
        if ".template-engine" not in p.parts
    }


def test_import_writes_the_scope_columns_and_export_writes_each_asset_into_its_scope(tmp_path: Path) -> None:
    folder = write(tmp_path / "in", SCOPED)
    engine = create_db_engine(f"sqlite:///{tmp_path / 'db.sqlite'}")
    ensure_schema(engine)
    import_folder(engine, folder)
    with engine.connect() as connection:
        departments = {r.id: r.name for r in connection.execute(select(t.departments))}
        projects = {r.id: r.name for r in connection.execute(select(t.projects))}
        rows = connection.execute(select(t.assets)).all()
    placed = {
        r.name: (r.scope_type, departments.get(r.department_id), projects.get(r.project_id)) for r in rows
    }
    assert placed == {
        "shared": ("tenant", None, None),
        "corpus": ("department", "research", None),
        "scratch": ("project", None, "vision"),
    }
    out = tmp_path / "out"
    export_folder(engine, out)
    exported = documents(out)
    assert {rel: doc for rel, doc in exported.items() if "assets/" in rel} == {
        rel: yaml.safe_load(text) for rel, text in SCOPED.items() if "assets/" in rel
    }
    # The export reads back as the same org: importing it again and exporting gives the same files.
    again = create_db_engine(f"sqlite:///{tmp_path / 'again.sqlite'}")
    ensure_schema(again)
    import_folder(again, out)
    export_folder(again, tmp_path / "again")
    assert documents(tmp_path / "again") == exported
    org = load_org(out)
    assert not org.broken and reference_problems(org) == []
    assert str(org.assets["datasource"]["scratch"].scope) == "project vision"
    engine.dispose()
    again.dispose()


# -- one message at every door -------------------------------------------------------------------------------

OUT_OF_SCOPE = {**SCOPED, "projects/nlp/templates/nlp-job.yaml": template("nlp-job", "scratch")}
FILE = "projects/vision/assets/datasources/scratch.yaml"


def _said(problems: list[Problem] | list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """(field, message with the asset's file left out, expected) of each out-of-scope problem."""
    out = set()
    for p in problems:
        field, message, expected = (
            (format_path(p.path), p.message, str(p.expected))
            if isinstance(p, Problem)
            else (str(p.get("field")), str(p.get("message")), str(p.get("expected")))
        )
        if "may not use" in message:
            out.add((field, message.split(" (")[0] + message.split(")", 1)[1], expected))
    return out


def test_every_door_refuses_an_asset_out_of_scope_with_the_same_words(
    tmp_path: Path, make_app: MakeApp
) -> None:
    answers: dict[str, set[tuple[str, str, str]]] = {}
    answers["files"] = _said(reference_problems(load_org(MappingSource(OUT_OF_SCOPE))))
    folder = write(tmp_path / "bad", OUT_OF_SCOPE)
    validated = CliRunner().invoke(main, ["validate", "--root", str(folder), "-o", "json"])
    assert validated.exit_code == 1, validated.output
    answers["validate"] = _said(json.loads(validated.output)["problems"])
    assert FILE in validated.output
    url = f"sqlite:///{tmp_path / 'door.sqlite'}"
    engine = create_db_engine(url)
    ensure_schema(engine)
    with pytest.raises(InputError) as refused:
        import_folder(engine, folder)
    answers["db import"] = _said(list(refused.value.problems))
    import_folder(engine, write(tmp_path / "good", SCOPED))  # the org without the bad template
    engine.dispose()
    with open_client(make_app(url, seed=False)) as api:
        projects = {p["name"]: p["id"] for p in api.get("/api/v1/org-unit/projects").json()["projects"]}
        body = yaml.safe_load(OUT_OF_SCOPE["projects/nlp/templates/nlp-job.yaml"])
        body["meta"] = {"name": "nlp-job-2", "scopeType": "project", "scopeId": str(projects["nlp"])}
        created = api.post(TEMPLATES, json=body)
        assert created.status_code == 400, created.text
        answers["API create"] = _said(created.json()["problems"])
        listed = api.get(TEMPLATES).json()["entries"]
        nlp_job = next(x for x in listed if x["meta"]["name"] == "nlp-job")
        body["meta"] = {**body["meta"], "name": "nlp-job"}
        updated = api.put(f"{TEMPLATES}/{nlp_job['meta']['id']}", json=body)
        assert updated.status_code == 400, updated.text
        answers["API update"] = _said(updated.json()["problems"])
        # Where it may be used, the same document is accepted.
        body["meta"] = {"name": "vision-job-2", "scopeType": "project", "scopeId": str(projects["vision"])}
        assert api.post(TEMPLATES, json=body).status_code == 202
    expected = {
        (
            "assets.datasources[0].name",
            "template 'nlp-job' of project nlp may not use datasource asset 'scratch': the asset belongs to"
            " project vision, and an asset is usable only in its own scope and the scopes below it",
            "an asset of system, department research or project nlp",
        )
    }
    assert answers["files"] == expected
    for door, found in answers.items():
        if door == "API create":  # the same words, for the template of that name
            found = {(f, m.replace("nlp-job-2", "nlp-job"), e) for f, m, e in found}
        assert found == expected, door


def test_a_policy_imposing_a_data_source_out_of_its_scope_is_refused_by_the_folder_and_the_api(
    tmp_path: Path, make_app: MakeApp
) -> None:
    files = {**SCOPED, "projects/nlp/policy.yaml": "imposedAssets:\n  worker:\n  - scratch\n"}
    (problem,) = load_org(MappingSource(files)).broken["projects/nlp/policy.yaml"]
    assert "the policy of project nlp may not use datasource asset 'scratch'" in problem.message
    url = f"sqlite:///{tmp_path / 'policy.sqlite'}"
    engine = create_db_engine(url)
    ensure_schema(engine)
    with pytest.raises(InputError) as refused:
        import_folder(engine, write(tmp_path / "bad", files))
    assert problem.message in {p.message for p in refused.value.problems}
    import_folder(engine, write(tmp_path / "good", SCOPED))
    engine.dispose()
    with open_client(make_app(url, seed=False)) as api:
        projects = {p["name"]: p["id"] for p in api.get("/api/v1/org-unit/projects").json()["projects"]}
        scratch = Ids(api).assets[("datasource", "scratch")]
        body: dict[str, Any] = {
            "meta": {"name": "nlp", "scope": "project", "projectId": int(projects["nlp"])}
        }
        body["policy"] = {"imposedAssets": {"worker": [scratch]}}
        put = api.put("/api/v2/policy/distributed", json=body)
        assert put.status_code == 400, put.text
        messages = {p["message"].replace(f"db:assets/{scratch}", FILE) for p in put.json()["problems"]}
        assert problem.message in messages


def test_a_department_or_project_with_assets_is_not_deleted(tmp_path: Path, make_app: MakeApp) -> None:
    url = f"sqlite:///{tmp_path / 'units.sqlite'}"
    engine = create_db_engine(url)
    ensure_schema(engine)
    import_folder(engine, write(tmp_path / "org", {k: v for k, v in SCOPED.items() if "templates/" not in k}))
    engine.dispose()
    with open_client(make_app(url, seed=False)) as api:
        projects = {p["name"]: p["id"] for p in api.get("/api/v1/org-unit/projects").json()["projects"]}
        departments = {
            d["name"]: d["id"] for d in api.get("/api/v1/org-unit/departments").json()["departments"]
        }
        refused = api.delete(f"/api/v1/org-unit/projects/{projects['vision']}")
        assert refused.status_code == 409, refused.text
        assert any("datasource asset 'scratch'" in p["message"] for p in refused.json()["problems"])
        assert api.delete(f"/api/v1/org-unit/projects/{projects['nlp']}").status_code == 204
        refused = api.delete(f"/api/v1/org-unit/departments/{departments['research']}")
        assert refused.status_code == 409, refused.text
        messages = [p["message"] for p in refused.json()["problems"]]
        assert any("datasource asset 'corpus'" in m for m in messages), messages
