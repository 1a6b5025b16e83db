"""The schema under Alembic: the revisions make exactly the tables the code reads; ``db upgrade`` adopts and
upgrades, says from which to which, and changes nothing the second time; the start-up check refuses a
schema it does not know or one that is behind, saying what to run; ``GET /ready`` follows the database.

The last test builds a database with the previous release (commit :data:`PREVIOUS`, taken from git), the
example org, workloads and a template edited several times through its own API, upgrades it with this
code's ``db upgrade`` and finds everything as it was.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from click.testing import CliRunner
from conftest import CLUSTER, REPO, bearer
from fastapi.testclient import TestClient
from servers import free_port
from sqlalchemy import ForeignKeyConstraint, Index, MetaData, Table, UniqueConstraint, insert
from sqlalchemy.engine import make_url
from waiting import LIVE_TIMEOUT, READY_WITHIN, wait_until

from template_engine.cli import main
from template_engine.service.app import create_app
from template_engine.service.settings import Settings
from template_engine.service.storage import tables as t
from template_engine.service.storage.database import (
    SchemaError,
    create_db_engine,
    ensure_schema,
    head_revision,
    read_schema,
    transaction,
    upgrade,
)

#: The release before schema revisions: the last commit of the main branch before this work.
PREVIOUS = "8156d57"
T = "/api/v1/workload-templates/distributed"
W = "/api/v1/workloads/distributed"


def _models() -> MetaData:
    """Every table the code reads: the org's and the runtime's."""
    models = MetaData()
    for tables in (t.metadata, t.runtime):
        for table in tables.tables.values():
            table.to_metadata(models)
    return models


def _differences(url: str) -> list[Any]:
    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_server_default": True})
            return list(compare_metadata(context, _models()))
    finally:
        engine.dispose()


def test_the_revisions_make_exactly_the_tables_the_code_reads(database_url: str) -> None:
    engine = create_db_engine(database_url)
    assert ensure_schema(engine).empty
    engine.dispose()
    assert _differences(database_url) == []


#: What schema version 1 (the first release) did not have: tables, and columns version 5 added.
_NOT_IN_VERSION_1 = {"policies", "cluster_settings"}
_ADDED_IN_VERSION_5 = {
    "departments": {"runai"},
    "projects": {"runai"},
    "assets": {"runai", "scope_type", "department_id", "project_id"},
}


def _version_1_tables() -> MetaData:
    """The org's tables as schema version 1 had them (no runtime tables: those came with version 3)."""
    old = MetaData()
    for table in t.metadata.sorted_tables:
        if table.name in _NOT_IN_VERSION_1:
            continue
        dropped = _ADDED_IN_VERSION_5.get(table.name, set())
        columns = [column._copy() for column in table.columns if column.name not in dropped]
        keys = [
            ForeignKeyConstraint(
                [c.name for c in key.columns],
                [element.target_fullname for element in key.elements],
                ondelete=key.ondelete,
            )
            for key in table.foreign_key_constraints
            if not {c.name for c in key.columns} & dropped
        ]
        named = [c for c in table.constraints if isinstance(c, UniqueConstraint) and c.name is not None]
        copy = Table(
            table.name,
            old,
            *columns,
            *keys,
            *(UniqueConstraint(*(c.name for c in u.columns), name=u.name) for u in named),
            sqlite_autoincrement=table.dialect_options["sqlite"]["autoincrement"],
        )
        for index in table.indexes:
            Index(
                index.name,
                *(copy.c[c.name] for c in index.columns),
                unique=index.unique,
                **index.dialect_kwargs,
            )
    return old


def test_a_version_1_database_upgraded_has_exactly_the_tables_the_code_reads(database_url: str) -> None:
    """A database as the first release left it: the baseline adds the tables and columns it lacked, and the
    result is the schema the code reads."""
    engine = create_db_engine(database_url)
    with engine.begin() as connection:
        _version_1_tables().create_all(connection)
        connection.execute(insert(t.schema_info).values(id=1, version=1))
    assert upgrade(engine).found.legacy == 1
    engine.dispose()
    differences = _differences(database_url)
    # ALTER TABLE ... ADD COLUMN ... REFERENCES names no ON DELETE: the asset scope's foreign keys keep the
    # default (NO ACTION, which refuses a delete as RESTRICT does), as the release before Alembic left them.
    assert [
        d for d in differences if not (d[0] in {"add_fk", "remove_fk"} and d[1].table.name == "assets")
    ] == []


def _cli(*args: str) -> Any:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_db_upgrade_says_what_it_did_and_the_second_run_changes_nothing(database_url: str) -> None:
    engine = create_db_engine(database_url)
    ensure_schema(engine)
    with transaction(engine, write=True) as connection:  # as the release before Alembic left it
        connection.exec_driver_sql("DROP TABLE alembic_version")
    engine.dispose()
    shown = make_url(database_url.replace("postgresql://", "postgresql+psycopg://")).render_as_string()
    first = _cli("db", "upgrade", "--database-url", database_url)
    assert first.exit_code == 0, first.output
    assert first.output == (
        f"upgraded {shown} from schema version 5 (before Alembic) to revision {head_revision()}\n"
    )
    again = _cli("db", "upgrade", "--database-url", database_url)
    assert again.exit_code == 0, again.output
    assert again.output == f"{shown} is at revision {head_revision()}, this release's newest: nothing to do\n"


def test_db_upgrade_of_an_unreachable_database_says_so_with_the_password_hidden() -> None:
    url = f"postgresql://te:secret@127.0.0.1:{free_port()}/te"
    result = CliRunner().invoke(main, ["db", "upgrade", "--database-url", url])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot upgrade postgresql+psycopg://te:***@127.0.0.1:")
    assert "secret" not in result.output and "Connection refused" in result.output


def test_db_upgrade_refuses_a_revision_it_does_not_know(sqlite_url: str) -> None:
    """``0004`` is not in the chain: unknown, not "newer" (nothing says it descends from the head)."""
    engine = create_db_engine(sqlite_url)
    ensure_schema(engine)
    with transaction(engine, write=True) as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0004'")
    engine.dispose()
    result = CliRunner().invoke(main, ["db", "upgrade", "--database-url", sqlite_url])
    assert result.exit_code == 2
    assert result.output == (
        f"error: cannot upgrade {sqlite_url}: the database schema is at revision 0004, which this code does "
        "not know (its revisions: 0005, 0006, 0007): nothing changed\n"
    )
    assert "newer" not in result.output


def _foreign(url: str) -> None:
    engine = create_db_engine(url)
    with engine.begin() as connection:
        connection.exec_driver_sql("CREATE TABLE foo (x INTEGER)")
    engine.dispose()


def _tables(url: str) -> set[str]:
    from sqlalchemy import inspect

    engine = create_db_engine(url)
    try:
        with engine.connect() as connection:
            return set(inspect(connection).get_table_names())
    finally:
        engine.dispose()


def test_a_database_of_another_applications_tables_is_refused_naming_them(database_url: str) -> None:
    """Tables, but neither ``alembic_version`` nor ``schema_info``: not this service's; ``db upgrade`` and
    the start-up leave it as it is (it once got the 12 tables beside ``foo``)."""
    _foreign(database_url)
    shown = make_url(database_url.replace("postgresql://", "postgresql+psycopg://")).render_as_string()
    found = (
        "the database is not this service's: it has tables (foo) but no revision in alembic_version and no "
        "version in schema_info"
    )
    upgraded = CliRunner().invoke(main, ["db", "upgrade", "--database-url", database_url])
    assert upgraded.exit_code == 2
    assert upgraded.output == f"error: cannot upgrade {shown}: {found}: nothing changed\n"
    served = CliRunner().invoke(main, ["serve", "--dev", "--database-url", database_url])
    assert served.exit_code == 2
    assert served.output == (
        f"error: {found}: give the URL of an empty database or of one this service made\n"
    )
    assert _tables(database_url) == {"foo"}
    engine = create_db_engine(database_url)
    with pytest.raises(SchemaError):
        ensure_schema(engine)
    engine.dispose()


def test_db_upgrade_refuses_a_missing_file_and_a_folder_and_gives_an_empty_file_the_schema(
    tmp_path: Path,
) -> None:
    """A missing SQLite file is refused (a mistyped path, as a PostgreSQL database that does not exist is);
    an empty one (0 bytes) is an empty database and gets the schema, as an empty PostgreSQL database does;
    a folder is named as one (it was reported as not existing)."""
    missing = tmp_path / "missing.db"
    result = CliRunner().invoke(main, ["db", "upgrade", "--database-url", f"sqlite:///{missing}"])
    assert result.exit_code == 2
    assert result.output.endswith(f"the SQLite file {str(missing)!r} does not exist\n")
    assert not missing.exists()
    for args in (["db", "upgrade"], ["db", "export", "--root", str(tmp_path / "out")], ["serve", "--dev"]):
        result = CliRunner().invoke(main, [*args, "--database-url", f"sqlite:///{tmp_path}"])
        assert result.exit_code == 2
        assert result.output == (
            f"error: no database at sqlite:///{tmp_path}: the SQLite file {str(tmp_path)!r} is a folder, "
            "not a database file\n"
        )
    empty = tmp_path / "empty.db"
    empty.touch()
    result = CliRunner().invoke(main, ["db", "upgrade", "--database-url", f"sqlite:///{empty}"])
    assert result.exit_code == 0
    assert result.output == (
        f"upgraded sqlite:///{empty} from no schema (an empty database) to revision {head_revision()}\n"
    )


def test_serve_refuses_an_older_schema_saying_what_to_run(postgres_url: str) -> None:
    password_url = make_url(postgres_url).set(password="hunter2").render_as_string(hide_password=False)
    engine = create_db_engine(postgres_url)
    ensure_schema(engine)
    with transaction(engine, write=True) as connection:
        connection.exec_driver_sql("DROP TABLE alembic_version")
        connection.exec_driver_sql("UPDATE schema_info SET version = 4")
    engine.dispose()
    engine = create_db_engine(password_url)
    with pytest.raises(SchemaError) as caught:
        ensure_schema(engine)
    engine.dispose()
    message = str(caught.value)
    shown = make_url(password_url.replace("postgresql://", "postgresql+psycopg://")).render_as_string()
    assert "hunter2" not in message and ":***@" in shown
    assert message == (
        f"the database schema is at schema version 4 (before Alembic), older than this service's revision "
        f"{head_revision()}: run `template-engine db upgrade --database-url {shown}` (with the password in "
        "place of ***), then start again"
    )
    served = CliRunner().invoke(main, ["serve", "--dev", "--database-url", postgres_url])
    assert served.exit_code == 2 and "run `template-engine db upgrade --database-url" in served.output


def test_serve_refuses_an_unknown_revision_naming_it_and_its_own(sqlite_url: str) -> None:
    engine = create_db_engine(sqlite_url)
    ensure_schema(engine)
    with transaction(engine, write=True) as connection:
        connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0004'")
    engine.dispose()
    served = CliRunner().invoke(main, ["serve", "--dev", "--database-url", sqlite_url])
    assert served.exit_code == 2
    assert served.output == (
        "error: the database schema is at revision 0004, which this service does not know (its revisions: "
        "0005, 0006, 0007): check the database URL, or run the template-engine release that made it\n"
    )


# -- GET /ready ----------------------------------------------------------------------------------------------


def test_ready_answers_with_the_revision_and_turns_503_when_the_schema_is_not_this_services(
    sqlite_url: str,
) -> None:
    app = create_app(Settings(database_url=sqlite_url, dev_tokens=True))
    with TestClient(app) as client:
        got = client.get("/ready")
        assert got.status_code == 200 and got.json() == {"status": "ready", "revision": head_revision()}
        assert client.head("/ready").status_code == 200
        engine = create_db_engine(sqlite_url)
        with transaction(engine, write=True) as connection:  # not a revision of this chain
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0004'")
        unknown = client.get("/ready")
        assert unknown.status_code == 503
        assert unknown.json()["reason"] == (
            "schema unknown: the database schema is at revision 0004, which this service does not know (its "
            "revisions: 0005, 0006, 0007)"
        )
        with transaction(engine, write=True) as connection:  # a later release's revision
            connection.exec_driver_sql("UPDATE alembic_version SET version_num = '0008'")
        ahead = client.get("/ready")
        assert ahead.status_code == 503
        assert ahead.json()["reason"] == (
            "schema ahead: the database schema is at revision 0008, newer than this service knows (its "
            "newest is revision 0007): a later release upgraded it"
        )
        with transaction(engine, write=True) as connection:
            connection.exec_driver_sql("DROP TABLE alembic_version")
        behind = client.get("/ready")
        assert behind.status_code == 503 and behind.json() == {
            "status": "unready",
            "reason": "schema behind: the database is at schema version 5 (before Alembic), this service "
            f"needs {head_revision()}",
            "revision": head_revision(),
        }
        engine.dispose()
        assert client.get("/health").status_code == 200  # liveness never asks the database


class _Proxy:
    """A TCP relay on loopback to ``port``: :meth:`cut` closes it and every connection through it (the
    database is gone, as a network partition or a stopped server looks to the service); :meth:`restore`
    listens again on the same port."""

    def __init__(self, port: int) -> None:
        self._target = port
        self.port = free_port()
        self._connections: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self.restore()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(16)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self._target))
            with self._lock:
                self._connections += [client, server]
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        assert self._listener is not None
        with contextlib.suppress(OSError):  # wakes the accepting thread (a close alone does not, on Linux)
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for connection in self._connections:
                with contextlib.suppress(OSError):
                    connection.shutdown(socket.SHUT_RDWR)
                connection.close()
            self._connections.clear()


def test_ready_follows_a_postgresql_that_goes_away_and_comes_back(postgres_url: str) -> None:
    parsed = make_url(postgres_url)
    proxy = _Proxy(parsed.port or 5432)
    through = parsed.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    app = create_app(Settings(database_url=through, dev_tokens=True))
    try:
        with TestClient(app) as client:
            assert client.get("/ready").status_code == 200
            proxy.cut()
            gone = client.get("/ready")
            assert gone.status_code == 503, gone.json()
            assert gone.json()["status"] == "unready"
            assert gone.json()["reason"].startswith("database unreachable: ")
            assert "127.0.0.1" not in gone.text and str(proxy.port) not in gone.text  # logged, not answered
            assert client.get("/health").status_code == 200
            proxy.restore()
            back = client.get("/ready")
            assert back.status_code == 200 and back.json()["status"] == "ready"
    finally:
        proxy.cut()


# -- the previous release's database, upgraded ---------------------------------------------------------------


@pytest.fixture(scope="module")
def previous_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package and the example org of :data:`PREVIOUS`, from this repository's git history."""
    folder = tmp_path_factory.mktemp("previous-release")
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", PREVIOUS, "template_engine", "templates"],
        capture_output=True,
        check=True,
    )
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    return folder


def _previous(release: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(release)}
    return subprocess.run(
        [sys.executable, "-m", "template_engine", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=release,
        timeout=300,
        check=False,
    )


@contextlib.contextmanager
def _previous_server(release: Path, url: str) -> Iterator[httpx.Client]:
    port = free_port()
    serve = ["serve", "--dev", "--port", str(port), "--database-url", url]
    process = subprocess.Popen(
        [sys.executable, "-m", "template_engine", *serve],
        env={**os.environ, "PYTHONPATH": str(release)},
        cwd=release,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers=bearer("dev-admin"), timeout=LIVE_TIMEOUT
    )

    def healthy() -> bool:
        assert process.poll() is None, process.communicate()[0]
        try:
            return client.get("/health").status_code == 200
        except httpx.TransportError:
            return False

    try:
        wait_until(healthy, "the previous release's server did not answer /health")
        yield client
    finally:
        client.close()
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=READY_WITHIN)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def _history(client: httpx.Client | TestClient) -> dict[str, Any]:
    """What the API answers about everything stored: each template (with its version, the ETag) and
    workload by id, and the lists of assets, org units, policies and the cluster settings."""
    templates = client.get(T, params={"limit": 100}).json()["entries"]
    workloads = client.get("/api/v1/workloads", params={"limit": 100}).json()["workloads"]
    answers = {item["meta"]["id"]: client.get(f"{T}/{item['meta']['id']}") for item in templates}
    return {
        "templates": {id_: (got.headers["ETag"], _meta_set(got.json())) for id_, got in answers.items()},
        "workloads": {w["id"]: client.get(f"{W}/{w['id']}").json() for w in workloads},
        "assets": client.get("/api/v1/asset").json(),
        "departments": client.get("/api/v1/org-unit/departments").json(),
        "projects": client.get("/api/v1/org-unit/projects").json(),
        "policies": client.get("/api/v2/policy/distributed").json(),
        "cluster": client.get("/api/v1/cluster-settings").json(),
    }


def _meta_set(body: dict[str, Any]) -> dict[str, Any]:
    """A template's answer with the keys of its meta that are null left out: the previous release omitted
    them, this one answers them null, as Run:ai does (the same data)."""
    return body | {"meta": {k: v for k, v in body["meta"].items() if v is not None}}


def _folder(root: Path) -> dict[str, Any]:
    """Every file of an export, read as YAML (the previous release's and this one's write the same data)."""
    return {
        str(path.relative_to(root)): yaml.safe_load(path.read_text())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_a_database_of_the_previous_release_upgraded_keeps_everything(
    previous_release: Path, database_url: str, tmp_path: Path
) -> None:
    imported = _previous(
        previous_release, "db", "import", "--root", "templates", "--database-url", database_url
    )
    assert imported.returncode == 0, imported.stderr
    with _previous_server(previous_release, database_url) as client:
        templates = client.get(T, params={"limit": 100}).json()["entries"]
        edited = next(
            t["meta"]["id"]
            for t in templates
            if (t["meta"]["name"], t["meta"]["scopeType"]) == ("pytorch-elastic", "project")
        )
        for workers in (3, 5, 7):  # a version history: versions 2, 3 and 4 of one template
            changed = client.patch(f"{T}/{edited}", json={"spec": {"numWorkers": workers}})
            assert changed.status_code == 200, changed.json()
        project = next(t["meta"]["projectId"] for t in templates if t["meta"]["id"] == edited)
        for name in ("kept", "suspended", "deleted"):
            body = {"name": name, "projectId": str(project), "clusterId": CLUSTER, "templateId": edited}
            submitted = client.post(W, json={**body, "spec": {"numWorkers": 6}})
            assert submitted.status_code == 202, submitted.json()
            if name == "suspended":
                assert client.post(f"{W}/{submitted.json()['workloadId']}/suspend").status_code == 202
            if name == "deleted":
                assert client.delete(f"{W}/{submitted.json()['workloadId']}").status_code == 202
        before = _history(client)
    assert before["templates"][edited][0] == '"4"'
    exported = _previous(
        previous_release, "db", "export", "--root", str(tmp_path / "before"), "--database-url", database_url
    )
    assert exported.returncode == 0, exported.stderr

    upgraded = _cli("db", "upgrade", "--database-url", database_url)
    assert upgraded.exit_code == 0, upgraded.output
    assert "from schema version 5 (before Alembic) to revision" in upgraded.output
    engine = create_db_engine(database_url)
    with engine.connect() as connection:
        assert read_schema(connection).revision == head_revision()
    engine.dispose()

    after_export = _cli("db", "export", "--root", str(tmp_path / "after"), "--database-url", database_url)
    assert after_export.exit_code == 0, after_export.output
    assert _folder(tmp_path / "after") == _folder(tmp_path / "before")
    with TestClient(create_app(Settings(database_url=database_url, dev_tokens=True))) as client:
        client.headers.update(bearer("dev-admin"))
        after = _history(client)
    assert after == before
    assert len(before["workloads"]) >= 2 and len(before["templates"]) == 7
