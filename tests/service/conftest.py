"""Fixtures of the service suite: apps on SQLite or PostgreSQL, clients per role, a live loopback server.

PostgreSQL: ``TEST_DATABASE_URL`` when set (``eval "$(bash .ci/postgres.sh)"``); otherwise a throwaway
cluster is started for the session with the same script, and a test that needs it FAILS (never skips) when
that is impossible.  Each PostgreSQL test gets a database of its own.

The example org is seeded once per session (through :func:`create_app` with ``--seed``, as the service
does); each test that asks for :func:`app` gets its own copy of that database file, opened by a new app
without ``--seed``, as a restarted service would open it.  Tests that start on an empty database
(:func:`database_url`, :func:`make_app` on it) still seed it themselves.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import json
import os
import re
import shlex
import shutil
import socket
import sqlite3
import subprocess
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy.engine import make_url
from waiting import READY_WITHIN, wait_until

from template_engine.kinds import TEMPLATE_KINDS
from template_engine.service.app import create_app
from template_engine.service.settings import Settings

with warnings.catch_warnings():
    # starlette asks for httpx2 instead of httpx; the client works the same with httpx.
    warnings.filterwarnings("ignore", message=".*httpx2.*")
    from fastapi.testclient import TestClient

    # Every response any service test's client receives is checked against Run:ai's schemas (sdk_helpers).
    from sdk_helpers import install

install()

REPO = Path(__file__).resolve().parents[2]
TEMPLATES = REPO / "templates"
SAMPLES = Path(__file__).resolve().parent / "samples"
SHARED_SEEDS = REPO / "tests" / "fixtures" / "seeds"  # vendored from ../shared/seeds; .ci/run compares
CLUSTER = "71f69d83-ba66-4822-adf5-55ce55efd210"

#: Tokens of the suite's auth file, by role.
ADMIN, RESEARCH, APPLIED, VISION, NLP, VIEWER = (
    "dev-admin",
    "research-admin-token",
    "applied-admin-token",
    "dev-vision",
    "nlp-editor-token",
    "dev-viewer",
)
AUTH_YAML = f"""\
tokens:
  - {{subject: alice, token: {ADMIN}, role: system-admin}}
  - {{subject: bob, sha256: "{hashlib.sha256(RESEARCH.encode()).hexdigest()}", role: department-admin,
      department: research}}
  - {{subject: erin, token: {APPLIED}, role: department-admin, department: applied}}
  - {{subject: carol, token: {VISION}, role: project-editor, project: vision}}
  - {{subject: frank, token: {NLP}, role: project-editor, project: nlp}}
  - {{subject: dave, token: {VIEWER}, role: viewer}}
"""


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def sample(name: str) -> Any:
    return json.loads((SAMPLES / name).read_text())


def _no_server_error(response: httpx.Response) -> None:
    assert response.status_code < 500, (
        f"{response.request.method} {response.request.url}: {response.status_code}"
    )


# -- databases ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def auth_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("auth") / "tokens.yaml"
    path.write_text(AUTH_YAML)
    return path


#: Under pytest-xdist, the PostgreSQL server the workers share: ``{"url": ..., "data": ...}`` in the folder
#: that holds every worker's temporary folder. The controller stops it when the run ends (tests/conftest.py).
POSTGRES_STATE = "postgres-server.json"


def _start_postgres() -> tuple[str, str]:
    """Start a throwaway cluster with ``.ci/postgres.sh``: its URL and data folder; FAIL when impossible."""
    script = REPO / ".ci" / "postgres.sh"
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=600, check=False)
    exports = dict(
        line.removeprefix("export ").split("=", 1)
        for line in run.stdout.splitlines()
        if line.startswith("export ")
    )
    url = shlex.split(exports.get("TEST_DATABASE_URL", "''"))[0] if exports else ""
    if run.returncode != 0 or not url:
        pytest.fail(
            "the PostgreSQL storage tests need a server: set TEST_DATABASE_URL, or install the postgresql "
            f"package so that .ci/postgres.sh can start one.\n{run.stderr[-2000:]}"
        )
    return url, shlex.split(exports.get("TEST_PGDATA", "''"))[0]


def _stop_postgres(data: str) -> None:
    script = REPO / ".ci" / "postgres.sh"
    subprocess.run(["bash", str(script), "stop", data], capture_output=True, timeout=120, check=False)


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a PostgreSQL server: ``TEST_DATABASE_URL``, or a throwaway cluster started here.

    Under pytest-xdist the workers share one cluster: the first worker that needs it starts it (the others
    wait on a lock, then read its URL) and the controller stops it when the run ends.  Each test's database
    has a name unique to its process (:func:`postgres_url`).
    """
    given = os.environ.get("TEST_DATABASE_URL")
    if given:
        yield given
        return
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        url, data = _start_postgres()
        try:
            yield url
        finally:
            _stop_postgres(data)
        return
    shared = tmp_path_factory.getbasetemp().parent
    state = shared / POSTGRES_STATE
    with (shared / f"{POSTGRES_STATE}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not state.is_file():
            url, data = _start_postgres()
            state.write_text(json.dumps({"url": url, "data": data}))
    yield json.loads(state.read_text())["url"]


_counter = itertools.count()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database on the PostgreSQL server, dropped after the test."""
    import psycopg

    base = make_url(postgres_server)
    name = f"te_{os.getpid()}_{next(_counter)}"
    admin = base.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield base.set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'service.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    """Each storage test runs against SQLite and against a real PostgreSQL."""
    fixture = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    url: str = request.getfixturevalue(fixture)
    return url


# -- apps and clients ---------------------------------------------------------------------------------------

MakeApp = Callable[..., FastAPI]


@pytest.fixture
def make_app(auth_file: Path) -> MakeApp:
    def make(url: str, seed: bool = True, **settings: Any) -> FastAPI:
        return create_app(
            Settings(database_url=url, auth_file=auth_file, seed=TEMPLATES if seed else None, **settings)
        )

    return make


@contextlib.contextmanager
def open_client(app: FastAPI, token: str | None = ADMIN) -> Iterator[TestClient]:
    client = TestClient(app)
    client.event_hooks = {"request": [], "response": [_no_server_error]}
    if token is not None:
        client.headers.update(bearer(token))
    with client:
        yield client


@pytest.fixture(scope="session")
def seeded_sqlite(tmp_path_factory: pytest.TempPathFactory, auth_file: Path) -> Path:
    """An SQLite file holding the example org, seeded once for the session the way the service seeds an empty
    database (:func:`create_app` with ``--seed``); tests get copies (:func:`app`) and never open this one."""
    folder = tmp_path_factory.mktemp("seeded")
    seeded = folder / "seeded.db"
    app = create_app(Settings(database_url=f"sqlite:///{seeded}", auth_file=auth_file, seed=TEMPLATES))
    with TestClient(app):
        pass  # the lifespan's end disposes of the engine: every connection to the file is closed
    # One self-contained file (no -wal beside it), copied whole per test.
    template = folder / "template.db"
    with (
        contextlib.closing(sqlite3.connect(seeded)) as source,
        contextlib.closing(sqlite3.connect(template)) as target,
    ):
        source.backup(target)
    assert not Path(f"{template}-wal").exists(), "the seeded template must be one file"
    return template


@pytest.fixture
def app(make_app: MakeApp, sqlite_url: str, seeded_sqlite: Path) -> FastAPI:
    """The example org on SQLite: this test's own copy of the session's seeded database, opened by a new app
    (migrated at start-up, not seeded again, as on a restart)."""
    shutil.copyfile(seeded_sqlite, make_url(sqlite_url).database or "")
    return make_app(sqlite_url, seed=False)


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    """A system admin's client of :func:`app`; every response is checked to be below 500."""
    with open_client(app) as c:
        yield c


@pytest.fixture(scope="module")
def empty_service(tmp_path_factory: pytest.TempPathFactory, auth_file: Path) -> Iterator[FastAPI]:
    """One service on an empty SQLite database for a whole module (its tests write and read it in turn)."""
    folder = tmp_path_factory.mktemp("empty-service")
    app = create_app(Settings(database_url=f"sqlite:///{folder / 'db.sqlite'}", auth_file=auth_file))
    with TestClient(app):
        yield app


def ui_sign_in(client: TestClient, token: str = ADMIN) -> str:
    """Sign ``client`` (with base URL ``http://localhost``) in through the UI's form; its CSRF token."""
    page = client.get("/ui/sign-in")
    nonce = re.search(r'name="nonce" value="([^"]*)"', page.text)
    assert nonce is not None, page.text
    signed = client.post(
        "/ui/sign-in", data={"nonce": nonce[1], "token": token, "next": "/ui/"}, follow_redirects=False
    )
    assert signed.status_code == 303, signed.text
    csrf = re.search(r'name="csrf" value="([^"]*)"', client.get("/ui/").text)
    assert csrf is not None
    return csrf[1]


class Ids:
    """Names of the example org to the ids the service gave them."""

    def __init__(self, client: TestClient) -> None:
        get = client.get
        self.departments = {
            d["name"]: d["id"] for d in get("/api/v1/org-unit/departments").json()["departments"]
        }
        self.projects = {p["name"]: p["id"] for p in get("/api/v1/org-unit/projects").json()["projects"]}
        entries = get("/api/v1/workload-templates", params={"limit": 500}).json()["entries"]  # every kind
        self.templates = {(e["meta"]["scopeType"], e["meta"]["name"]): e["meta"]["id"] for e in entries}
        #: Each template's route: ``/api/v1/workload-templates/{segment}/{id}`` of its kind (issue 32).
        segments = {kind.workload_type: kind.template_segment for kind in TEMPLATE_KINDS}
        self.urls = {
            (e["meta"]["scopeType"], e["meta"]["name"]): (
                f"/api/v1/workload-templates/{segments[e['meta']['workloadType']]}/{e['meta']['id']}"
            )
            for e in entries
        }
        self.assets = {
            (kind, a["meta"]["name"]): a["meta"]["id"]
            for kind in ("environment", "compute", "datasource")
            for a in get(f"/api/v1/asset/{kind}").json()["entries"]
        }

    def template(self, name: str, scope: str = "system") -> str:
        return self.templates[(scope, name)]

    def url(self, name: str, scope: str = "system") -> str:
        """The template's own route, of its kind."""
        return self.urls[(scope, name)]


@pytest.fixture
def ids(client: TestClient) -> Ids:
    return Ids(client)


# -- a live server on loopback, in this process ------------------------------------------------------------


class LiveServer:
    def __init__(self, app: FastAPI) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        wait_until(self._started, "the live server did not start")
        return self

    def _started(self) -> bool:
        assert self.thread.is_alive(), "the live server's thread ended before it started"
        return bool(self.server.started)

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=READY_WITHIN)
        self.sock.close()


@pytest.fixture
def live_server() -> Callable[[FastAPI], LiveServer]:
    return LiveServer
