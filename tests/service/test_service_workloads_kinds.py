"""Workloads of every kind (issue 32, item 6): ``/api/v1/workloads/{trainings,workspaces,inferences}`` submit,
read and delete, each composing its own kind; a template of another kind refused naming both; a bare
submission held to its kind's spec model; ``workloads.kind`` stored, and kept ``distributed`` for every
workload of a database at revision 0005 upgraded.  Every answer is checked against Run:ai's whole document
on the way in (``conftest`` installs :mod:`sdk_helpers`' check).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from alembic.config import Config
from alembic.runtime.environment import EnvironmentContext
from click.testing import CliRunner
from conftest import ADMIN, CLUSTER, VISION, bearer, open_client
from fastapi import FastAPI
from fastapi.testclient import TestClient
from kind_templates import ONE_ROLE, kinds_org, template_name
from sdk_helpers import Lazy, bearer_client, parsed, serve, whole_document, whole_schemas
from sqlalchemy import MetaData, Table, insert, select

from template_engine.cli import main
from template_engine.kinds import DISTRIBUTED, KINDS, WorkloadKind
from template_engine.service.app import create_app
from template_engine.service.bookkeeping import META_FILE
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.settings import Settings
from template_engine.service.storage import database
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import create_db_engine, ensure_schema, head_revision
from template_engine.service.storage.tables import now

W = "/api/v1/workloads"
#: Every kind with workload routes, distributed first.
WORKLOAD_KINDS = tuple(k for k in KINDS if k.workload_segment is not None)


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory, auth_file: Path) -> Iterator[FastAPI]:
    """The example org with a system template of each one-role kind, seeded (``db import``) on SQLite."""
    root = tmp_path_factory.mktemp("kinds")
    settings = Settings(
        database_url=f"sqlite:///{root / 'db.sqlite'}", auth_file=auth_file, seed=kinds_org(root)
    )
    app = create_app(settings)
    with TestClient(app):
        yield app


@pytest.fixture
def client(service: FastAPI) -> Iterator[TestClient]:
    with open_client(service) as c:
        yield c


def _ids(client: TestClient) -> tuple[dict[str, str], dict[str, str]]:
    """The projects by name, and the system templates by name (every kind's, read from the table)."""
    projects = {p["name"]: p["id"] for p in client.get("/api/v1/org-unit/projects").json()["projects"]}
    entries = client.get("/api/v1/workload-templates", params={"limit": 500}).json()["entries"]
    templates = {e["meta"]["name"]: e["meta"]["id"] for e in entries if e["meta"]["scopeType"] == "system"}
    return projects, templates


def _stored_kind(app: FastAPI, workload_id: str) -> str:
    with app.state.store.engine.connect() as connection:
        query = select(t.workloads.c.kind).where(t.workloads.c.id == workload_id)
        return str(connection.execute(query).scalar_one())


def _url(kind: WorkloadKind, workload_id: str | None = None) -> str:
    return f"{W}/{kind.workload_segment}" + (f"/{workload_id}" if workload_id else "")


def _body(project: str, name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "projectId": project, "clusterId": CLUSTER, **extra}


@pytest.mark.parametrize("kind", ONE_ROLE, ids=lambda k: k.name)
def test_a_workload_of_each_kind_is_composed_stored_and_read_at_its_own_path(
    kind: WorkloadKind, client: TestClient, service: FastAPI
) -> None:
    projects, templates = _ids(client)
    env = [{"name": "MODE", "value": kind.name}]
    body = _body(
        projects["vision"],
        f"own-{kind.name}",
        templateId=templates[template_name(kind)],
        spec={"environmentVariables": env},
    )
    answer = client.post(_url(kind), json=body)
    assert answer.status_code == 202, answer.json()
    workload = answer.json()
    # Run:ai's <Kind>1: WorkloadMeta1 and the spec, no master keys.
    assert set(workload) == {
        "name",
        "requestedName",
        "workloadId",
        "projectId",
        "departmentId",
        "clusterId",
        "createdBy",
        "createdAt",
        "desiredPhase",
        "actualPhase",
        "deletedAt",
        "spec",
    }
    spec = workload["spec"]
    assert {"name": "MODE", "value": kind.name} in spec["environmentVariables"]  # the submission
    assert (
        spec["image"]
        == client.get(f"/api/v1/workload-templates/{templates[template_name(kind)]}").json()["spec"]["image"]
    )  # the template
    # The project's (and the system's) defaults, projected onto the kind's fields.
    assert {"name": "project", "value": "vision"} in spec["labels"]
    assert set(spec) <= set(kind.fields()) | {"imagePullSecrets"}
    assert _stored_kind(service, workload["workloadId"]) == kind.name
    got = client.get(_url(kind, workload["workloadId"]))
    assert got.status_code == 200 and got.json() == workload
    for other in WORKLOAD_KINDS:
        if other is not kind:
            missing = client.get(_url(other, workload["workloadId"]))
            assert missing.status_code == 404, other.name
            # The path's kind is named, not the workload's.
            wanted = f"Resource id not found: {other.noun} workload {workload['workloadId']}."
            assert missing.json()["message"] == wanted
    detailed = client.get(f"{W}/{workload['workloadId']}").json()
    assert (detailed["type"], detailed["name"]) == (kind.workload_type, f"own-{kind.name}")
    listed = client.get(W, params={"search": f"own-{kind.name}"}).json()["workloads"]
    assert [w["type"] for w in listed] == [kind.workload_type]


def test_a_distributed_workload_stays_at_its_own_path(client: TestClient, service: FastAPI) -> None:
    projects, _ = _ids(client)
    body = _body(
        projects["vision"], "still-distributed", spec={"image": "a:1", "distributedFramework": "PyTorch"}
    )
    answer = client.post(_url(DISTRIBUTED), json=body)
    assert answer.status_code == 202, answer.json()
    workload = answer.json()
    assert workload["masterSpecSameAsWorker"] is True and workload["masterSpec"] is None
    assert _stored_kind(service, workload["workloadId"]) == "distributed"
    for kind in ONE_ROLE:
        assert client.get(_url(kind, workload["workloadId"])).status_code == 404
        assert client.delete(_url(kind, workload["workloadId"])).status_code == 404
    assert client.get(f"{W}/{workload['workloadId']}").json()["type"] == "Distributed"


@pytest.mark.parametrize("kind", WORKLOAD_KINDS, ids=lambda k: k.name)
def test_a_template_of_another_kind_is_refused_naming_both_kinds(
    kind: WorkloadKind, client: TestClient
) -> None:
    projects, templates = _ids(client)
    others = [k for k in WORKLOAD_KINDS if k is not kind]
    for other in others:
        name = template_name(other) if other in ONE_ROLE else "pytorch-elastic"
        body = _body(projects["vision"], f"wrong-{other.name}", templateId=templates[name])
        answer = client.post(_url(kind), json=body)
        assert answer.status_code == 400, (kind.name, other.name)
        error = answer.json()
        assert [p["field"] for p in error["problems"]] == ["templateId"]
        message = error["problems"][0]["message"]
        assert f"is a {other.name} template" in message and f"a {kind.name} workload" in message, message
        assert error["problems"][0]["expected"] == f"the id of a {kind.name} template, or none"


def test_a_bare_submission_is_held_to_its_kinds_spec_model(client: TestClient, service: FastAPI) -> None:
    """The spec of a submission without a template is the kind's: a field the kind lacks is a 400 naming it
    (an inference has no backoffLimit, a workspace no completions, none of them numWorkers); a field only
    the kind has is taken."""
    projects, _ = _ids(client)
    by_name = {k.name: k for k in ONE_ROLE}
    refused = {
        "inference": {"image": "a:1", "servingPort": {"container": 80}, "backoffLimit": 3},
        "workspace": {"image": "a:1", "completions": 2},
        "training": {"image": "a:1", "numWorkers": 2},
    }
    for name, spec in refused.items():
        answer = client.post(_url(by_name[name]), json=_body(projects["vision"], f"bare-{name}", spec=spec))
        assert answer.status_code == 400, name
        (field,) = set(spec) - {"image", "servingPort"}
        problem = next(p for p in answer.json()["problems"] if p["field"] == f"spec.{field}")
        assert problem["message"].startswith(f"unknown field {field!r}")
    taken = client.post(
        _url(by_name["training"]),
        json=_body(projects["vision"], "bare-training", spec={"image": "a:1", "completions": 3}),
    )
    assert taken.status_code == 202, taken.json()
    assert taken.json()["spec"]["completions"] == 3
    assert {"name": "project", "value": "vision"} in taken.json()["spec"]["labels"]  # the defaults, composed
    assert _stored_kind(service, taken.json()["workloadId"]) == "training"
    # A kind of one role has no master: the distributed request's master fields are unknown fields.
    master = {"spec": {"image": "a:1"}, "masterSpecSameAsWorker": False, "masterSpec": {"image": "b:1"}}
    refused_master = client.post(
        _url(by_name["workspace"]), json=_body(projects["vision"], "master", **master)
    )
    assert refused_master.status_code == 400
    assert [p["field"] for p in refused_master.json()["problems"]] == ["masterSpecSameAsWorker", "masterSpec"]


def test_a_bare_submission_not_runnable_names_its_kinds_mandatory_fields(client: TestClient) -> None:
    projects, _ = _ids(client)
    inference = next(k for k in ONE_ROLE if k.mandatory["worker"] != (("image",),))
    answer = client.post(_url(inference), json=_body(projects["vision"], "no-port", spec={"image": "a:1"}))
    assert answer.status_code == 400
    issues = answer.json()["complianceIssues"]
    assert {
        "field": "servingPort.container",
        "details": "mandatory servingPort.container is not provided",
        "rule": "required",
    } in issues


def test_pull_secrets_of_a_one_role_workload_are_kept(client: TestClient) -> None:
    """Run:ai's TrainingSpecSpec has imagePullSecrets, its TrainingTemplateSpec not: the submission's are
    set aside while composing and added to the composed spec, keyed by name."""
    projects, templates = _ids(client)
    kind = ONE_ROLE[0]
    pulls = [{"name": "regcred", "userCredential": False}]
    body = _body(
        projects["vision"],
        "pulls",
        templateId=templates[template_name(kind)],
        spec={"imagePullSecrets": pulls},
    )
    answer = client.post(_url(kind), json=body)
    assert answer.status_code == 202, answer.json()
    assert answer.json()["spec"]["imagePullSecrets"] == pulls
    twice = {"imagePullSecrets": pulls * 2}
    refused = client.post(_url(kind), json={**body, "name": "pulls-twice", "spec": twice})
    assert refused.status_code == 400
    assert [p["field"] for p in refused.json()["problems"]] == ["spec.imagePullSecrets[1]"]


@pytest.mark.parametrize("kind", ONE_ROLE, ids=lambda k: k.name)
def test_a_workload_is_deleted_at_its_own_path_only(kind: WorkloadKind, client: TestClient) -> None:
    projects, templates = _ids(client)
    body = _body(projects["vision"], f"gone-{kind.name}", templateId=templates[template_name(kind)])
    workload_id = client.post(_url(kind), json=body).json()["workloadId"]
    assert client.delete(_url(DISTRIBUTED, workload_id)).status_code == 404
    assert client.post(f"{_url(DISTRIBUTED, workload_id)}/suspend").status_code == 404
    deleted = client.delete(_url(kind, workload_id))
    assert deleted.status_code == 202 and deleted.json() == {
        "code": 202,
        "message": "Request has been accepted.",
    }
    got = client.get(_url(kind, workload_id)).json()
    assert got["desiredPhase"] == "Deleted" and got["deletedAt"] is not None
    assert client.delete(_url(kind, workload_id)).status_code == 202  # again: nothing changes
    gone = client.get(W, params={"deleted": "true", "search": f"gone-{kind.name}"}).json()["workloads"]
    assert [w["type"] for w in gone] == [kind.workload_type]
    # The name is free again in the project.
    assert client.post(_url(kind), json=body).status_code == 202


@pytest.mark.parametrize("kind", ONE_ROLE, ids=lambda k: k.name)
def test_a_workload_is_suspended_and_resumed_where_run_ai_does(
    kind: WorkloadKind, client: TestClient
) -> None:
    """Trainings and workspaces are suspended and resumed as distributed workloads are; inferences are not
    (Run:ai has no such path for them)."""
    projects, templates = _ids(client)
    body = _body(projects["vision"], f"paused-{kind.name}", templateId=templates[template_name(kind)])
    workload_id = client.post(_url(kind), json=body).json()["workloadId"]
    if not kind.workload_suspends:
        assert client.post(f"{_url(kind, workload_id)}/suspend").status_code == 404
        return
    for action, desired, actual in (("suspend", "Stopped", "Stopping"), ("resume", "Running", "Resuming")):
        answer = client.post(f"{_url(kind, workload_id)}/{action}")
        assert answer.status_code == 202, answer.json()
        got = client.get(_url(kind, workload_id)).json()
        assert (got["desiredPhase"], got["actualPhase"]) == (desired, actual)
    assert client.post(f"{_url(DISTRIBUTED, workload_id)}/suspend").status_code == 404
    assert client.delete(_url(kind, workload_id)).status_code == 202
    assert client.post(f"{_url(kind, workload_id)}/resume").status_code == 409  # deleted


def test_the_kinds_that_suspend_are_those_run_ai_suspends() -> None:
    """``workload_suspends`` of the kind table, against Run:ai's whole document: a kind suspends where
    Run:ai has ``/api/v1/workloads/<segment>/{workloadId}/suspend``."""
    paths = whole_schemas().doc["paths"]
    for kind in WORKLOAD_KINDS:
        suspend = f"{W}/{kind.workload_segment}/{{workloadId}}/suspend"
        assert kind.workload_suspends == (suspend in paths), kind.name
        assert kind.workload_suspends == (suspend.replace("suspend", "resume") in paths), kind.name


def test_a_project_editor_submits_in_its_project_only(service: FastAPI) -> None:
    with open_client(service, VISION) as editor, open_client(service, ADMIN) as admin:
        projects, templates = _ids(admin)
        kind = ONE_ROLE[1]
        body = _body(projects["vision"], "editor", templateId=templates[template_name(kind)])
        assert editor.post(_url(kind), json=body).status_code == 202
        elsewhere = editor.post(_url(kind), json={**body, "projectId": projects["nlp"]})
        assert elsewhere.status_code == 403


def test_db_export_and_import_keep_each_workloads_kind(
    service: FastAPI, client: TestClient, tmp_path: Path
) -> None:
    """An export says the kind of each workload that is not distributed (``kind:``; a distributed one's
    record is as before the kinds), and an import into an empty database restores it."""
    projects, templates = _ids(client)
    for kind in WORKLOAD_KINDS:
        name = template_name(kind) if kind in ONE_ROLE else "pytorch-elastic"
        body = _body(projects["vision"], f"exported-{kind.name}", templateId=templates[name])
        assert client.post(_url(kind), json=body).status_code == 202
    export_folder(service.state.store.engine, tmp_path / "export")
    records = yaml.safe_load((tmp_path / "export" / META_FILE).read_text())["workloads"]
    said = {r["name"]: r.get("kind") for r in records if r["name"].startswith("exported-")}
    assert said == {f"exported-{k.name}": (None if k.is_distributed else k.name) for k in WORKLOAD_KINDS}
    copy = create_db_engine(f"sqlite:///{tmp_path / 'copy.sqlite'}")
    try:
        ensure_schema(copy)
        import_folder(copy, tmp_path / "export")
        kinds: dict[str, dict[str, str]] = {}
        for label, engine in (("original", service.state.store.engine), ("copy", copy)):
            with engine.connect() as connection:
                query = select(t.workloads.c.id, t.workloads.c.kind)
                kinds[label] = {str(i): str(k) for i, k in connection.execute(query).all()}
    finally:
        copy.dispose()
    assert kinds["copy"] == kinds["original"]
    assert set(kinds["copy"].values()) == {k.name for k in WORKLOAD_KINDS}


# -- through runapy 1.224.0 ----------------------------------------------------------------------------------

m = Lazy("runai.models")
runai_client = Lazy("runai.runai_client")

#: runapy's names for each one-role kind: its API (``RunaiClient.workloads.<api>``), create, get and delete
#: operations, spec and answer models.
SDK: dict[str, tuple[str, str, str, str, str, str]] = {
    "training": ("trainings", "create_training1", "get_training", "delete_training", "Training", "Training1"),
    "workspace": (
        "workspaces",
        "create_workspace1",
        "get_workspace",
        "delete_workspace",
        "Workspace",
        "Workspace1",
    ),
    "inference": (
        "inferences",
        "create_inference1",
        "get_inference",
        "delete_inference",
        "Inference",
        "Inference1",
    ),
}


def test_a_workload_of_each_kind_through_the_sdk(tmp_path: Path, auth_file: Path) -> None:
    """A training, a workspace and an inference submitted with runapy 1.224.0 from templates of their kinds
    (read by ``db import``), read back, listed, deleted; every answer checked against Run:ai's whole document
    and parsed into the SDK's models."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'db.sqlite'}", auth_file=auth_file, seed=kinds_org(tmp_path)
    )
    with whole_document(), serve(create_app(settings)) as live:
        sdk = runai_client.RunaiClient(bearer_client(live.url, ADMIN))
        with TestClient(
            create_app(Settings(database_url=settings.database_url, auth_file=auth_file))
        ) as http:
            http.headers.update(bearer(ADMIN))
            projects, templates = _ids(http)
        submitted = {}
        for kind in ONE_ROLE:
            api_name, create, get, delete, spec_model, answer_model = SDK[kind.name]
            api = getattr(sdk.workloads, api_name)
            request = getattr(m, f"{kind.workload_type}CreationRequest")(
                name=f"sdk-{kind.name}",
                projectId=projects["vision"],
                clusterId=CLUSTER,
                templateId=templates[template_name(kind)],
                spec=getattr(m, f"{spec_model}SpecSpec")(
                    environmentVariables=[m.EnvironmentVariable(name="VIA", value="runapy")]
                ),
            )
            answer = getattr(api, create)(request)
            assert answer.status_code == 202
            workload = parsed(answer_model, answer.data)
            assert workload.requested_name == f"sdk-{kind.name}" and workload.project_id == projects["vision"]
            assert "VIA" in {e.name for e in workload.spec.environment_variables}
            assert "HTTP_PROXY" in {e.name for e in workload.spec.environment_variables}  # vision's defaults
            got = parsed(answer_model, getattr(api, get)(workload.workload_id).data)
            assert got.workload_id == workload.workload_id and got.spec.image == workload.spec.image
            submitted[kind.name] = (api, delete, workload)
        training = submitted["training"][2]
        assert (training.spec.completions, training.spec.parallelism) == (2, 1)
        trainings = sdk.workloads.trainings
        for action, desired in (
            (trainings.suspend_training, "Stopped"),
            (trainings.resume_training, "Running"),
        ):
            assert parsed("HttpResponse", action(training.workload_id).data).code == 202
            assert (
                parsed("Training1", trainings.get_training(training.workload_id).data).desired_phase
                == desired
            )
        assert submitted["inference"][2].spec.serving_port.container == 8000
        listed = parsed("GetWorkloads200Response", sdk.workloads.workloads.get_workloads(search="sdk-").data)
        assert sorted(w.type for w in listed.workloads) == sorted(k.workload_type for k in ONE_ROLE)
        for api, delete, workload in submitted.values():
            assert parsed("HttpResponse", getattr(api, delete)(workload.workload_id).data).code == 202
        gone = parsed("GetWorkloads200Response", sdk.workloads.workloads.get_workloads(deleted=True).data)
        assert {w.name for w in gone.workloads} == {f"sdk-{k.name}" for k in ONE_ROLE}


# -- db upgrade from revision 0005 --------------------------------------------------------------------------


def _at_revision_0005(url: str) -> None:
    """An empty database brought to revision 0005 (the schema before the kinds), as that release left it."""
    engine = create_db_engine(url)
    scripts = database._scripts()
    try:
        with engine.begin() as connection:

            def steps(current: Any, _context: Any) -> Any:
                return scripts._upgrade_revs("0005", current)

            with EnvironmentContext(Config(), scripts, fn=steps, destination_rev="0005") as environment:
                environment.configure(connection=connection)
                with environment.begin_transaction():
                    environment.run_migrations()
            tables = MetaData()
            workloads = Table("workloads", tables, autoload_with=connection)
            assert "kind" not in workloads.c  # revision 0005's table
            departments = Table("departments", tables, autoload_with=connection)
            projects = Table("projects", tables, autoload_with=connection)
            audit = {
                "version": 1,
                "created_by": "old",
                "created_at": now(),
                "updated_by": "old",
                "updated_at": now(),
            }
            connection.execute(insert(departments).values(id=1, name="research", **audit))
            connection.execute(insert(projects).values(id=2, name="vision", department_id=1, **audit))
            for number, deleted in ((1, None), (2, now())):
                row = {
                    "id": f"00000000-0000-4000-8000-00000000000{number}",
                    "name": f"old-{number}",
                    "requested_name": f"old-{number}",
                    "project_id": 2,
                    "department_id": 1,
                    "cluster_id": CLUSTER,
                    "desired_phase": "Deleted" if deleted else "Running",
                    "actual_phase": "Creating",
                    "master_same_as_worker": True,
                    "spec": {"image": "a:1", "distributedFramework": "PyTorch"},
                    "deleted_at": deleted,
                    **audit,
                }
                connection.execute(insert(workloads).values(**row))
    finally:
        engine.dispose()


def test_db_upgrade_from_revision_0005_keeps_every_workload_distributed(
    database_url: str, auth_file: Path
) -> None:
    _at_revision_0005(database_url)
    upgraded = CliRunner().invoke(
        main, ["db", "upgrade", "--database-url", database_url], catch_exceptions=False
    )
    assert upgraded.exit_code == 0, upgraded.output
    assert f"from revision 0005 to revision {head_revision()}" in upgraded.output, upgraded.output
    engine = create_db_engine(database_url)
    with engine.connect() as connection:
        kinds = dict(connection.execute(select(t.workloads.c.id, t.workloads.c.kind)).all())
    engine.dispose()
    assert kinds == {
        "00000000-0000-4000-8000-000000000001": "distributed",
        "00000000-0000-4000-8000-000000000002": "distributed",
    }
    with TestClient(create_app(Settings(database_url=database_url, auth_file=auth_file))) as client:
        client.headers.update(bearer(ADMIN))
        for workload_id in kinds:
            got = client.get(_url(DISTRIBUTED, workload_id))
            assert got.status_code == 200, got.json()
            assert got.json()["spec"] == {"image": "a:1", "distributedFramework": "PyTorch"}
            assert all(client.get(_url(k, workload_id)).status_code == 404 for k in ONE_ROLE)
        listed = (
            client.get(W).json()["workloads"] + client.get(W, params={"deleted": "true"}).json()["workloads"]
        )
        assert sorted((w["name"], w["type"]) for w in listed) == [
            ("old-1", "Distributed"),
            ("old-2", "Distributed"),
        ]
