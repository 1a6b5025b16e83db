"""Template reads answered from a cache, exactly: a write in one process is seen by the very next read in
another process on the same database; the cache is actually used (counted, never timed); an answer never goes
to another caller; ``serve --workers N`` serves and stops on SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ADMIN, NLP, TEMPLATES, VIEWER, VISION, Ids, MakeApp, bearer, open_client
from fastapi.testclient import TestClient
from servers import serve
from sqlalchemy import select, update
from waiting import LIVE_TIMEOUT, READY_WITHIN

from template_engine.service.cache import STATS, Answer, Answers, Compositions
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import (
    Revisions,
    create_db_engine,
    ensure_schema,
    read_revision,
    transaction,
    upgrade,
)

T = "/api/v1/workload-templates/distributed"
P = "/api/v2/policy/distributed"
CACHE = "x-template-engine-cache"


def _ids(http: httpx.Client) -> tuple[str, str, str]:
    """The system template pytorch-elastic, project vision and its department."""
    entries = http.get(T, params={"limit": 500}).json()["entries"]
    template = next(
        e["meta"]["id"]
        for e in entries
        if e["meta"]["name"] == "pytorch-elastic" and e["meta"]["scopeType"] == "system"
    )
    projects = http.get("/api/v1/org-unit/projects").json()["projects"]
    vision = next(p for p in projects if p["name"] == "vision")
    return template, str(vision["id"]), str(vision["parentId"])


def _labels(body: dict[str, Any]) -> dict[str, str]:
    return {item["name"]: item.get("value") for item in body["combinedSpec"].get("labels") or []}


def test_a_write_in_one_process_is_seen_by_the_next_read_in_another(
    postgres_url: str, auth_file: Path
) -> None:
    with (
        serve(postgres_url, auth_file, "--seed", str(TEMPLATES)) as a,
        serve(postgres_url, auth_file) as b,
        a.client() as writer,
        b.client() as reader,
    ):
        template, vision, _ = _ids(writer)
        get = f"{T}/{template}"
        view = {"projectId": vision}
        first = reader.get(get, params=view)
        again = reader.get(get, params=view)
        assert (first.headers[CACHE], again.headers[CACHE]) == ("miss", "hit")
        assert again.json() == first.json() and again.headers["ETag"] == first.headers["ETag"]
        for round_ in range(5):
            # The project's defaults (a layer of the composition, not the template's row).
            value = f"round-{round_}"
            put = writer.put(
                f"/api/v1/defaults/projects/{vision}",
                json={"spec": {"labels": [{"name": "cache-test", "value": value}]}},
            )
            assert put.status_code == 200, put.text
            seen = reader.get(get, params=view)
            assert seen.headers[CACHE] == "miss"
            assert _labels(seen.json())["cache-test"] == value
            assert reader.get(get, params=view).headers[CACHE] == "hit"
            # The template itself: PATCH, then PUT, each seen at once with its new ETag.
            patched = writer.patch(get, json={"spec": {"args": f"--round {round_}"}})
            assert patched.status_code == 200, patched.text
            seen = reader.get(get, params=view)
            assert seen.json()["spec"]["args"] == f"--round {round_}"
            assert seen.headers["ETag"] == patched.headers["ETag"]
            whole = {k: v for k, v in patched.json().items() if k in ("spec", "assets", "master")}
            whole["meta"] = {"name": "pytorch-elastic"}
            whole["spec"] = {**whole["spec"], "args": f"--put {round_}"}
            replaced = writer.put(get, json=whole)
            assert replaced.status_code == 200, replaced.text
            assert reader.get(get, params=view).json()["spec"]["args"] == f"--put {round_}"
            # The list reads the same revision: the write shows there too.
            listed = reader.get(T, params={"limit": 500}).json()["entries"]
            assert next(e for e in listed if e["meta"]["id"] == template)["spec"]["args"] == f"--put {round_}"
        # A policy of the project: its rule shows as compliance issues of the list at once.
        ask = {"complyToProject": vision, "limit": 500}
        before = reader.get(T, params=ask).json()["entries"]
        assert all(not any(i.get("field") == "maxReplicas" for i in e["complianceIssues"]) for e in before)
        meta = {"name": "vision", "scope": "project", "projectId": int(vision)}
        policy = {"rules": {"worker": {"maxReplicas": {"max": 4}}}}
        stored = writer.put(P, json={"meta": meta, "policy": policy})
        assert stored.status_code == 200, stored.text
        after = reader.get(T, params=ask)
        assert after.headers[CACHE] == "miss"
        assert any(
            i.get("field") == "maxReplicas"
            for e in after.json()["entries"]
            if e["meta"]["id"] == template
            for i in e["complianceIssues"]
        ), after.json()
        # A delete: the next read anywhere is a 404, the list and the count lose it.
        count = reader.get("/api/v1/workload-templates/count").json()["count"]
        assert reader.get(get).status_code == 200
        assert writer.delete(get).status_code == 204
        assert reader.get(get).status_code == 404
        assert reader.get("/api/v1/workload-templates/count").json()["count"] == count - 1
        assert template not in {
            e["meta"]["id"] for e in reader.get(T, params={"limit": 500}).json()["entries"]
        }


# -- in one process: the cache is used, and exact ------------------------------------------------------------


def test_a_second_read_composes_nothing_and_a_write_makes_the_next_one_compose(client: TestClient) -> None:
    ids = Ids(client)
    get = f"{T}/{ids.template('pytorch-elastic')}"
    vision = ids.projects["vision"]
    first = client.get(get, params={"projectId": vision})
    before = STATS.compositions
    for _ in range(3):
        again = client.get(get, params={"projectId": vision})
        assert again.headers[CACHE] == "hit" and again.content == first.content
    assert STATS.compositions == before
    put = client.put(
        f"/api/v1/defaults/projects/{vision}", json={"spec": {"labels": [{"name": "fresh", "value": "1"}]}}
    )
    assert put.status_code == 200, put.text
    before = STATS.compositions
    seen = client.get(get, params={"projectId": vision})
    assert seen.headers[CACHE] == "miss" and _labels(seen.json())["fresh"] == "1"
    assert STATS.compositions == before + 1


def test_a_list_composes_each_template_once_per_revision_and_its_pages_share_them(client: TestClient) -> None:
    distributed = {"filterBy": "workloadType==Distributed"}  # the list below is of the distributed kind
    count = client.get("/api/v1/workload-templates/count", params=distributed).json()["count"]
    every_kind = client.get("/api/v1/workload-templates/count").json()["count"]
    put = client.put("/api/v1/defaults/system", json={"spec": {"labels": [{"name": "rev", "value": "1"}]}})
    assert put.status_code == 200, put.text
    before = STATS.compositions
    whole = client.get(T, params={"limit": 500})
    assert whole.headers[CACHE] == "miss" and len(whole.json()["entries"]) == count
    assert STATS.compositions == before + count
    # Other pages, another order, a filter on runnable and the count: new answers, no new composition.
    pages = [client.get(T, params={"limit": 2, "offset": o}).json()["entries"] for o in range(0, count, 2)]
    assert [e for page in pages for e in page] == whole.json()["entries"]
    by_runnable = client.get(T, params={"sortBy": "runnable", "limit": 500})
    assert by_runnable.headers[CACHE] == "miss"
    runnable = client.get("/api/v1/workload-templates/count", params={"filterBy": "runnable==true"})
    assert runnable.status_code == 200
    # the count of every kind composes the other kinds' templates, each once; the distributed ones it reads
    assert STATS.compositions == before + every_kind
    assert client.get(T, params={"limit": 500}).headers[CACHE] == "hit"


def test_sqlite_read_after_write_in_one_process(client: TestClient) -> None:
    ids = Ids(client)
    get = f"{T}/{ids.template('mpi-horovod')}"
    for value in range(4):
        client.get(get)
        assert client.get(get).headers[CACHE] == "hit"
        patched = client.patch(get, json={"spec": {"args": f"v{value}"}})
        assert patched.status_code == 200
        seen = client.get(get)
        assert seen.json()["spec"]["args"] == f"v{value}" and seen.headers["ETag"] == patched.headers["ETag"]


def test_an_answer_never_goes_to_another_caller(app: Any) -> None:
    with open_client(app, VIEWER) as viewer, open_client(app, NLP) as nlp, open_client(app, VISION) as vision:
        ids = Ids(viewer)
        own = f"{T}/{ids.template('vit-finetune', 'project')}"  # a template of project vision
        assert viewer.get(own).status_code == 200
        assert viewer.get(own).headers[CACHE] == "hit"
        assert vision.get(own).status_code == 200  # its own project's editor
        # The editor of another project may not read it, whoever read it before, however often.
        for _ in range(3):
            refused = nlp.get(own)
            assert refused.status_code == 403 and CACHE not in refused.headers
        # Lists differ by caller: the viewer sees every template, the nlp editor not vision's.
        everything = {e["meta"]["id"] for e in viewer.get(T, params={"limit": 500}).json()["entries"]}
        for _ in range(2):
            listed = {e["meta"]["id"] for e in nlp.get(T, params={"limit": 500}).json()["entries"]}
            assert ids.template("vit-finetune", "project") in everything - listed
        # A view from another project is decided for each caller too.
        system = f"{T}/{ids.template('pytorch-elastic')}"
        assert vision.get(system, params={"projectId": ids.projects["vision"]}).status_code == 200
        for _ in range(2):
            assert nlp.get(system, params={"projectId": ids.projects["vision"]}).status_code == 403
        # No token, a wrong one, two of them: refused every time.
        for headers in ({}, bearer("wrong"), None):
            for _ in range(2):
                if headers is None:
                    raw = [("authorization", f"Bearer {VIEWER}"), ("authorization", f"Bearer {VIEWER}")]
                    answer = viewer.get(own, headers=httpx.Headers(raw))
                else:
                    answer = TestClient(app).get(own, headers=headers)
                assert answer.status_code in (400, 401) and CACHE not in answer.headers


def test_head_is_answered_from_the_same_cache_without_a_body(client: TestClient) -> None:
    get = f"{T}/{Ids(client).template('mpi-horovod')}"
    full = client.get(get)
    head = client.head(get)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == full.headers["content-length"]
    assert head.headers[CACHE] == "hit"


def test_the_cache_can_be_turned_off(make_app: MakeApp, sqlite_url: str) -> None:
    with open_client(make_app(sqlite_url, cache_bytes=0)) as client:
        get = f"{T}/{Ids(client).template('mpi-horovod')}"
        before = STATS.compositions
        assert CACHE not in client.get(get).headers
        client.get(get)
        assert STATS.compositions == before + 2


# -- the revision --------------------------------------------------------------------------------------------


def test_every_write_transaction_moves_the_revision_and_a_failed_one_does_not(database_url: str) -> None:
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    revisions = Revisions(engine)
    try:
        epoch, start = revisions.read()
        with transaction(engine, write=True):
            pass
        assert revisions.read() == (epoch, start + 1)
        with pytest.raises(RuntimeError), transaction(engine, write=True):
            raise RuntimeError("refused")
        assert revisions.read() == (epoch, start + 1)
        with transaction(engine, write=False) as connection:
            assert read_revision(connection) == (epoch, start + 1)
        ensure_schema(engine)  # a restart's check of a current schema writes nothing
        assert revisions.read() == (epoch, start + 1)
        with transaction(engine, write=True) as connection:  # as a release before Alembic left it
            connection.exec_driver_sql("DROP TABLE alembic_version")
        upgrade(engine)  # an upgrade is a write: every cache of composed answers starts again
        assert revisions.read() == (epoch, start + 3)
    finally:
        revisions.dispose()
        engine.dispose()


def test_a_database_of_schema_version_2_gets_the_revision(database_url: str) -> None:
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    with engine.begin() as connection:  # as version 2 left it (not a service write: no revision to move)
        t.org_revision.drop(connection)
        connection.exec_driver_sql("DROP TABLE alembic_version")
        connection.execute(update(t.schema_info).values(version=2))
    assert upgrade(engine).found.legacy == 2
    with transaction(engine, write=False) as connection:
        assert connection.execute(select(t.schema_info.c.version)).scalar() == t.SCHEMA_VERSION == 5
        epoch, revision = read_revision(connection)
        assert len(epoch) == 36 and revision >= 0
    engine.dispose()


# -- the caches' bounds --------------------------------------------------------------------------------------


def test_answers_are_bounded_by_entries_and_bytes_and_dropped_with_their_revision() -> None:
    answers = Answers(max_entries=3, max_bytes=6000)  # an entry: its body and about 500 key bytes
    one = Answer(((b"etag", b'"1"'),), b"x" * 500)
    for n in range(5):
        answers.put((("e", 1), f"/{n}"), one)
    assert len(answers) == 3
    assert answers.get((("e", 1), "/0")) is None and answers.get((("e", 1), "/4")) == one
    answers.put((("e", 1), "/big"), Answer((), b"x" * 1500))  # over a quarter of the bytes: not kept
    assert answers.get((("e", 1), "/big")) is None
    answers.put((("e", 2), "/new"), one)  # a newer revision: every older answer goes
    assert len(answers) == 1
    answers.put((("e", 1), "/late"), one)  # composed at an older revision: not kept
    assert answers.get((("e", 1), "/late")) is None and len(answers) == 1
    answers.put((("other", 0), "/restored"), one)  # another epoch (a re-created database)
    assert len(answers) == 1 and answers.get((("other", 0), "/restored")) == one


def test_concurrent_requests_compose_an_entry_once() -> None:
    import threading

    compositions = Compositions()
    built: list[int] = []
    gate = threading.Event()

    def build() -> str:
        gate.wait(5)
        built.append(1)
        return "composed"

    found: list[str] = []
    threads = [
        threading.Thread(target=lambda: found.append(compositions.get((("e", 1), "t"), build, len)))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    time.sleep(0.2)  # let them all ask (the assertion counts builds, not time)
    gate.set()
    for thread in threads:
        thread.join()
    assert found == ["composed"] * 8 and len(built) == 1


# -- serve --workers -----------------------------------------------------------------------------------------


def test_workers_share_one_database_and_stop_on_sigterm(postgres_url: str, auth_file: Path) -> None:
    with serve(postgres_url, auth_file, "--seed", str(TEMPLATES), "--workers", "2") as server:
        with server.client() as http:
            template, vision, _ = _ids(http)
        get = f"{server.url}{T}/{template}"
        for value in range(6):
            # A new connection each time: the kernel spreads them over both workers.
            patched = httpx.patch(
                get, json={"spec": {"args": f"w{value}"}}, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT
            )
            assert patched.status_code == 200, patched.text
            for _ in range(3):
                seen = httpx.get(
                    get, params={"projectId": vision}, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT
                )
                assert seen.json()["spec"]["args"] == f"w{value}"
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=READY_WITHIN)  # a bound for a loaded machine, not a speed
        except subprocess.TimeoutExpired:
            raise AssertionError("serve --workers 2 did not stop after SIGTERM") from None
    assert server.process.returncode in (0, -signal.SIGTERM), server.output
    assert "2 worker processes" in server.output
    assert server.output.count("Finished server process") == 2, server.output


def test_workers_on_sqlite_with_development_tokens(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.db'}"
    with serve(url, None, "--seed", str(TEMPLATES), "--workers", "2") as server:
        login = httpx.post(
            f"{server.url}/api/v1/token",
            json={"grantType": "app_token", "AppId": "dev-client", "AppSecret": "dev-secret"},
            timeout=LIVE_TIMEOUT,
        )
        assert login.status_code == 200, login.text
        token = login.json()["accessToken"]
        get = f"{server.url}{T}"
        for value in range(6):  # the token one worker issued is good at both; writes are seen at once
            created = httpx.post(
                get,
                json={"meta": {"name": f"made-{value}", "scopeType": "system"}, "spec": {"image": "a:1"}},
                headers=bearer(token),
                timeout=LIVE_TIMEOUT,
            )
            assert created.status_code == 202, created.text
            for _ in range(3):
                listed = httpx.get(get, params={"limit": 500}, headers=bearer(token), timeout=LIVE_TIMEOUT)
                assert listed.status_code == 200, listed.text
                names = {e["meta"]["name"] for e in listed.json()["entries"]}
                assert f"made-{value}" in names
    assert server.process.returncode in (0, -signal.SIGTERM), server.output
