"""The org's cluster settings in the service, and the objects of stored templates and workloads.

``/api/v1/cluster-settings`` holds what a ``cluster.yaml`` holds (checked the same way, read by every role,
written by a system admin); every composition of the service renders its objects with it; ``db import`` and
``db export`` carry ``cluster.yaml``; and ``.../manifests`` answers the objects, their sources with
``annotate``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import CLUSTER, TEMPLATES, VIEWER, VISION, Ids, MakeApp, bearer, open_client
from sqlalchemy import update

from template_engine.cluster.settings import ClusterSettings
from template_engine.loader.validate import validate
from template_engine.loader.yaml_safe import load_yaml
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import create_db_engine, ensure_schema, transaction, upgrade
from template_engine.service.storage.repository import Repository

SETTINGS = "/api/v1/cluster-settings"
TEMPLATES_URL = "/api/v1/workload-templates/distributed"
WORKLOADS = "/api/v1/workloads/distributed"
QUEUE = "kai.scheduler/queue"


def _example_settings() -> dict[str, Any]:
    return dict(load_yaml((TEMPLATES / "cluster.yaml").read_text(), "cluster.yaml").data)


def _job(client: Any, template: str, project: str | None, **params: Any) -> dict[str, Any]:
    query = {"projectId": project, **params} if project is not None else params
    response = client.get(f"{TEMPLATES_URL}/{template}/manifests", params=query)
    assert response.status_code == 200, response.json()
    body: dict[str, Any] = response.json()
    return body


def test_the_seeded_settings_are_the_example_orgs_and_a_put_replaces_them(client: Any) -> None:
    got = client.get(SETTINGS)
    assert got.status_code == 200 and got.headers["ETag"] == '"1"'
    assert got.json() == _example_settings()
    effective = client.get(SETTINGS, params={"effective": "true"}).json()
    assert effective == ClusterSettings.model_validate(_example_settings()).model_dump(mode="json")
    assert effective["schedulerName"] == "kai-scheduler"  # a default the file does not set

    new = {**_example_settings(), "schedulerName": "runai-scheduler"}
    stale = client.put(SETTINGS, json=new, headers={"If-Match": '"7"'})
    assert stale.status_code == 412 and stale.headers["ETag"] == '"1"'
    put = client.put(SETTINGS, json=new, headers={"If-Match": '"1"'})
    assert put.status_code == 200 and put.headers["ETag"] == '"2"' and put.json() == new
    again = client.get(SETTINGS)
    assert again.json() == new and again.headers["ETag"] == '"2"'


def test_bad_settings_are_a_400_naming_each_field_as_the_file_would(client: Any) -> None:
    bad = {
        "priorityClasses": [{"name": "x", "value": "high"}],
        "schedulerNam": "kai",
        "preemptibleClass": "x",
    }
    response = client.put(SETTINGS, json=bad)
    assert response.status_code == 400
    fields = [p["field"] for p in response.json()["problems"]]
    _doc, file_problems = validate(ClusterSettings, bad, "cluster.yaml", {})
    assert fields == [p.to_dict()["field"] for p in file_problems]
    assert "priorityClasses[0].value" in fields and "schedulerNam" in fields
    assert client.get(SETTINGS).json() == _example_settings()  # nothing stored


def test_every_role_reads_the_settings_and_only_a_system_admin_writes_them(app: Any) -> None:
    for token in (VIEWER, VISION, "research-admin-token"):
        with open_client(app, token) as other:
            assert other.get(SETTINGS).status_code == 200
            assert other.put(SETTINGS, json={}).status_code == 403
    with open_client(app) as admin:
        assert admin.get(SETTINGS).json() == _example_settings()


def test_a_projects_queue_and_namespace_reach_its_objects(client: Any, ids: Ids) -> None:
    template = ids.template("pytorch-elastic")
    vision = ids.projects["vision"]
    body = _job(client, template, vision)
    assert (
        body["runnable"]
        == client.get(f"{TEMPLATES_URL}/{template}", params={"projectId": vision}).json()["runnable"]
    )
    job = body["objects"][0]
    assert job["kind"] == "PyTorchJob"
    assert job["metadata"]["namespace"] == "runai-vision"
    assert job["metadata"]["labels"][QUEUE] == "vision"  # templates/cluster.yaml's queue of the project
    assert "namespace" not in _job(client, template, None)["objects"][0]["metadata"]  # no project, no place

    settings = {**_example_settings(), "queues": {"vision": "gpu-a"}, "namespacePattern": "team-{project}"}
    assert client.put(SETTINGS, json=settings).status_code == 200
    job = _job(client, template, vision)["objects"][0]
    assert (job["metadata"]["namespace"], job["metadata"]["labels"][QUEUE]) == ("team-vision", "gpu-a")


def test_annotate_names_the_setting_and_the_layer_of_each_value(client: Any, ids: Ids) -> None:
    template = ids.template("pytorch-elastic")
    body = _job(client, template, ids.projects["vision"], annotate="true")
    sources = {(s["object"], s["path"]): s for s in body["sources"]}
    queue = sources[(0, f"metadata.labels.{QUEUE}")]
    assert queue["source"] == "setting" and queue["setting"] == "queues"
    assert queue["file"] == "db:cluster-settings" and queue["layer"] == "cluster settings, version 1"
    scheduler = next(s for s in body["sources"] if s["path"].endswith(".schedulerName"))
    assert scheduler["source"] == "setting" and scheduler["layer"] == "cluster settings' default"
    image = next(s for s in body["sources"] if s["path"].endswith("containers[0].image"))
    assert image["source"] == "spec" and image["field"] == "image" and image["file"].startswith("db:")
    assert "sources" not in _job(client, template, ids.projects["vision"])


def test_the_manifests_routes_answer_404_and_400_as_their_siblings(client: Any, ids: Ids) -> None:
    missing = "00000000-0000-4000-8000-000000000000"
    assert client.get(f"{TEMPLATES_URL}/{missing}/manifests").status_code == 404
    assert client.get(f"{WORKLOADS}/{missing}/manifests").status_code == 404
    template = ids.template("pytorch-elastic")
    for project in ("999999", "x"):
        sibling = client.get(f"{TEMPLATES_URL}/{template}", params={"projectId": project})
        ours = client.get(f"{TEMPLATES_URL}/{template}/manifests", params={"projectId": project})
        assert ours.status_code == sibling.status_code and ours.status_code in (400, 404)
        assert ours.json() == sibling.json()


def test_a_workloads_objects_carry_its_name(client: Any, ids: Ids) -> None:
    spec = {"image": "x:1", "distributedFramework": "MPI"}
    body = {"name": "nightly", "projectId": ids.projects["vision"], "clusterId": CLUSTER, "spec": spec}
    submitted = client.post(WORKLOADS, json=body, headers=bearer(VISION))
    assert submitted.status_code == 202, submitted.json()
    workload = submitted.json()["workloadId"]
    answer = client.get(f"{WORKLOADS}/{workload}/manifests", params={"annotate": "true"}).json()
    job = answer["objects"][0]
    assert (job["kind"], job["metadata"]["name"]) == ("MPIJob", "nightly")
    assert job["metadata"]["namespace"] == "runai-vision" and job["metadata"]["labels"][QUEUE] == "vision"
    assert answer["runnable"]["isRunnable"] is True
    image = next(s for s in answer["sources"] if s["path"].endswith("containers[0].image"))
    assert image["file"] == f"db:workloads/{workload}" and image["layer"] == "workload nightly, version 1"
    with open_client(client.app, VIEWER) as viewer:
        assert viewer.get(f"{WORKLOADS}/{workload}/manifests").json()["objects"] == answer["objects"]


def test_db_import_and_export_carry_cluster_yaml(database_url: str, tmp_path: Path) -> None:
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    report = import_folder(engine, TEMPLATES)
    assert report is not None and "cluster settings added" in report.summary()
    with transaction(engine, write=False) as connection:
        row = Repository(connection).cluster_settings()
    assert row is not None and row.document == _example_settings()
    assert row.text == (TEMPLATES / "cluster.yaml").read_text()  # its comments are kept
    out = tmp_path / "out"
    export_folder(engine, out)
    assert (out / "cluster.yaml").read_bytes() == (TEMPLATES / "cluster.yaml").read_bytes()
    again = import_folder(engine, out)
    assert again is not None and "cluster settings replaced" in again.summary()
    engine.dispose()


def test_an_export_without_settings_writes_no_cluster_yaml(database_url: str, tmp_path: Path) -> None:
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    export_folder(engine, tmp_path / "out")
    assert not (tmp_path / "out" / "cluster.yaml").exists()
    engine.dispose()


def test_a_database_of_schema_version_3_composes_with_the_defaults(make_app: MakeApp, tmp_path: Path) -> None:
    """A database the previous release made has no settings table: it gets one, empty, and the service
    composes with the defaults (so the example org's own classes, medium and high, are unknown to it)."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    with open_client(make_app(url)):
        pass
    engine = create_db_engine(url)
    with engine.begin() as connection:  # as version 3 left it (before Alembic)
        t.cluster_settings.drop(connection)
        connection.exec_driver_sql("DROP TABLE alembic_version")
        connection.execute(update(t.schema_info).values(version=3))
    assert upgrade(engine).found.legacy == 3
    engine.dispose()
    with open_client(make_app(url, seed=False)) as client:
        got = client.get(SETTINGS)
        assert got.status_code == 200 and got.json() == {} and got.headers["ETag"] == '"0"'
        template = Ids(client).template("pytorch-elastic")
        runnable = _job(client, template, None)["runnable"]
        assert not runnable["isRunnable"]
        assert any(i.get("field") == "priorityClass" for i in runnable["issues"]), runnable
        put = client.put(SETTINGS, json=_example_settings(), headers={"If-Match": '"0"'})
        assert put.status_code == 200 and put.headers["ETag"] == '"1"'
        assert _job(client, template, None)["runnable"]["isRunnable"]
