"""Templates of every kind over HTTP (issue 32): training, workspace and inference templates beside the
distributed ones, at ``/api/v1/workload-templates/{trainings,workspaces,inferences}`` and in the any-type
list, stored with their kind (``templates.kind``), upgraded from schema revision 0005, carried by
``db import`` and ``db export``, and driven by Run:ai's own SDK (runapy 1.224.0).

Every answer here is checked against Run:ai's whole OpenAPI document as it arrives (``sdk_helpers``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
import yaml
from click.testing import CliRunner
from conftest import TEMPLATES, VISION, Ids, MakeApp, bearer, open_client
from schema_steps import downgrade
from sdk_helpers import CONFORMANCE, Lazy, LiveServer, bearer_client, install, parsed, serve
from sqlalchemy import inspect

from template_engine.cli import main
from template_engine.kinds import TEMPLATE_KINDS
from template_engine.service.app import create_app
from template_engine.service.settings import Settings
from template_engine.service.storage.database import create_db_engine, read_schema, transaction
from template_engine.service.storage.repository import Repository, TemplateRow

if TYPE_CHECKING:
    from runai.api import WorkloadTemplatesApi

install()

BASE = "/api/v1/workload-templates"
SEGMENT = {kind.name: kind.template_segment for kind in TEMPLATE_KINDS}
ONE_ROLE_KEYS = {"meta", "spec", "assets", "runnable", "combinedSpec"}
#: A spec each kind takes (an inference needs its serving port to run).
SPECS: dict[str, dict[str, Any]] = {
    "training": {"image": "python:3.11", "command": "python train.py"},
    "workspace": {"image": "jupyter/scipy-notebook", "exposedUrls": [{"container": 8888}]},
    "inference": {"image": "vllm/vllm-openai:v0.6", "servingPort": {"container": 8000}},
}


def _url(kind: str, template_id: str | None = None) -> str:
    return f"{BASE}/{SEGMENT[kind]}" + (f"/{template_id}" if template_id else "")


def _body(name: str, kind: str, scope: str = "system", scope_id: Any = None, **spec: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "scopeType": scope}
    if scope_id is not None:
        meta["scopeId"] = str(scope_id)
    return {"meta": meta, "spec": {**SPECS[kind], **spec}}


def _create(client: Any, kind: str, name: str, **more: Any) -> dict[str, Any]:
    response = client.post(_url(kind), json=_body(name, kind, **more))
    assert response.status_code == 202, response.json()
    body: dict[str, Any] = response.json()
    return body


# -- the routes of each kind --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["training", "workspace", "inference"])
def test_a_template_of_each_kind_is_made_and_read_in_its_kinds_shape(
    client: Any, ids: Ids, kind: str
) -> None:
    workload_type = {k.name: k.workload_type for k in TEMPLATE_KINDS}[kind]
    made = {
        "system": _create(client, kind, f"{kind}-sys"),
        "department": _create(
            client, kind, f"{kind}-dept", scope="department", scope_id=ids.departments["research"]
        ),
        "project": _create(client, kind, f"{kind}-proj", scope="project", scope_id=ids.projects["vision"]),
    }
    for scope, body in made.items():
        assert set(body) == ONE_ROLE_KEYS  # no master keys: Run:ai's shape of a kind of one replica
        assert (body["meta"]["workloadType"], body["meta"]["scopeType"]) == (workload_type, scope)
        assert body["spec"] == SPECS[kind]
        assert body["runnable"]["isRunnable"] is True, body["runnable"]
        assert body["combinedSpec"]["image"] == SPECS[kind]["image"]
        template_id = body["meta"]["id"]
        got = client.get(_url(kind, template_id))
        assert got.status_code == 200 and got.headers["ETag"] == '"1"'
        assert got.json() == body
        anything = client.get(f"{BASE}/{template_id}")  # Run:ai's SupersetTemplate: the kind's body
        assert anything.status_code == 200 and anything.json() == body
    # the system defaults reach every kind (projected onto its fields): the org label of the example org
    assert {"name": "org", "value": "acme-ai"} in made["system"]["combinedSpec"]["labels"]


def test_a_body_is_held_to_its_kinds_model(client: Any) -> None:
    # A training has no master, no masterSpecSameAsWorker and no distributedFramework; a body says no kind.
    body = _body("wrong", "training", distributedFramework="PyTorch")
    body |= {"master": {"spec": {"image": "x"}}, "masterSpecSameAsWorker": False, "kind": "training"}
    refused = client.post(_url("training"), json=body)
    assert refused.status_code == 400
    fields = {p.get("field") for p in refused.json()["problems"]}
    assert {"master", "masterSpecSameAsWorker", "kind", "spec.distributedFramework"} <= fields, fields
    # servingPort is an inference's, not a workspace's
    served = client.post(_url("workspace"), json=_body("ws", "workspace", servingPort={"container": 1}))
    assert served.status_code == 400
    assert any(p.get("field") == "spec.servingPort" for p in served.json()["problems"])
    assert client.post(_url("inference"), json=_body("inf", "inference")).status_code == 202


@pytest.mark.parametrize("kind", ["distributed", "training", "workspace", "inference"])
def test_an_empty_text_run_ai_requires_a_character_of_is_refused(client: Any, kind: str) -> None:
    """Run:ai's ``Image``, ``Command``, ``Args`` and ``WorkingDir`` have ``minLength: 1``: a template that
    stored ``command: ""`` answered a body Run:ai's schema refuses (found by the schemathesis run over the
    workspaces' list); every door refuses it now (``loader/values.py``)."""
    fields = ("image", "command", "args", "workingDir")
    spec = {"distributedFramework": "PyTorch"} if kind == "distributed" else {}
    body = {
        "meta": {"name": f"empty-{kind}", "scopeType": "system"},
        "spec": spec | dict.fromkeys(fields, ""),
    }
    refused = client.post(_url(kind), json=body)
    assert refused.status_code == 400
    problems = {p["field"]: p for p in refused.json()["problems"]}
    assert set(problems) == {f"spec.{f}" for f in fields}, problems
    assert problems["spec.command"]["expected"] == "at least one character (leave the field out for no value)"


@pytest.mark.parametrize("kind", ["training", "workspace", "inference"])
def test_the_document_bounds_each_kinds_texts_as_the_service_does(client: Any, kind: str) -> None:
    """The service's OpenAPI document states a kind's text bounds (``openapi_limits``) as it does the
    distributed spec's: it takes nothing the service refuses."""
    from test_openapi_limits import _body, _errors

    from template_engine.loader.values import TEXT_BOUNDS

    bound = TEXT_BOUNDS[("command",)][0]
    schema = _body("post", _url(kind))
    over = _body_of(kind, command="a" * (bound + 1))
    assert client.post(_url(kind), json=over).status_code == 400
    assert _errors(schema, over), f"the document takes {bound + 1} characters of {kind} command"
    assert _errors(schema, _body_of(kind, command="a" * bound)) == []


def _body_of(kind: str, **spec: Any) -> dict[str, Any]:
    return _body(f"limits-{kind}", kind, **spec)


def test_an_inference_without_its_serving_port_is_not_runnable(client: Any) -> None:
    body = _body("no-port", "inference")
    del body["spec"]["servingPort"]
    made = client.post(_url("inference"), json=body).json()
    assert made["runnable"]["isRunnable"] is False
    assert any("servingPort" in i["field"] for i in made["runnable"]["issues"]), made["runnable"]


def test_another_kinds_id_is_not_found_under_a_kinds_route(client: Any, ids: Ids) -> None:
    training = _create(client, "training", "only-training")["meta"]["id"]
    distributed = ids.template("pytorch-ddp") if ("system", "pytorch-ddp") in ids.templates else None
    distributed = distributed or next(iter(ids.templates.values()))
    for kind in ("workspace", "inference", "distributed"):
        assert client.get(_url(kind, training)).status_code == 404
        assert client.delete(_url(kind, training)).status_code == 404
    for kind in ("workspace", "distributed"):
        assert client.patch(_url(kind, training), json={"spec": {"image": "x"}}).status_code == 404
        assert client.put(_url(kind, training), json={"meta": {"name": "x"}}).status_code == 404
    assert client.get(_url("training", distributed)).status_code == 404
    assert client.get(_url("training", training)).status_code == 200  # still there: nothing was deleted


def test_an_inference_template_is_not_replaced_or_patched(client: Any) -> None:
    """Run:ai declares no PUT or PATCH of an inference template: the answer to an undeclared method, 405."""
    template_id = _create(client, "inference", "fixed")["meta"]["id"]
    assert client.put(_url("inference", template_id), json={"meta": {"name": "fixed"}}).status_code == 405
    assert client.patch(_url("inference", template_id), json={"spec": {"image": "x"}}).status_code == 405
    assert client.delete(_url("inference", template_id)).status_code == 204
    assert client.get(f"{BASE}/{template_id}").status_code == 404


def test_every_answer_of_every_kind_is_checked_against_run_ai_s_whole_document(client: Any) -> None:
    """Each operation of each kind answers a body checked against the schema Run:ai's whole document declares
    for it (``TrainingTemplate``, ``WorkspaceTemplatesListResponse``, ``SupersetTemplate``...), not left
    unchecked: the conformance check counts what it checked, by operation and kind of check."""
    before = dict(CONFORMANCE.checked)
    for kind in SPECS:
        made = _create(client, kind, f"checked-{kind}")["meta"]["id"]
        assert client.get(_url(kind)).status_code == 200
        assert client.get(_url(kind, made)).status_code == 200
        assert client.get(f"{BASE}/{made}").status_code == 200
        if kind != "inference":
            assert client.patch(_url(kind, made), json={"spec": {"image": "b:1"}}).status_code == 200
            body = {"meta": {"name": f"checked-{kind}"}, "spec": SPECS[kind]}
            assert client.put(_url(kind, made), json=body).status_code == 200
        assert client.delete(_url(kind, made)).status_code == 204
    assert client.get(BASE).status_code == 200
    checked = {key for key, count in CONFORMANCE.checked.items() if count > before.get(key, 0)}
    for kind, segment in SEGMENT.items():
        if kind == "distributed":
            continue
        operations = [("POST", f"{BASE}/{segment}"), ("GET", f"{BASE}/{segment}")]
        operations += [
            ("GET", f"{BASE}/{segment}/{{templateId}}"),
            ("DELETE", f"{BASE}/{segment}/{{templateId}}"),
        ]
        if kind != "inference":
            operations += [(m, f"{BASE}/{segment}/{{templateId}}") for m in ("PUT", "PATCH")]
        for method, path in operations:
            assert (method, path, "schema") in checked, (method, path, checked)
    assert ("GET", BASE, "schema") in checked
    assert ("GET", f"{BASE}/{{templateId}}", "schema") in checked


def test_put_patch_delete_of_a_training_with_etags(client: Any) -> None:
    made = _create(client, "training", "edited")
    url = _url("training", made["meta"]["id"])
    stale = client.patch(url, json={"spec": {"image": "b:1"}}, headers={"If-Match": '"7"'})
    assert stale.status_code == 412
    patched = client.patch(url, json={"spec": {"image": "b:1"}, "fieldsToClear": ["spec.command"]})
    assert patched.status_code == 200 and patched.headers["ETag"] == '"2"'
    assert patched.json()["spec"] == {"image": "b:1"}
    master = client.patch(url, json={"fieldsToClear": ["master"]})
    assert master.status_code == 400  # a training has no master to clear
    replaced = client.put(url, json={"meta": {"name": "renamed"}, "spec": {"image": "c:1"}})
    assert replaced.status_code == 200 and replaced.json()["meta"]["name"] == "renamed"
    assert replaced.json()["meta"]["workloadType"] == "Training"  # the kind stays
    assert client.delete(url, headers={"If-Match": '"2"'}).status_code == 412
    assert client.delete(url, headers={"If-Match": '"3"'}).status_code == 204


def test_a_name_is_unique_in_its_scope_across_kinds(client: Any, ids: Ids) -> None:
    _create(client, "workspace", "shared-name")
    for kind in ("training", "inference", "distributed"):
        body = (
            _body("shared-name", kind)
            if kind != "distributed"
            else {"meta": {"name": "shared-name", "scopeType": "system"}, "spec": {"image": "a:1"}}
        )
        taken = client.post(_url(kind), json=body)
        assert taken.status_code == 400 and "already exists" in taken.json()["details"]
    params = {"templateName": "shared-name", "scopeType": "system"}
    assert client.get(f"{BASE}/name-availability", params=params).status_code == 409
    # another scope may have it
    vision = ids.projects["vision"]
    assert (
        client.post(_url("training"), json=_body("shared-name", "training", "project", vision)).status_code
        == 202
    )


def test_lists_of_a_kind_and_of_every_kind(client: Any) -> None:
    made = {kind: _create(client, kind, f"listed-{kind}")["meta"]["id"] for kind in SPECS}
    before = client.get(f"{BASE}/count").json()["count"]
    for kind, template_id in made.items():
        entries = client.get(_url(kind), params={"search": f"listed-{kind}"}).json()["entries"]
        assert [e["meta"]["id"] for e in entries] == [template_id]
        assert set(entries[0]) == ONE_ROLE_KEYS
    distributed = client.get(_url("distributed"), params={"limit": 500}).json()["entries"]
    assert not {e["meta"]["id"] for e in distributed} & set(made.values())
    everything = client.get(BASE, params={"limit": 500}).json()["entries"]
    assert {e["meta"]["id"] for e in everything} >= set(made.values()) | {
        e["meta"]["id"] for e in distributed
    }
    of_kinds = {kind: client.get(_url(kind), params={"limit": 500}).json()["entries"] for kind in SPECS}
    assert len(everything) == before == len(distributed) + sum(len(e) for e in of_kinds.values())
    types = client.get(BASE, params={"filterBy": "workloadType==Workspace", "limit": 500}).json()["entries"]
    assert {e["meta"]["id"] for e in types} == {e["meta"]["id"] for e in of_kinds["workspace"]}
    assert made["workspace"] in {e["meta"]["id"] for e in types}
    counted = client.get(f"{BASE}/count", params={"filterBy": "workloadType==Inference"}).json()
    assert counted == {"count": len(of_kinds["inference"])} and len(of_kinds["inference"]) >= 2


def test_comply_to_workload_type_names_the_templates_of_another_type(client: Any, ids: Ids) -> None:
    vision = ids.projects["vision"]
    made = {kind: _create(client, kind, f"comply-{kind}")["meta"]["id"] for kind in SPECS}
    params = {"complyToProject": vision, "complyToWorkloadType": "Training", "limit": 500}
    entries = {e["meta"]["id"]: e for e in client.get(BASE, params=params).json()["entries"]}
    assert entries[made["training"]]["complianceIssues"] == []
    for kind in ("workspace", "inference"):
        issues = entries[made[kind]]["complianceIssues"]
        assert issues == [
            {
                "field": "workloadType",
                "details": f"a {kind.capitalize()} template cannot be submitted as a Training workload",
            }
        ]
    distributed = [e for e in entries.values() if e["meta"]["workloadType"] == "Distributed"]
    assert distributed and all(e["complianceIssues"][0]["field"] == "workloadType" for e in distributed)
    # A kind without a master: complyToReplicaType says nothing of it (its list takes it undeclared).
    for replica in ("Worker", "Master"):
        listed = client.get(
            _url("training"), params={"complyToProject": vision, "complyToReplicaType": replica}
        ).json()["entries"]
        assert listed and all(e["complianceIssues"] == [] for e in listed)


def test_a_project_editor_writes_templates_of_every_kind_in_its_project_only(client: Any, ids: Ids) -> None:
    vision, nlp = ids.projects["vision"], ids.projects["nlp"]
    editor = bearer(VISION)
    own = client.post(_url("workspace"), json=_body("mine", "workspace", "project", vision), headers=editor)
    assert own.status_code == 202
    other = client.post(_url("workspace"), json=_body("mine", "workspace", "project", nlp), headers=editor)
    assert other.status_code == 403
    top = client.post(_url("training"), json=_body("mine", "training"), headers=editor)
    assert top.status_code == 403


def test_preview_and_explain_of_a_workspace(client: Any, ids: Ids) -> None:
    vision = ids.projects["vision"]
    preview = client.post(f"{_url('workspace')}/preview", json=_body("p", "workspace"))
    assert preview.status_code == 200 and set(preview.json()) == ONE_ROLE_KEYS
    template_id = _create(client, "workspace", "explained")["meta"]["id"]
    explained = client.get(f"{_url('workspace', template_id)}/explain", params={"projectId": vision})
    assert explained.status_code == 200
    assert any(e["field"] == "image" for e in explained.json()["entries"])
    assert client.get(f"{_url('training', template_id)}/explain").status_code == 404


# -- storage: schema revision 0005 upgraded -----------------------------------------------------------------


def _downgrade_to_0005(url: str) -> None:
    """The database as revision 0005 left it, its rows kept: the later revisions' own downgrades to 0006, then
    what revision 0006 added dropped (SQLite's ``DROP COLUMN``), and the revision set back."""
    engine = create_db_engine(url)
    downgrade(engine, "0006")
    with engine.begin() as connection:
        for statement in (
            "DROP TABLE kind_policies",
            "ALTER TABLE templates DROP COLUMN kind",
            "ALTER TABLE workloads DROP COLUMN kind",
            "UPDATE alembic_version SET version_num = '0005'",
        ):
            connection.exec_driver_sql(statement)
    engine.dispose()


def _stored(url: str) -> list[TemplateRow]:
    """Every stored template, as the repository reads it."""
    engine = create_db_engine(url)
    with transaction(engine, write=False) as connection:
        rows = Repository(connection).templates()
    engine.dispose()
    return rows


def test_db_upgrade_from_0005_keeps_every_template_distributed(make_app: MakeApp, sqlite_url: str) -> None:
    app = make_app(sqlite_url, seed=TEMPLATES)
    with open_client(app) as client:
        # a database of revision 0005 held distributed templates only: the example org's others go first
        for kind in SPECS:
            for entry in client.get(_url(kind), params={"limit": 500}).json()["entries"]:
                assert client.delete(f"{_url(kind)}/{entry['meta']['id']}").status_code == 204
        before = {
            e["meta"]["id"]: e
            for e in client.get(_url("distributed"), params={"limit": 500}).json()["entries"]
        }
    app.state.store.engine.dispose()
    documents = {r.id: r.document for r in _stored(sqlite_url)}
    assert len(before) >= 5 and set(documents) == set(before)
    _downgrade_to_0005(sqlite_url)
    engine = create_db_engine(sqlite_url)
    with engine.connect() as connection:
        assert read_schema(connection).revision == "0005"
        assert "kind" not in {c["name"] for c in inspect(connection).get_columns("templates")}
    engine.dispose()

    result = CliRunner().invoke(main, ["db", "upgrade", "--database-url", sqlite_url])
    assert result.exit_code == 0, result.output
    assert "from revision 0005 to revision 0007" in result.output, result.output

    rows = _stored(sqlite_url)
    assert {r.id: r.document for r in rows} == documents  # every document as it was
    assert {r.kind for r in rows} == {"distributed"}
    app = make_app(sqlite_url)
    with open_client(app) as client:
        after = {
            e["meta"]["id"]: e
            for e in client.get(_url("distributed"), params={"limit": 500}).json()["entries"]
        }
        assert after == before
        assert client.get(f"{BASE}/count").json()["count"] == len(before)


# -- db import and db export --------------------------------------------------------------------------------


def _folder_with_kinds(root: Path) -> Path:
    (root / "system" / "templates").mkdir(parents=True)
    (root / "org.yaml").write_text("departments: []\n")
    (root / "system" / "templates" / "trainer.yaml").write_text(
        "kind: training\nmeta:\n  name: trainer\nspec:\n  image: python:3.11\n  command: python train.py\n"
    )
    (root / "system" / "templates" / "served.yaml").write_text(
        "kind: inference\nmeta:\n  name: served\nspec:\n  image: vllm:1\n"
        "  servingPort:\n    container: 8000\n"
    )
    (root / "system" / "templates" / "ddp.yaml").write_text(
        "meta:\n  name: ddp\nspec:\n  image: a:1\n  distributedFramework: PyTorch\n"
    )
    return root


def test_db_import_and_export_carry_every_kind(make_app: MakeApp, sqlite_url: str, tmp_path: Path) -> None:
    folder = _folder_with_kinds(tmp_path / "in")
    runner = CliRunner()
    imported = runner.invoke(main, ["db", "import", "--root", str(folder), "--database-url", sqlite_url])
    assert imported.exit_code == 0, imported.output
    rows = {r.name: r for r in _stored(sqlite_url)}  # one scope: the names are unique
    assert {n: r.kind for n, r in rows.items()} == {
        "trainer": "training",
        "served": "inference",
        "ddp": "distributed",
    }
    assert "kind" not in rows["trainer"].document  # the column says it; the API's bodies never do
    app = make_app(sqlite_url)
    with open_client(app) as client:
        trainer = client.get(_url("training", rows["trainer"].id))
        assert trainer.status_code == 200 and trainer.json()["meta"]["workloadType"] == "Training"
        assert client.get(_url("inference", rows["served"].id)).json()["runnable"]["isRunnable"] is True
        _create(client, "workspace", "made-by-api")
    app.state.store.engine.dispose()

    out = tmp_path / "out"
    exported = runner.invoke(main, ["db", "export", "--root", str(out), "--database-url", sqlite_url])
    assert exported.exit_code == 0, exported.output
    files = out / "system" / "templates"
    assert yaml.safe_load((files / "trainer.yaml").read_text())["kind"] == "training"
    assert yaml.safe_load((files / "made-by-api.yaml").read_text())["kind"] == "workspace"
    assert (files / "ddp.yaml").read_text() == (folder / "system" / "templates" / "ddp.yaml").read_text()
    assert "kind" not in yaml.safe_load((files / "ddp.yaml").read_text())

    # and back into an empty database: the same kinds, ids and documents
    again = f"sqlite:///{tmp_path / 'again.db'}"
    back = runner.invoke(main, ["db", "import", "--root", str(out), "--database-url", again])
    assert back.exit_code == 0, back.output
    restored = {r.name: r for r in _stored(again)}
    assert set(restored) == {*rows, "made-by-api"} and restored["made-by-api"].kind == "workspace"
    for name, row in rows.items():
        assert (restored[name].id, restored[name].kind, restored[name].document) == (
            row.id,
            row.kind,
            row.document,
        )


# -- Run:ai's SDK -------------------------------------------------------------------------------------------

m = Lazy("runai.models")
sdk_errors = Lazy("runai.exceptions")
runai_client = Lazy("runai.runai_client")
SDK_TOKEN = "kinds-sdk-admin"


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    folder = tmp_path_factory.mktemp("sdk-kinds")
    auth = folder / "auth.yaml"
    auth.write_text(f"tokens:\n  - {{subject: alice, token: {SDK_TOKEN}, role: system-admin}}\n")
    settings = Settings(database_url=f"sqlite:///{folder / 'sdk.db'}", auth_file=auth, seed=TEMPLATES)
    with serve(create_app(settings)) as live:
        yield live


def _sdk_request(kind: str, action: str, **fields: Any) -> Any:
    """The SDK's request model of ``kind`` (``TrainingTemplateCreationRequest``...)."""
    return getattr(m, f"{kind.capitalize()}Template{action}Request")(**fields)


def _sdk_spec(kind: str, **extra: Any) -> Any:
    return getattr(m, f"{kind.capitalize()}TemplateSpec").from_dict({**SPECS[kind], **extra})


def test_templates_of_every_kind_through_the_sdk(sdk_server: LiveServer) -> None:
    client = runai_client.RunaiClient(bearer_client(sdk_server.url, SDK_TOKEN))
    templates: WorkloadTemplatesApi = client.workloads.workload_templates
    with httpx.Client(base_url=sdk_server.url, headers=bearer(SDK_TOKEN)) as http:
        departments = {
            d["name"]: d["id"] for d in http.get("/api/v1/org-unit/departments").json()["departments"]
        }
        projects = {p["name"]: p["id"] for p in http.get("/api/v1/org-unit/projects").json()["projects"]}
    scopes = [
        (m.ScopeType.SYSTEM, None),
        (m.ScopeType.DEPARTMENT, departments["research"]),
        (m.ScopeType.PROJECT, projects["vision"]),
    ]
    tag = uuid.uuid4().hex[:6]
    made: dict[str, list[Any]] = {}
    for kind, model in (
        ("training", "TrainingTemplate"),
        ("workspace", "WorkspaceTemplate"),
        ("inference", "InferenceTemplate"),
    ):
        create = getattr(templates, f"create_{kind}_template")
        for scope_type, scope_id in scopes:
            request = _sdk_request(
                kind,
                "Creation",
                meta=m.TemplateCreationMetaFields(
                    name=f"{kind}-{tag}-{scope_type.value}", scopeType=scope_type, scopeId=scope_id
                ),
                spec=_sdk_spec(kind),
            )
            answer = create(request)
            assert answer.status_code == 202
            template = parsed(model, answer.data)
            assert template.meta.workload_type.value == kind.capitalize()
            assert template.runnable.is_runnable, answer.data["runnable"]
            made.setdefault(kind, []).append(template)
        listed = getattr(templates, f"list_{kind}_templates")(
            search=tag, comply_to_project=int(projects["vision"])
        )
        page = parsed(f"{model}sListResponse", listed.data)
        assert sorted(e.meta.name for e in page.entries) == sorted(t.meta.name for t in made[kind])
        got = parsed(model, getattr(templates, f"get_{kind}_template")(made[kind][-1].meta.id).data)
        assert got.spec.image == SPECS[kind]["image"]

    # the any-type list, complyToWorkloadType: the other kinds' templates have that as their issue
    anything = templates.list_templates1(
        search=tag, comply_to_project=int(projects["vision"]), comply_to_workload_type="Workspace", limit=50
    )
    entries = parsed("TemplatesListResponse", anything.data).entries
    assert len(entries) == 9
    for entry in entries:
        issues = entry.compliance_issues or []
        if entry.meta.workload_type == m.WorkloadType.WORKSPACE:
            assert not any(i.var_field == "workloadType" for i in issues)
        else:
            assert [i.var_field for i in issues] == ["workloadType"]
    superset = parsed("SupersetTemplate", templates.get_template_by_id1(made["inference"][0].meta.id).data)
    assert superset.meta.workload_type == m.WorkloadType.INFERENCE

    # patch (inference: none, as Run:ai), then delete every one
    for kind in ("training", "workspace"):
        target = made[kind][-1]
        patch = _sdk_request(
            kind,
            "Patch",
            meta=m.TemplatePatchMetaFields(name=None, description="patched"),  # name: null keeps it
            spec=getattr(m, f"{kind.capitalize()}TemplateSpec")(image="patched:1"),
        )
        patched = getattr(templates, f"patch_{kind}_template")(target.meta.id, patch)
        body = parsed(f"{kind.capitalize()}Template", patched.data)
        assert (body.meta.description, body.spec.image) == ("patched", "patched:1")
    assert not hasattr(templates, "patch_inference_template")
    for kind, made_of_kind in made.items():
        for template in made_of_kind:
            deleted = getattr(templates, f"delete_{kind}_template")(template.meta.id)
            assert deleted.status_code == 204
        with pytest.raises(sdk_errors.NotFoundException):
            getattr(templates, f"get_{kind}_template")(made_of_kind[0].meta.id)
