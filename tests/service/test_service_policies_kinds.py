"""Policies of every kind over HTTP (issue 32): ``/api/v2/policy/{trainings,workspaces,inferences,
distributed-inferences}``, ``GET /api/v2/policy``, their storage (``kind_policies``), ``db import``/``export``
and ``db upgrade``.

Every response here is also checked against Run:ai's whole document (``TrainingPolicyV2``...,
``PolicyListResponse``, ``Error``) by the conformance hook that ``conftest`` installs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import TEMPLATES, Ids, MakeApp, open_client
from schema_steps import downgrade

from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, TEMPLATE_KINDS, WorkloadKind

BASE = "/api/v2/policy"
#: Every kind whose policy is one document of its own (every kind but distributed).
OWN = [kind for kind in KINDS if kind is not DISTRIBUTED]
TRAINING = KIND_BY_NAME["training"]
INFERENCE = KIND_BY_NAME["inference"]
LEADER_WORKER = KIND_BY_NAME["distributed-inference"]


def _url(kind: WorkloadKind) -> str:
    return f"{BASE}/{kind.policy_segment}"


def _project(ids: Ids, name: str) -> dict[str, Any]:
    return {"name": name, "scope": "project", "projectId": int(ids.projects[name])}


def _query(meta: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in meta.items() if k != "name"}


def _roled(kind: WorkloadKind, part: Any) -> Any:
    """``part`` as the primary role's in ``kind``'s shape: under the role for a policy split by role."""
    return {kind.primary: part} if kind.roled_policy else part


def _of_role(kind: WorkloadKind, part: Any) -> Any:
    """The primary role's part of a section of ``kind``'s shape (the inverse of :func:`_roled`)."""
    return part[kind.primary] if kind.roled_policy else part


def _put(client: Any, kind: WorkloadKind, meta: dict[str, Any], policy: dict[str, Any], **params: Any) -> Any:
    return client.put(_url(kind), json={"meta": meta, "policy": policy}, params=params)


def _problems(response: Any) -> dict[str, dict[str, Any]]:
    assert response.status_code == 400, response.json()
    return {p.get("field", ""): p for p in response.json()["problems"]}


# -- the routes of every kind -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", OWN, ids=lambda k: k.name)
def test_put_get_patch_delete_of_each_kind(client: Any, ids: Ids, kind: WorkloadKind) -> None:
    meta = _project(ids, "vision")
    datasets = ids.assets[("datasource", "datasets")]
    policy = {
        "defaults": _roled(kind, {"image": "python:3.11", "environmentVariables": {"instances": [
            {"name": "TZ", "value": "UTC"}]}}),
        "rules": _roled(kind, {"args": {"canEdit": False}, "image": {"required": True}}),
        "imposedAssets": _roled(kind, [datasets]),
    }  # fmt: skip
    distributed = client.get(f"{BASE}/distributed", params=_query(meta)).json()
    put = _put(client, kind, meta, policy)
    assert put.status_code == 200, put.json()
    assert put.headers["ETag"] == '"1"'
    own = put.json()["policy"]
    assert own == policy
    assert put.json()["meta"]["projectId"] == int(ids.projects["vision"])
    got = client.get(_url(kind), params=_query(meta))
    assert got.status_code == 200 and got.json()["policy"] == policy
    effective = got.json()["effective"]
    rules = _of_role(kind, effective["rules"])
    assert rules["args"] == {
        "canEdit": False,
        "sourceOfRule": {"scope": "project", "projectId": int(ids.projects["vision"])},
    }
    assert datasets in _of_role(kind, effective["imposedAssets"])  # beside any a higher scope imposes
    defaults = _of_role(kind, effective["defaults"])
    assert defaults["image"] == "python:3.11"
    # The distributed policy of the scope is another policy: untouched.
    assert client.get(f"{BASE}/distributed", params=_query(meta)).json() == distributed

    # PATCH: validateOnly stores nothing; a reset clears a field's defaults and rules; then merge.
    field = f"{kind.primary}.image" if kind.roled_policy else "image"
    dry = client.patch(_url(kind), json={"meta": meta, "reset": [field]}, params={"validateOnly": True})
    assert dry.status_code == 200, dry.json()
    assert "image" not in _of_role(kind, dry.json()["policy"]["rules"])
    assert "affectedTemplates" in dry.json()
    assert client.get(_url(kind), params=_query(meta)).json()["policy"] == policy
    added = {"policy": {"rules": _roled(kind, {"workingDir": {"canEdit": False}})}}
    patched = client.patch(
        _url(kind), json={"meta": meta, "reset": [field], **added}, headers={"If-Match": '"1"'}
    )
    assert patched.status_code == 200, patched.json()
    assert patched.headers["ETag"] == '"2"'
    after = patched.json()["policy"]
    own_defaults, own_rules = _of_role(kind, after["defaults"]), _of_role(kind, after["rules"])
    assert "image" not in own_defaults and "image" not in own_rules
    assert own_rules["args"] == {"canEdit": False}
    assert own_rules["workingDir"] == {"canEdit": False}
    # A stale If-Match is a 412; DELETE with the current one.
    assert client.delete(_url(kind), params=_query(meta), headers={"If-Match": '"1"'}).status_code == 412
    assert client.delete(_url(kind), params=_query(meta), headers={"If-Match": '"2"'}).status_code == 204
    gone = client.get(_url(kind), params=_query(meta))
    assert gone.status_code == 200 and "policy" not in gone.json() and gone.headers["ETag"] == '"3"'


def test_a_flat_kind_s_imposed_assets_are_one_list_and_a_distributed_inference_s_per_role(
    client: Any, ids: Ids
) -> None:
    datasets = ids.assets[("datasource", "datasets")]
    tenant = {"name": "tenant", "scope": "tenant"}
    per_role = _put(client, TRAINING, tenant, {"imposedAssets": {"worker": [datasets]}})
    assert "policy.imposedAssets" in _problems(per_role)
    flat = _put(client, LEADER_WORKER, tenant, {"imposedAssets": [datasets]})
    assert "policy.imposedAssets" in _problems(flat)
    unknown = _put(client, TRAINING, tenant, {"imposedAssets": ["00000000-0000-4000-8000-000000000000"]})
    assert _problems(unknown)["policy.imposedAssets[0]"]["message"].startswith("no asset has the id")
    both = _put(
        client, LEADER_WORKER, tenant, {"imposedAssets": {"leader": [datasets], "worker": [datasets]}}
    )
    assert both.status_code == 200, both.json()
    assert both.json()["effective"]["imposedAssets"] == {"leader": [datasets], "worker": [datasets]}


def test_one_scope_of_a_branch_rules_a_field_kind_by_kind(client: Any, ids: Ids) -> None:
    """Ownership is counted among the policies of one kind: a training rule at the tenant and the same field
    in a project's training policy is refused, in its workspace policy it is not."""
    tenant = {"name": "tenant", "scope": "tenant"}
    assert _put(client, TRAINING, tenant, {"rules": {"tty": {"canEdit": False}}}).status_code == 200
    clash = _put(client, TRAINING, _project(ids, "vision"), {"rules": {"tty": {"canEdit": True}}})
    problem = _problems(clash)["policy.rules.tty"]
    assert "already has rules in the system training policy" in problem["message"]
    other = _put(
        client, KIND_BY_NAME["workspace"], _project(ids, "vision"), {"rules": {"tty": {"canEdit": True}}}
    )
    assert other.status_code == 200, other.json()


def test_a_kind_s_reset_names_its_fields_with_a_hint(client: Any) -> None:
    tenant = {"name": "tenant", "scope": "tenant"}
    typo = client.patch(_url(TRAINING), json={"meta": tenant, "reset": ["compute.gpuDevicesRequst"]})
    problem = _problems(typo)["reset[0]"]
    assert problem["message"] == (
        "reset path 'compute.gpuDevicesRequst': the training's compute has no field 'gpuDevicesRequst' "
        "(did you mean 'gpuDevicesRequest'?)"
    )
    roles = client.patch(_url(LEADER_WORKER), json={"meta": tenant, "reset": ["master.image"]})
    assert "names no field" in _problems(roles)["reset[0]"]["message"]
    inference = client.patch(_url(INFERENCE), json={"meta": tenant, "reset": ["backoffLimit"]})
    assert "the inference has no field 'backoffLimit'" in _problems(inference)["reset[0]"]["message"]


def test_a_data_source_a_kind_s_policy_imposes_is_not_deleted(client: Any, ids: Ids) -> None:
    created = client.post(
        "/api/v1/asset/datasource/nfs",
        json={
            "meta": {"name": "shared", "scope": "tenant"},
            "spec": {"server": "nfs", "path": "/s", "mountPath": "/s"},
        },
    )
    assert created.status_code == 202, created.json()
    asset = created.json()["meta"]["id"]
    assert _put(client, INFERENCE, _project(ids, "recsys"), {"imposedAssets": [asset]}).status_code == 200
    refused = client.delete(f"/api/v1/asset/datasource/nfs/{asset}")
    assert refused.status_code == 409
    assert refused.json()["policies"] == [
        {"scope": "project", "projectId": int(ids.projects["recsys"]), "name": "recsys"}
    ]
    params = {"scope": "project", "projectId": ids.projects["recsys"]}
    assert client.delete(_url(INFERENCE), params=params).status_code == 204
    assert client.delete(f"/api/v1/asset/datasource/nfs/{asset}").status_code == 202


# -- door parity: a body is read as its policy file is ------------------------------------------------------

#: One problem of each sort a policy file of a kind can have, as a file's text (flat for a training).
_BROKEN = {
    "a role in a flat policy": "rules:\n  worker:\n    tty: {canEdit: false}\n",
    "a field the kind lacks": "rules:\n  numWorkers: {max: 4}\n",
    "a value default of the wrong type": "defaults:\n  backoffLimit: many\n",
    "a value default the kind lacks": "defaults:\n  distributedFramework: PyTorch\n",
    "an unknown rule key": "rules:\n  tty: {canedit: false}\n",
}


@pytest.mark.parametrize("case", sorted(_BROKEN))
def test_a_body_gets_the_problems_of_the_policy_file_worded_the_same(
    client: Any, tmp_path: Path, case: str
) -> None:
    from template_engine import load_org

    root = tmp_path / "org"
    (root / "system").mkdir(parents=True)
    (root / "org.yaml").write_text("departments: []\n")
    (root / "system" / TRAINING.policy_file).write_text(_BROKEN[case])
    org = load_org(root)
    from_file = org.broken[f"system/{TRAINING.policy_file}"]
    assert from_file, case
    body = yaml.safe_load(_BROKEN[case])
    answer = _put(client, TRAINING, {"name": "tenant", "scope": "tenant"}, body)
    from_api = answer.json()["problems"]
    assert answer.status_code == 400
    assert [(p["field"], p["message"], p.get("expected")) for p in from_api] == [
        (f"policy.{'.'.join(map(str, p.path))}", p.message, p.expected) for p in from_file
    ]


# -- GET /api/v2/policy -------------------------------------------------------------------------------------


def test_the_list_has_every_kind_with_run_ai_s_policy_type_and_filters(client: Any, ids: Ids) -> None:
    vision, research = ids.projects["vision"], ids.departments["research"]
    assert (
        _put(client, TRAINING, _project(ids, "vision"), {"rules": {"backoffLimit": {"max": 9}}}).status_code
        == 200
    )
    tenant = {"name": "tenant", "scope": "tenant"}
    assert (
        _put(client, LEADER_WORKER, tenant, {"rules": {"leader": {"image": {"required": True}}}}).status_code
        == 200
    )
    listed = client.get(BASE)
    assert listed.status_code == 200
    entries = listed.json()["policies"]
    pairs = [(e["type"], e["meta"]["scope"], e["meta"].get("projectId")) for e in entries]
    assert ("training", "project", int(vision)) in pairs and ("distributedInference", "tenant", None) in pairs
    assert pairs.index(("distributedInference", "tenant", None)) > pairs.index(
        ("training", "project", int(vision))
    )
    # The distributed ones: every scope with a policy or defaults of its own, as its route answers them.
    distributed = client.get(f"{BASE}/distributed", params={"scope": "project", "projectId": vision}).json()
    assert {"type": "distributed", "meta": distributed["meta"]} in entries
    training = client.get(_url(TRAINING), params={"scope": "project", "projectId": vision}).json()
    assert {"type": "training", "meta": training["meta"]} in entries
    assert training["meta"]["id"] != distributed["meta"]["id"]

    only = client.get(BASE, params={"workloadType": "Training"}).json()["policies"]
    assert {e["type"] for e in only} == {"training"}
    of_project = client.get(BASE, params={"projectId": vision}).json()["policies"]
    assert {e["meta"].get("projectId") for e in of_project} == {int(vision)}
    assert {e["type"] for e in of_project} == {"distributed", "training"}
    of_department = client.get(BASE, params={"departmentId": research}).json()["policies"]
    assert of_department and all(e["meta"]["scope"] in ("department", "project") for e in of_department)
    tenant_only = client.get(BASE, params={"scope": "tenant"}).json()["policies"]
    assert {e["meta"]["scope"] for e in tenant_only} == {"tenant"}
    assert client.get(BASE, params={"scope": "cluster"}).json() == {"policies": []}
    bad = client.get(BASE, params={"workloadType": "Batch"})
    assert "workloadType" in _problems(bad)


# -- a kind's defaults reach that kind only -----------------------------------------------------------------


def test_a_training_policy_s_defaults_reach_trainings_only(client: Any, ids: Ids) -> None:
    """issue 32: a policy's defaults belong to its own kind.  A training policy at a project with
    ``backoffLimit: 5``, and a template of each kind there, composed with the service's org of stored rows
    (``composer.org_for``, the one a template's GET composes with): the training composition has it; the
    distributed one and the workspace's have the shared default (the system's 6), the inference's has none
    (its kind lacks the field)."""
    from template_engine.compose import compose
    from template_engine.org import Scope, Source, Template
    from template_engine.service.auth import Principal
    from template_engine.service.composer import org_for

    meta = _project(ids, "vision")
    before = client.get(f"{BASE}/distributed", params=_query(meta)).json()
    put = _put(client, TRAINING, meta, {"defaults": {"backoffLimit": 5}})
    assert put.status_code == 200, put.json()
    assert put.json()["effective"]["defaults"]["backoffLimit"] == 5
    specs = {
        "distributed": {"distributedFramework": "PyTorch"},
        "inference": {"servingPort": {"container": 80}},
    }
    templates = []
    for kind in TEMPLATE_KINDS:
        assert kind.template_model is not None
        data = {"meta": {"name": kind.name}, "spec": {"image": "a:1", **specs.get(kind.name, {})}}
        data |= {} if kind is DISTRIBUTED else {"kind": kind.name}
        doc = kind.template_model.model_validate(data)
        templates.append(
            Template(kind.name, Scope("project", "vision"), Source(f"{kind.name}.yaml", data), doc)
        )  # type: ignore[arg-type]
    with client.app.state.store.read(Principal("admin", "system-admin")) as ctx:
        place = ctx.placement("project", int(ids.projects["vision"]))
        combined = {
            t.kind.name: compose(org_for(ctx, place, t), t, place.view()).to_response()["combinedSpec"]
            for t in templates
        }
    shared = before["effective"]["defaults"]["worker"]["backoffLimit"]  # the system's, for every kind
    assert shared == 6
    assert {name: spec.get("backoffLimit") for name, spec in combined.items()} == {
        "distributed": 6,
        "training": 5,
        "workspace": 6,  # the shared default: a workspace has the field, the training policy is not its
        "inference": None,  # Run:ai's inference has no backoffLimit
    }
    # The distributed policy of the project is as it was.
    assert client.get(f"{BASE}/distributed", params=_query(meta)).json() == before


# -- storage: db export, db import, db upgrade ------------------------------------------------------------


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _every_policy(client: Any, ids: Ids) -> dict[tuple[str, str], Any]:
    """Each kind's policy answer of the tenant and of each project (ETags included)."""
    scopes = {"tenant": {"scope": "tenant"}} | {
        name: {"scope": "project", "projectId": ids.projects[name]} for name in ("vision", "recsys")
    }
    out = {}
    for kind in KINDS:
        for name, params in scopes.items():
            got = client.get(_url(kind), params=params)
            out[(kind.name, name)] = (got.headers["ETag"], got.json())
    return out


def test_each_kind_s_policy_round_trips_through_export_and_import(
    make_app: MakeApp, database_url: str, tmp_path: Path
) -> None:
    """Each kind's policy is its own file of its scope's folder in an export (``training-policy.yaml``...),
    ``policy.yaml`` as before; an import into an empty database gives back every policy, versions and
    audit fields included."""
    from template_engine import load_org
    from template_engine.org import Scope
    from template_engine.service.exporter import export_folder
    from template_engine.service.importer import import_folder
    from template_engine.service.storage.database import create_db_engine, ensure_schema, transaction
    from template_engine.service.storage.tables import metadata

    with open_client(make_app(database_url)) as client:
        ids = Ids(client)
        vision = _project(ids, "vision")
        datasets = ids.assets[("datasource", "datasets")]
        trained = {"defaults": {"backoffLimit": 5}, "rules": {"completions": {"max": 8}}}
        assert _put(client, TRAINING, vision, trained).status_code == 200
        assert _put(client, TRAINING, vision, {**trained, "imposedAssets": [datasets]}).status_code == 200
        served = {"leader": {"image": "vllm:1"}, "worker": {"image": "vllm:1"}}
        # the project's own (the tenant's is the example org's file, exported as written below)
        assert _put(client, LEADER_WORKER, vision, {"defaults": served}).status_code == 200
        before = _every_policy(client, ids)
    assert before[("training", "vision")][0] == '"2"'
    engine = create_db_engine(database_url)
    first, second = tmp_path / "first", tmp_path / "second"
    export_folder(engine, first)
    for kind in KINDS:  # an imported policy file is exported as it was written, comments included
        file = TEMPLATES / "system" / kind.policy_file
        if file.exists():
            assert (first / "system" / kind.policy_file).read_bytes() == file.read_bytes()
    written = yaml.safe_load((first / "projects/vision" / TRAINING.policy_file).read_text())
    assert written == {**trained, "imposedAssets": ["datasets"]}
    assert yaml.safe_load((first / "projects/vision" / LEADER_WORKER.policy_file).read_text()) == {
        "defaults": served
    }
    exported = load_org(first)
    assert not exported.broken
    assert exported.policy_of(Scope("project", "vision"), TRAINING).value_defaults == {
        "worker": {"backoffLimit": 5}
    }
    with transaction(engine, write=True) as connection:
        metadata.drop_all(connection)
        connection.exec_driver_sql("DROP TABLE alembic_version")  # an empty database
    ensure_schema(engine)
    report = import_folder(engine, first)
    policy_files = [path for path in first.rglob("*.yaml") if path.name.endswith("policy.yaml")]
    assert report is not None and report.added["policies"] == len(policy_files)
    export_folder(engine, second)
    assert _files(first) == _files(second)
    with open_client(make_app(database_url, seed=False)) as client:
        assert _every_policy(client, ids) == before
    engine.dispose()


def test_db_upgrade_from_revision_0005_keeps_every_policy_row(sqlite_url: str) -> None:
    """A database at revision 0005 (before issue 32: no ``kind_policies``) upgraded to the head keeps every
    policy and defaults row as it was, and has the table of the other kinds' policies, empty."""
    from sqlalchemy import inspect

    from template_engine.service.importer import import_folder
    from template_engine.service.storage.database import create_db_engine, ensure_schema, upgrade
    from template_engine.service.storage.repository import Repository

    engine = create_db_engine(sqlite_url)
    ensure_schema(engine)
    import_folder(engine, TEMPLATES)
    with engine.connect() as connection:  # the rows as the head reads them
        before = (Repository(connection).all_policies(), Repository(connection).all_defaults())
    assert len(before[0]) == 3 and before[1]
    downgrade(engine, "0005")
    with engine.connect() as connection:
        assert not inspect(connection).has_table("kind_policies")
        assert connection.exec_driver_sql("SELECT count(*) FROM policies").scalar_one() == 3
    result = upgrade(engine)
    assert result.found.revision == "0005"
    with engine.connect() as connection:
        repo = Repository(connection)
        assert (repo.all_policies(), repo.all_defaults()) == before
        assert repo.every_policy() == before[0]
    engine.dispose()
