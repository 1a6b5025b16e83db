"""``template-engine schema`` and ``init`` through the installed command: every document kind's JSON Schema
accepts the example org's files and rejects a typo; ``init`` writes an org that ``validate`` and ``check``
accept, with editor headers that point at the schemas."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from template_engine.views.schema import SCHEMA_KINDS

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"
EXE = shutil.which("template-engine", path=str(Path(sys.executable).parent)) or "template-engine"
KINDS = [
    "org",
    "defaults",
    "template",
    "training-template",
    "workspace-template",
    "inference-template",
    "environment",
    "compute",
    "datasource",
    "policy",
    "training-policy",
    "workspace-policy",
    "inference-policy",
    "distributed-inference-policy",
    "cluster",
]
ASSET_KINDS = {"environments": "environment", "computes": "compute", "datasources": "datasource"}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], capture_output=True, text=True, check=False)


def kind_of(rel: Path, root: Path = EXAMPLE) -> str:
    """The document kind of a file of a templates folder."""
    if rel.as_posix() in ("org.yaml", "cluster.yaml"):
        return rel.stem
    if "assets" in rel.parts:  # the tenant's (assets/), a department's or a project's (D/assets/)
        return ASSET_KINDS[rel.parts[rel.parts.index("assets") + 1]]
    if "templates" in rel.parts:
        kind = yaml.safe_load((root / rel).read_text(encoding="utf-8")).get("kind")
        return "template" if kind in (None, "distributed") else f"{kind}-template"
    if rel.name.endswith("-policy.yaml"):
        return rel.stem
    return {"defaults.yaml": "defaults", "policy.yaml": "policy"}[rel.name]


@pytest.fixture(scope="module")
def schemas() -> dict[str, dict[str, Any]]:
    out = {}
    for kind in KINDS:
        done = run("schema", kind)
        assert done.returncode == 0, done.stderr
        out[kind] = json.loads(done.stdout)
    return out


def validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@functools.cache
def _validator_of(schema_json: str) -> jsonschema.Draft202012Validator:
    """:func:`validator` once per distinct schema (checking it against the meta-schema is the slow part)."""
    return validator(json.loads(schema_json))


def errors(schema: dict[str, Any], data: Any) -> list[str]:
    return [error.message for error in _validator_of(json.dumps(schema)).iter_errors(data)]


def test_schema_without_kind_lists_the_kinds() -> None:
    done = run("schema")
    assert done.returncode == 0
    assert [line.split()[0] for line in done.stdout.splitlines()] == KINDS
    assert list(SCHEMA_KINDS) == KINDS
    assert "assets/environments/NAME.yaml" in done.stdout
    assert "projects/P/assets/datasources/NAME.yaml" in done.stdout  # a project's assets


def test_a_kinds_template_schema_holds_its_own_fields_and_refuses_what_it_lacks() -> None:
    inference = json.loads(run("schema", "inference-template").stdout)
    good = {"meta": {"name": "serve"}, "kind": "inference", "spec": {"servingPort": {"container": 8000}}}
    jsonschema.validate(good, inference)
    bad = {"meta": {"name": "serve"}, "kind": "inference", "spec": {"backoffLimit": 3}}
    with pytest.raises(jsonschema.ValidationError, match="backoffLimit"):
        jsonschema.validate(bad, inference)


def test_an_unknown_kind_is_a_usage_error() -> None:
    done = run("schema", "asset")
    assert done.returncode == 2
    assert "'asset' is not one of" in done.stderr


def test_each_schema_is_a_draft_2020_12_schema(schemas: dict[str, dict[str, Any]]) -> None:
    for kind, schema in schemas.items():
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert schema["type"] == "object" and schema["additionalProperties"] is False, kind
        validator(schema)


def test_the_schemas_accept_every_file_of_the_example_org(schemas: dict[str, dict[str, Any]]) -> None:
    files = sorted(p.relative_to(EXAMPLE) for p in EXAMPLE.rglob("*.yaml"))
    seen = set()
    for rel in files:
        kind = kind_of(rel)
        seen.add(kind)
        data = yaml.safe_load((EXAMPLE / rel).read_text(encoding="utf-8"))
        assert errors(schemas[kind], data) == [], rel
    assert seen == set(KINDS)


@pytest.mark.parametrize(
    ("kind", "document", "typo"),
    [
        ("org", {"departments": [{"name": "r", "projcts": ["v"]}]}, "projcts"),
        ("defaults", {"spec": {"imagee": "python:3.11"}}, "imagee"),
        ("defaults", {"spec": {"compute": {"gpuDevicesRequst": 1}}}, "gpuDevicesRequst"),
        ("template", {"meta": {"name": "t"}, "spec": {"numWorker": 2}}, "numWorker"),
        ("environment", {"meta": {"name": "e"}, "spec": {"imagePullPolicy": "Sometimes"}}, "Sometimes"),
        ("compute", {"meta": {"name": "c"}, "spec": {"image": "x"}}, "image"),
        ("datasource", {"meta": {"name": "d"}, "spec": {"storage": {"pvcs": []}}}, "pvcs"),
        ("policy", {"rules": {"worker": {"image": {"requred": True}}}}, "requred"),
        ("policy", {"rules": {"worker": {"imagee": {"required": True}}}}, "imagee"),
        ("policy", {"rules": {"workers": {}}}, "workers"),
        (
            "policy",
            {"rules": {"worker": {"imagePullPolicy": {"options": [{"value": "Sometimes"}]}}}},
            "Sometimes",
        ),
        (
            "policy",
            {"rules": {"worker": {"compute": {"cpuCoreLimit": {"defaultFrom": {"field": "cpuCoreLimt"}}}}}},
            "cpuCoreLimt",
        ),
        ("policy", {"rules": {"worker": {"ports": {"attributes": {"serviceTyp": {}}}}}}, "serviceTyp"),
        ("cluster", {"schedulerNam": "kai-scheduler"}, "schedulerNam"),
        ("cluster", {"priorityClasses": [{"name": "train", "valu": 50}]}, "valu"),
    ],
)
def test_a_typo_is_rejected(schemas: dict[str, dict[str, Any]], kind: str, document: Any, typo: str) -> None:
    found = errors(schemas[kind], document)
    assert found, document
    assert any(typo in message for message in found), found


def test_the_policy_schema_follows_the_vocabulary(schemas: dict[str, dict[str, Any]]) -> None:
    worker = schemas["policy"]["properties"]["rules"]["properties"]["worker"]["properties"]
    gpu = worker["compute"]["properties"]["gpuDevicesRequest"]["properties"]
    assert set(gpu) == {"canEdit", "defaultFrom", "max", "min", "required", "step"}
    assert "environmentVariables" in worker
    assert set(worker["environmentVariables"]["properties"]) == {"instances"}
    assert set(worker["ports"]["properties"]) == {"instances", "attributes"}
    master = schemas["policy"]["properties"]["rules"]["properties"]["master"]["properties"]
    assert "numWorkers" in worker and "numWorkers" not in master
    good = {
        "rules": {"worker": {"compute": {"cpuMemoryRequest": {"max": "1Ti"}}}},
        "imposedAssets": {"worker": ["d"]},
    }
    assert errors(schemas["policy"], good) == []


def test_the_policy_schema_takes_run_ai_s_policy_examples(schemas: dict[str, dict[str, Any]]) -> None:
    """Attribute defaults and ``defaultFrom`` as Run:ai writes them (issue 31), and a default item or a
    field's default under ``defaults`` refused, as the loader refuses them."""
    good = {
        "defaults": {
            "worker": {
                "compute": {"extendedResources": {"attributes": {"quantity": 3}}},
                "storage": {"git": {"attributes": {"repository": "https://git.example.com", "branch": "m"}}},
            }
        },
        "rules": {
            "worker": {
                "compute": {
                    "cpuCoreRequest": {"defaultFrom": {"field": "compute.cpuCoreLimit", "factor": 0.5}},
                    "migProfile": {"canEdit": False},
                }
            }
        },
    }
    assert errors(schemas["policy"], good) == []
    items = {"defaults": {"worker": {"compute": {"extendedResources": {"instances": [{"resource": "a"}]}}}}}
    assert errors(schemas["policy"], items)
    scalar = {"defaults": {"worker": {"imagePullPolicy": "Always"}}}
    assert errors(schemas["policy"], scalar)


# -- init ---------------------------------------------------------------------------------------------------


def test_init_writes_an_org_that_validate_and_check_accept(tmp_path: Path) -> None:
    root = tmp_path / "org"
    done = run("init", str(root))
    assert done.returncode == 0, done.stderr
    assert f"next: template-engine validate --root {root}" in done.stdout
    written = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml"))
    assert written == [
        "cluster.yaml",
        "departments/research/defaults.yaml",
        "org.yaml",
        "projects/vision/defaults.yaml",
        "projects/vision/templates/train.yaml",
        "system/defaults.yaml",
        "system/policy.yaml",
    ]
    validate = run("validate", "--root", str(root))
    assert validate.returncode == 0, validate.stdout
    assert validate.stdout.strip() == "all files are valid"
    check = run("check", "--root", str(root), "-o", "json")
    assert check.returncode == 0, check.stdout
    results = json.loads(check.stdout)["results"]
    assert [(r["project"], r["template"], r["status"]) for r in results] == [("vision", "train", "runnable")]


def test_init_files_point_an_editor_at_the_schemas(
    tmp_path: Path, schemas: dict[str, dict[str, Any]]
) -> None:
    root = tmp_path / "org"
    assert run("init", str(root)).returncode == 0
    for kind in KINDS:
        assert json.loads((root / f".template-engine/schemas/{kind}.json").read_text()) == schemas[kind]
    for path in root.rglob("*.yaml"):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        prefix = "# yaml-language-server: $schema="
        assert first.startswith(prefix), path
        target = (path.parent / first[len(prefix) :]).resolve()
        kind = kind_of(path.relative_to(root), root)
        assert target == (root / f".template-engine/schemas/{kind}.json").resolve()
        assert errors(schemas[kind], yaml.safe_load(path.read_text(encoding="utf-8"))) == [], path


def test_init_into_an_empty_folder(tmp_path: Path) -> None:
    assert run("init", str(tmp_path)).returncode == 0
    assert (tmp_path / "org.yaml").is_file()


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    done = run("init", str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: {str(tmp_path)!r} is not an empty folder")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
