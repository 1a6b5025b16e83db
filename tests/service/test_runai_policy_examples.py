"""Run:ai's own policy examples, as Run:ai writes them, through both doors: a templates folder and the HTTP
API (``/api/v2/policy/distributed``), composed with the submission the page gives and compared with the
effective result it documents (issue 31).

The examples are the YAML files of ``tests/fixtures/runai-policy-examples/``, each naming its page.  A
Run:ai example is a workspace or training policy (one replica); here it is the worker's policy of a
distributed one (``rules.worker``, ``defaults.worker``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CLUSTER, open_client
from fastapi import FastAPI

from template_engine import compose, load_org
from template_engine.errors import TemplateEngineError
from template_engine.explain import explain
from template_engine.loader.sources import MappingSource
from template_engine.paths import parse_path
from template_engine.service.app import create_app
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.policy_api import attribute_defaults, defaults_document
from template_engine.service.settings import Settings
from template_engine.service.storage.database import create_db_engine, ensure_schema

EXAMPLES = Path(__file__).resolve().parents[1] / "fixtures" / "runai-policy-examples"
P = "/api/v2/policy/distributed"
W = "/api/v1/workloads/distributed"

ORG = "departments:\n- name: research\n  projects:\n  - vision\n"
TEMPLATE = {"meta": {"name": "job"}, "spec": {"image": "ubuntu", "distributedFramework": "PyTorch"}}


def example(name: str) -> dict[str, Any]:
    found = yaml.safe_load((EXAMPLES / f"{name}.yaml").read_text(encoding="utf-8"))
    assert isinstance(found, dict) and str(found["source"]).startswith("https://github.com/run-ai/docs/")
    return found


def worker_policy(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A Run:ai workspace/training policy as the worker's part of a distributed one."""
    out: dict[str, Any] = {}
    for part in ("defaults", "rules"):
        if policy.get(part) is not None:
            out[part] = {"worker": policy[part]}
    return out


def _yaml(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


# -- the folder door -----------------------------------------------------------------------------------------


def folder_files(policy: Mapping[str, Any], template: Mapping[str, Any] = TEMPLATE) -> dict[str, str]:
    """A tiny org whose project ``vision`` holds ``policy`` (a ``policy.yaml``) and the template ``job``."""
    return {
        "org.yaml": ORG,
        "projects/vision/policy.yaml": _yaml(policy),
        "projects/vision/templates/job.yaml": _yaml(template),
    }


def compose_folder(files: Mapping[str, str]) -> dict[str, Any]:
    org = load_org(MappingSource(dict(files)))
    view = org.view_of("vision", None)
    return compose(org, org.find_template("job", view), view, {}).to_response()


def with_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {"meta": {"name": "job"}, "spec": {**TEMPLATE["spec"], **spec}}


# -- the HTTP door -------------------------------------------------------------------------------------------


@pytest.fixture
def service(tmp_path: Path, auth_file: Path) -> Iterator[Any]:
    """A service seeded with the tiny org (no policy), as a system admin's client."""
    with serving(tmp_path, auth_file, TEMPLATE) as client:
        yield client


@contextlib.contextmanager
def serving(tmp_path: Path, auth_file: Path, template: Mapping[str, Any]) -> Iterator[Any]:
    root = tmp_path / "templates"
    for name, text in folder_files({}, template).items():
        if name.endswith("policy.yaml"):
            continue
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    app: FastAPI = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", auth_file=auth_file, seed=root)
    )
    with open_client(app) as client:
        yield client


def project_meta(client: Any) -> dict[str, Any]:
    projects = client.get("/api/v1/org-unit/projects").json()["projects"]
    vision = next(p for p in projects if p["name"] == "vision")
    return {"name": "vision", "scope": "project", "projectId": int(vision["id"])}


def put_policy(client: Any, policy: Mapping[str, Any]) -> Any:
    return client.put(P, json={"meta": project_meta(client), "policy": dict(policy)})


def submit(client: Any, spec: Mapping[str, Any]) -> Any:
    """A workload submission (no template) of ``spec``, with the image and framework a workload needs."""
    meta = project_meta(client)
    full = {**TEMPLATE["spec"], **spec}
    body = {"name": "train", "projectId": str(meta["projectId"]), "clusterId": CLUSTER, "spec": full}
    return client.post(W, json=body)


# -- rules on fields Run:ai documents beyond its OpenAPI document --------------------------------------------


def test_the_robust_set_of_guidelines_loads_and_rules_mig_profile_in_a_folder() -> None:
    policy = worker_policy(example("robust-set-of-guidelines")["policy"])
    compliant = {"compute": {"cpuCoreRequest": 1, "cpuMemoryRequest": "1G"}}
    response = compose_folder(folder_files(policy, with_spec(compliant)))
    assert response["runnable"]["issues"] == []
    mig = {"compute": {**compliant["compute"], "migProfile": "1g.5gb"}}
    issues = compose_folder(folder_files(policy, with_spec(mig)))["runnable"]["issues"]
    assert [(i["field"], i["rule"], i["source"]) for i in issues] == [
        ("compute.migProfile", "canEdit", "projects/vision/policy.yaml:18")
    ]


def test_the_robust_set_of_guidelines_is_a_policy_over_http(service: Any) -> None:
    policy = worker_policy(example("robust-set-of-guidelines")["policy"])
    put = put_policy(service, policy)
    assert put.status_code == 200, put.json()
    rules = put.json()["effective"]["rules"]["worker"]["compute"]
    assert rules["migProfile"]["canEdit"] is False
    mig = {"compute": {"cpuCoreRequest": 1, "cpuMemoryRequest": "1G", "migProfile": "1g.5gb"}}
    refused = submit(service, mig)
    assert refused.status_code == 400, refused.json()
    assert [(i["field"], i["rule"]) for i in refused.json()["complianceIssues"]] == [
        ("compute.migProfile", "canEdit")
    ]
    accepted = submit(service, {"compute": {"cpuCoreRequest": 1, "cpuMemoryRequest": "1G"}})
    assert accepted.status_code == 202, accepted.json()


# -- the rule types, one example each ------------------------------------------------------------------------

RULE_TYPES = example("rule-types")["examples"]


@pytest.mark.parametrize("rule", sorted(RULE_TYPES))
def test_each_rule_type_example_loads_in_a_folder_and_over_http(rule: str, service: Any) -> None:
    policy = {"rules": {"worker": RULE_TYPES[rule]}}
    try:
        compose_folder(folder_files(policy))
    except TemplateEngineError as exc:  # pragma: no cover - the failure's message
        pytest.fail(exc.render())
    put = put_policy(service, policy)
    assert put.status_code == 200, put.json()


def test_default_from_as_run_ai_spells_it_in_both_doors(service: Any) -> None:
    policy = {"rules": {"worker": RULE_TYPES["defaultFrom"]}}
    spec = {"compute": {"cpuCoreLimit": 4}}
    combined = compose_folder(folder_files(policy, with_spec(spec)))["combinedSpec"]
    assert combined["compute"] == {"cpuCoreLimit": 4, "cpuCoreRequest": 2}
    assert put_policy(service, policy).status_code == 200
    accepted = submit(service, spec)
    assert accepted.status_code == 202, accepted.json()
    assert accepted.json()["spec"]["compute"] == {"cpuCoreLimit": 4, "cpuCoreRequest": 2}


# -- attribute defaults of itemized lists ------------------------------------------------------------------


def folder_split(policy: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Run:ai policy as the two files of a scope: its ``defaults.yaml`` (the items and other defaults) and
    its ``policy.yaml`` (the attribute defaults, the rules), as the service stores a policy written to it."""
    defaults = policy.get("defaults") or {}
    layer, problems = defaults_document({}, {"worker": defaults})
    assert problems == []
    out: dict[str, Any] = {}
    attributes = attribute_defaults({"worker": defaults})
    if attributes:
        out["defaults"] = attributes
    if policy.get("rules"):
        out["rules"] = {"worker": policy["rules"]}
    return layer, out


def folder_of(policy: Mapping[str, Any], spec: Mapping[str, Any]) -> dict[str, str]:
    layer, document = folder_split(policy)
    files = folder_files(document, with_spec(spec))
    if layer:
        files["projects/vision/defaults.yaml"] = _yaml(layer)
    return files


def test_the_itemized_example_composes_as_documented_in_a_folder() -> None:
    found = example("itemized-extended-resources")
    files = {
        "org.yaml": ORG,
        "projects/vision/defaults.yaml": _yaml(
            {"spec": {"compute": {"extendedResources": [
                {"resource": "default/cpu", "quantity": 5},
                {"resource": "default/memory", "quantity": "4M"},
            ]}}}
        ),
        "projects/vision/policy.yaml": (
            "defaults:\n"
            "  worker:\n"
            "    compute:\n"
            "      extendedResources:\n"
            "        attributes:\n"
            "          quantity: 3\n"
            + _yaml({"rules": {"worker": found["policy"]["rules"]}})
        ),
        "projects/vision/templates/job.yaml": _yaml(with_spec(found["submission"])),
    }  # fmt: skip
    assert folder_of(found["policy"], found["submission"]) == files  # the service's split is the same
    org = load_org(MappingSource(files))
    view = org.view_of("vision", None)
    composition = compose(org, org.find_template("job", view), view, {})
    response = composition.to_response()
    assert response["combinedSpec"]["compute"] == found["effective"]["compute"]
    assert response["runnable"]["issues"] == []
    # explain: each quantity's source, as the page's table gives it.
    quantities = {
        str(e.path[2].value): (e.value, e.location.layer, e.location.place())  # type: ignore[union-attr]
        for e in explain(composition, parse_path("compute.extendedResources"))
        if e.replica == "worker" and e.path[-1] == "quantity"
    }
    assert quantities == {
        "default/cpu": (5, "project vision defaults", "projects/vision/defaults.yaml:5"),
        "added/cpu": (
            3,
            "attribute default of the project vision policy: "
            "compute.extendedResources[resource=added/cpu].quantity = 3",
            "projects/vision/policy.yaml:6",
        ),
        "added/memory": ("5M", "template job", "projects/vision/templates/job.yaml:12"),
    }


def test_the_locked_default_of_the_itemized_example_cannot_be_excluded() -> None:
    found = example("itemized-extended-resources")
    spec = {"compute": {"extendedResources": [{"resource": "default/cpu", "exclude": True}]}}
    issues = compose_folder(folder_of(found["policy"], spec))["runnable"]["issues"]
    assert [(i["field"], i["rule"]) for i in issues] == [
        ("compute.extendedResources[resource=default/cpu]", "locked")
    ]


def _as_json(value: Any) -> Any:
    """Run:ai's JSON of the page's YAML: a quantity is a string in Run:ai's API (``ExtendedResource``), so
    ``quantity: 5`` is sent as ``"5"``."""
    if isinstance(value, Mapping):
        return {
            k: str(v) if k == "quantity" and isinstance(v, int) else _as_json(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    return value


def test_the_itemized_example_over_http(service: Any) -> None:
    found = _as_json(example("itemized-extended-resources"))
    policy = worker_policy(found["policy"])
    put = put_policy(service, policy)
    assert put.status_code == 200, put.json()
    got = service.get(P, params={k: v for k, v in project_meta(service).items() if k != "name"}).json()
    assert got["policy"]["defaults"] == policy["defaults"]  # Run:ai's form back, instances and attributes
    assert (
        got["effective"]["defaults"]["worker"]["compute"]["extendedResources"]
        == (found["policy"]["defaults"]["compute"]["extendedResources"])
    )
    accepted = submit(service, found["submission"])
    assert accepted.status_code == 202, accepted.json()
    assert accepted.json()["spec"]["compute"] == found["effective"]["compute"]
    excluded = {"compute": {"extendedResources": [{"resource": "default/cpu", "exclude": True}]}}
    locked = submit(service, excluded)
    assert locked.status_code == 400
    assert [(i["field"], i["rule"]) for i in locked.json()["complianceIssues"]] == [
        ("compute.extendedResources[resource=default/cpu]", "locked")
    ]


def test_the_full_policy_gives_every_git_item_its_repository_and_branch(service: Any) -> None:
    found = example("full-policy")
    response = compose_folder(folder_of(found["policy"], found["submission"]))
    assert response["combinedSpec"]["storage"]["git"] == found["effective"]["storage"]["git"]
    assert [h["name"] for h in response["combinedSpec"]["storage"]["hostPath"]] == [
        "vol-data-1",
        "vol-data-2",
    ]
    assert response["runnable"]["issues"] == []
    put = put_policy(service, worker_policy(found["policy"]))
    assert put.status_code == 200, put.json()
    assert put.json()["policy"]["defaults"] == worker_policy(found["policy"])["defaults"]
    accepted = submit(service, found["submission"])
    assert accepted.status_code == 202, accepted.json()
    assert accepted.json()["spec"]["storage"]["git"] == found["effective"]["storage"]["git"]


def test_attribute_defaults_round_trip_through_export_and_import(service: Any, tmp_path: Path) -> None:
    """Written over HTTP, the attribute defaults are the exported ``policy.yaml``'s ``defaults``; that folder
    imports into an empty database as it was, and the CLI composes it the same."""
    found = _as_json(example("itemized-extended-resources"))
    policy = worker_policy(found["policy"])
    assert put_policy(service, policy).status_code == 200
    before = service.get(P, params={k: v for k, v in project_meta(service).items() if k != "name"}).json()
    database = tmp_path / "db.sqlite"  # the service fixture's database
    engine = create_db_engine(f"sqlite:///{database}")
    first, second = tmp_path / "first", tmp_path / "second"
    export_folder(engine, first)
    engine.dispose()
    written = yaml.safe_load((first / "projects/vision/policy.yaml").read_text(encoding="utf-8"))
    assert written["defaults"] == {
        "worker": {"compute": {"extendedResources": {"attributes": {"quantity": "3"}}}}
    }
    # the items are the defaults document's:
    assert (first / "projects/vision/defaults.yaml").is_file()
    fresh = create_db_engine(f"sqlite:///{tmp_path / 'fresh.sqlite'}")
    ensure_schema(fresh)
    report = import_folder(fresh, first)
    assert report is not None and report.added["policies"] == 1
    export_folder(fresh, second)
    fresh.dispose()
    assert {p.name: p.read_bytes() for p in first.rglob("*.yaml")} == {
        p.name: p.read_bytes() for p in second.rglob("*.yaml")
    }
    org = load_org(first)
    view = org.view_of("vision", None)
    spec = {"meta": {"name": "job"}, "spec": {**TEMPLATE["spec"], **found["submission"]}}
    files = {str(p.relative_to(first)): p.read_text(encoding="utf-8") for p in first.rglob("*.yaml")}
    files["projects/vision/templates/job.yaml"] = _yaml(spec)
    assert compose_folder(files)["combinedSpec"]["compute"] == found["effective"]["compute"]
    assert org.policies[view.chain()[-1]].attribute_defaults[0].value == "3"
    assert before["policy"]["defaults"] == policy["defaults"]


def test_a_patch_adds_and_resets_attribute_defaults(service: Any) -> None:
    """PATCH merges an attribute default in and a ``reset`` path clears it, in the service's form
    (``defaults.worker.<list>.attributes.<attr>``) and in Run:ai's (``worker.<list>``: defaults and rules)."""
    meta = project_meta(service)
    params = {k: v for k, v in meta.items() if k != "name"}
    put = put_policy(service, worker_policy(_as_json(example("full-policy"))["policy"]))
    assert put.status_code == 200, put.json()
    patch = {
        "meta": meta,
        "policy": {"defaults": {"worker": {"ports": {"attributes": {"serviceType": "NodePort"}}}}},
    }
    assert service.patch(P, json=patch).status_code == 200
    worker = service.get(P, params=params).json()["policy"]["defaults"]["worker"]
    assert worker["ports"] == {"attributes": {"serviceType": "NodePort"}}
    assert worker["storage"]["git"] == {
        "attributes": {"repository": "https://git-repo.my-domain.com", "branch": "master"}
    }
    reset = {"meta": meta, "reset": ["defaults.worker.storage.git.attributes.branch", "worker.ports"]}
    patched = service.patch(P, json=reset)
    assert patched.status_code == 200, patched.json()
    worker = patched.json()["policy"]["defaults"]["worker"]
    assert "ports" not in worker
    assert worker["storage"]["git"] == {"attributes": {"repository": "https://git-repo.my-domain.com"}}
    assert worker["storage"]["hostPath"]["instances"][0]["name"] == "vol-data-1"  # the items are kept


def test_single_selection_out_of_many_allows_only_git(service: Any) -> None:
    policy = worker_policy(example("single-selection-out-of-many")["policy"])
    git = {"name": "code", "repository": "https://github.com/acme/code", "branch": "main", "path": "/code"}
    ok = {"storage": {"git": [git]}}
    assert compose_folder(folder_files(policy, with_spec(ok)))["runnable"]["issues"] == []
    bad = {"storage": {"git": [{"name": "code", "repository": "https://github.com/acme/code", "path": "/c"}],
                       "pvc": [{"name": "home", "claimName": "home", "path": "/home"}]}}  # fmt: skip
    issues = compose_folder(folder_files(policy, with_spec(bad)))["runnable"]["issues"]
    expected = [("storage.git[name=code].branch", "required"), ("storage.pvc[name=home]", "canAdd")]
    assert [(i["field"], i["rule"]) for i in issues] == expected
    assert put_policy(service, policy).status_code == 200
    assert submit(service, ok).status_code == 202
    refused = submit(service, bad)
    assert refused.status_code == 400
    assert [(i["field"], i["rule"]) for i in refused.json()["complianceIssues"]] == expected


def test_explain_over_http_names_the_attribute_default(tmp_path: Path, auth_file: Path) -> None:
    found = _as_json(example("itemized-extended-resources"))
    with serving(tmp_path, auth_file, with_spec(found["submission"])) as client:
        assert put_policy(client, worker_policy(found["policy"])).status_code == 200
        entries = client.get("/api/v1/workload-templates/distributed", params={"limit": 10}).json()["entries"]
        template = next(e["meta"]["id"] for e in entries if e["meta"]["name"] == "job")
        field = "compute.extendedResources[resource=added/cpu].quantity"
        explained = client.get(
            f"/api/v1/workload-templates/distributed/{template}/explain", params={"field": field}
        )
        assert explained.status_code == 200, explained.json()
        worker = explained.json()["entries"][0]
        assert (worker["replica"], worker["value"], worker["file"], worker["line"]) == (
            "worker",
            "3",
            "projects/vision/policy.yaml",
            6,
        )
        assert worker["layer"] == f"attribute default of the project vision policy: {field} = '3'"
        assert explained.json()["runnable"]["isRunnable"] is True


def test_attribute_defaults_alone_leave_the_defaults_document_as_it_was(service: Any) -> None:
    """A policy whose defaults are only attribute defaults writes nothing into the scope's defaults
    document (no empty ``compute: {}`` for an export to write)."""
    projects = service.get("/api/v1/org-unit/projects").json()["projects"]
    vision = next(p["id"] for p in projects if p["name"] == "vision")
    before = service.get(f"/api/v1/defaults/projects/{vision}").json()
    only = {"defaults": {"worker": {"compute": {"extendedResources": {"attributes": {"quantity": "3"}}}}}}
    assert put_policy(service, only).status_code == 200
    assert service.get(f"/api/v1/defaults/projects/{vision}").json() == before
