"""The storage suite, against SQLite and against a real PostgreSQL: persistence, replicas on one database,
concurrent writers (no lost update), and a lossless import -> export -> import."""

from __future__ import annotations

import filecmp
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ADMIN, CLUSTER, TEMPLATES, MakeApp, bearer, open_client
from sqlalchemy import MetaData, Table, insert, select
from waiting import LIVE_TIMEOUT

from template_engine import compose, load_org
from template_engine.errors import InputError
from template_engine.service.bookkeeping import META_FILE
from template_engine.service.exporter import export_folder
from template_engine.service.importer import import_folder
from template_engine.service.storage.database import (
    SchemaError,
    create_db_engine,
    ensure_schema,
    head_revision,
    transaction,
    upgrade,
)
from template_engine.service.storage.repository import Repository
from template_engine.service.storage.tables import SCHEMA_VERSION, metadata, now, schema_info

T = "/api/v1/workload-templates/distributed"


def _create(client: Any, name: str, **spec: Any) -> str:
    body = {"meta": {"name": name, "scopeType": "system"}, "spec": {"image": "x:1", **spec}}
    response = client.post(T, json=body)
    assert response.status_code == 202, response.json()
    template_id: str = response.json()["meta"]["id"]
    return template_id


def test_data_survives_a_restart(make_app: MakeApp, database_url: str) -> None:
    with open_client(make_app(database_url)) as first:
        template_id = _create(first, "durable", numWorkers=1)
        first.patch(f"{T}/{template_id}", json={"spec": {"numWorkers": 5}})
        first.patch("/api/v1/defaults/system", json={"spec": {"priorityClass": "low"}})
        vision = next(
            p["id"]
            for p in first.get("/api/v1/org-unit/projects").json()["projects"]
            if p["name"] == "vision"
        )
        workload = first.post(
            "/api/v1/workloads/distributed",
            json={
                "name": "kept",
                "projectId": vision,
                "clusterId": CLUSTER,
                "spec": {"image": "x:1", "distributedFramework": "MPI"},
            },
        )
        assert workload.status_code == 202, workload.json()
        count = first.get("/api/v1/workload-templates/count").json()["count"]
    # A new process on the same database: the seed is not imported again, everything is as it was.
    with open_client(make_app(database_url)) as second:
        got = second.get(f"{T}/{template_id}")
        assert got.headers["ETag"] == '"2"'
        assert got.json()["spec"]["numWorkers"] == 5
        assert got.json()["combinedSpec"]["priorityClass"] == "low"
        assert second.get("/api/v1/workload-templates/count").json()["count"] == count
        assert (
            second.get(f"/api/v1/workloads/distributed/{workload.json()['workloadId']}").json()
            == workload.json()
        )


def test_two_replicas_serve_the_same_data(make_app: MakeApp, database_url: str) -> None:
    with open_client(make_app(database_url)) as a, open_client(make_app(database_url, seed=False)) as b:
        template_id = _create(a, "shared")
        read = b.get(f"{T}/{template_id}")
        assert read.status_code == 200 and read.headers["ETag"] == '"1"'
        assert (
            b.patch(
                f"{T}/{template_id}", json={"spec": {"args": "b"}}, headers={"If-Match": '"1"'}
            ).status_code
            == 200
        )
        stale = a.patch(f"{T}/{template_id}", json={"spec": {"args": "a"}}, headers={"If-Match": '"1"'})
        assert stale.status_code == 412
        assert a.get(f"{T}/{template_id}").json()["spec"]["args"] == "b"
        b.patch("/api/v1/defaults/system", json={"spec": {"backoffLimit": 9}})
        assert a.get(f"{T}/{template_id}").json()["combinedSpec"]["backoffLimit"] == 9


def _in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(work, range(count)))


WRITERS, ROUNDS = 6, 5


def test_concurrent_read_modify_write_with_if_match_loses_nothing(
    make_app: MakeApp, database_url: str, live_server: Any
) -> None:
    """Writers on two replicas increment one field with GET + If-Match PATCH, retrying on 412/409."""
    with live_server(make_app(database_url)) as one, live_server(make_app(database_url, seed=False)) as two:
        with httpx.Client(base_url=one.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            template_id = _create(http, "counter", numWorkers=1)
        retries = []

        def work(index: int) -> None:
            server = (one, two)[index % 2]
            with httpx.Client(base_url=server.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
                for _ in range(ROUNDS):
                    while True:
                        current = http.get(f"{T}/{template_id}")
                        value = current.json()["spec"]["numWorkers"]
                        response = http.patch(
                            f"{T}/{template_id}",
                            json={"spec": {"numWorkers": value + 1}},
                            headers={"If-Match": current.headers["ETag"]},
                        )
                        if response.status_code == 200:
                            break
                        assert response.status_code in (409, 412), response.text
                        retries.append(response.status_code)

        _in_threads(WRITERS, work)
        with httpx.Client(base_url=two.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            final = http.get(f"{T}/{template_id}")
        assert final.json()["spec"]["numWorkers"] == 1 + WRITERS * ROUNDS
        assert final.headers["ETag"] == f'"{1 + WRITERS * ROUNDS}"'


FIELDS = ("args", "command", "workingDir", "nodeType", "category", "priorityClass")


def test_concurrent_patches_without_if_match_all_land(
    make_app: MakeApp, database_url: str, live_server: Any
) -> None:
    """Each writer patches its own field: with the row serialised, no writer's field is lost."""
    with live_server(make_app(database_url)) as one, live_server(make_app(database_url, seed=False)) as two:
        with httpx.Client(base_url=one.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            template_id = _create(http, "many-writers")

        def work(index: int) -> list[int]:
            server = (one, two)[index % 2]
            with httpx.Client(base_url=server.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
                return [
                    http.patch(f"{T}/{template_id}", json={"spec": {FIELDS[index]: f"v{round_}"}}).status_code
                    for round_ in range(ROUNDS)
                ]

        statuses = _in_threads(len(FIELDS), work)
        assert statuses == [[200] * ROUNDS] * len(FIELDS)
        with httpx.Client(base_url=two.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
            final = http.get(f"{T}/{template_id}")
        spec = final.json()["spec"]
        assert {name: spec[name] for name in FIELDS} == {name: f"v{ROUNDS - 1}" for name in FIELDS}
        assert final.headers["ETag"] == f'"{1 + len(FIELDS) * ROUNDS}"'


def test_concurrent_creates_of_one_name(make_app: MakeApp, database_url: str, live_server: Any) -> None:
    with live_server(make_app(database_url)) as one, live_server(make_app(database_url, seed=False)) as two:
        barrier = threading.Barrier(8)

        def work(index: int) -> int:
            server = (one, two)[index % 2]
            with httpx.Client(base_url=server.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http:
                barrier.wait()
                return http.post(T, json={"meta": {"name": "only-one", "scopeType": "system"}}).status_code

        statuses = sorted(_in_threads(8, work))
        # One create; each other one saw the name taken (Run:ai's 400) or lost the race in the database (409).
        assert statuses[0] == 202 and len(statuses) == 8 and set(statuses[1:]) <= {400, 409}, statuses


def _same_files(a: Path, b: Path) -> None:
    compared = filecmp.dircmp(a, b)
    assert not compared.left_only and not compared.right_only and not compared.diff_files, compared.report()
    for sub in compared.common_dirs:
        _same_files(a / sub, b / sub)


def test_import_export_import_is_lossless(database_url: str, tmp_path: Path) -> None:
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    report = import_folder(engine, TEMPLATES)
    assert report is not None and report.added["templates"] == 10
    first, second = tmp_path / "first", tmp_path / "second"
    export_folder(engine, first)
    # Into an empty database again, and out again: the same files, byte for byte.
    with transaction(engine, write=True) as connection:
        metadata.drop_all(connection)
        connection.exec_driver_sql("DROP TABLE alembic_version")  # an empty database
    ensure_schema(engine)
    import_folder(engine, first)
    export_folder(engine, second)
    _same_files(first, second)
    # And the same org as the original folder: every composition is identical.
    original, exported = load_org(TEMPLATES), load_org(first)
    assert not exported.broken
    assert exported.departments == original.departments
    pairs = original.views()
    assert len(pairs) == len(exported.views())
    for view, template in pairs:
        twin = exported.templates[template.scope][template.name]
        assert compose(exported, twin, view).to_response() == compose(original, template, view).to_response()
    # Importing the same folder again replaces in place: the same documents (only the versions and audit
    # fields of the bookkeeping move on).
    again = import_folder(engine, first)
    assert again is not None and again.added == {} and again.replaced["templates"] == 10
    with pytest.raises(InputError, match="already holds"):
        export_folder(engine, first)
    export_folder(engine, first, overwrite=True)
    (first / META_FILE).unlink()
    (second / META_FILE).unlink()
    _same_files(first, second)
    engine.dispose()


def test_a_broken_folder_imports_nothing(database_url: str, tmp_path: Path) -> None:
    import shutil

    folder = tmp_path / "broken"
    shutil.copytree(TEMPLATES, folder)
    (folder / "system/templates/bad.yaml").write_text("meta:\n  name: bad\nspec:\n  numWorkers: lots\n")
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    with pytest.raises(InputError) as caught:
        import_folder(engine, folder)
    assert "system/templates/bad.yaml" in caught.value.render()
    from template_engine.service.storage.repository import Repository

    with transaction(engine, write=False) as connection:
        assert Repository(connection).is_empty()
    engine.dispose()


def test_the_schema_is_created_once_and_guarded(database_url: str) -> None:
    engine = create_db_engine(database_url)
    assert ensure_schema(engine).empty
    assert ensure_schema(engine).revision == head_revision()
    with transaction(engine, write=True) as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(SchemaError, match=f"revision 9999, newer .* revision {head_revision()}"):
        ensure_schema(engine)
    engine.dispose()


#: The columns version 5 added, by table (Run:ai's fields and the asset scope).
_VERSION_5 = {
    "departments": {"runai"},
    "projects": {"runai"},
    "assets": {"runai", "scope_type", "department_id", "project_id"},
}


def _version_4_tables() -> MetaData:
    """The tables as schema version 4 had them: today's, without the columns version 5 added."""
    old = MetaData()
    for table in metadata.sorted_tables:
        dropped = _VERSION_5.get(table.name, set())
        columns = [column._copy() for column in table.columns if column.name not in dropped]
        Table(table.name, old, *columns)
    return old


def test_a_database_of_schema_version_4_takes_version_5_and_keeps_every_row(database_url: str) -> None:
    engine = create_db_engine(database_url)
    audit = {
        "version": 1,
        "created_by": "alice",
        "updated_by": "alice",
        "created_at": now(),
        "updated_at": now(),
    }
    asset_id = "3f1c4bde-8c1d-4bd6-9f0e-6f0e5b8f2a11"
    with engine.begin() as connection:  # as version 4 left a database (before Alembic)
        old = _version_4_tables()
        old.create_all(connection)
        old_tables = old.tables
        connection.execute(insert(old_tables["schema_info"]).values(id=1, version=4))
        connection.execute(insert(old_tables["departments"]).values(id=1, name="research", **audit))
        connection.execute(
            insert(old_tables["projects"]).values(id=1, name="vision", department_id=1, **audit)
        )
        document = {
            "meta": {"name": "datasets"},
            "spec": {"storage": {"nfs": [{"server": "f", "path": "/d"}]}},
        }
        connection.execute(
            insert(old_tables["assets"]).values(
                id=asset_id, kind="datasource", name="datasets", document=document, **audit
            )
        )
    with pytest.raises(SchemaError, match=r"schema version 4 .* run `template-engine db upgrade"):
        ensure_schema(engine)
    assert upgrade(engine).found.legacy == 4
    assert ensure_schema(engine).revision == head_revision()
    with transaction(engine, write=False) as connection:
        assert connection.execute(select(schema_info.c.version)).scalar() == SCHEMA_VERSION == 5
    with transaction(engine, write=False) as connection:
        repo = Repository(connection)
        (department,) = repo.departments()
        (project,) = repo.projects()
        asset = repo.asset(asset_id)
    assert (department.name, department.runai) == ("research", None)
    assert (project.name, project.department_id, project.runai) == ("vision", 1, None)
    assert asset is not None and asset.document == document
    assert (asset.scope_type, asset.department_id, asset.project_id, asset.runai) == (
        "tenant",
        None,
        None,
        None,
    )
    engine.dispose()
