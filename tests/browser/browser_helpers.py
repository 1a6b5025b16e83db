"""What the browser tests share beside their fixtures: where Chromium is, the installed CLI, a report's pages
as URLs, and the service on a loopback port.

Imported by name (``from browser_helpers import ...``), as ``tests/service`` imports ``sdk_helpers``: the
module name is unique in the suite.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import ConsoleMessage, Request, Response, ViewportSize

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "templates"
EXE = shutil.which("template-engine", path=str(Path(sys.executable).parent)) or "template-engine"

#: Where the tests look for Chromium: this variable, else ``chromium`` on the PATH (Debian's package).
CHROMIUM_ENV = "TEMPLATE_ENGINE_CHROMIUM"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
#: A laptop screen: the size the pages are looked at (and the screenshots in docs/images are taken) at.
VIEWPORT: ViewportSize = {"width": 1366, "height": 768}


def chromium_executable() -> str:
    """The Chromium to drive; a test FAILS (never skips) when there is none, saying what to install."""
    wanted = os.environ.get(CHROMIUM_ENV)
    found = shutil.which(wanted) if wanted else shutil.which("chromium") or shutil.which(DEFAULT_CHROMIUM)
    if found is None:
        pytest.fail(
            f"the browser tests drive Chromium and there is none at {wanted or DEFAULT_CHROMIUM!r}: "
            "install Debian's package (`apt-get install chromium`, which scripts/test does when it is "
            "missing) "
            f"or set {CHROMIUM_ENV} to a Chromium or Chrome executable. Playwright's own browser download "
            "is not used.",
            pytrace=False,
        )
    return found


#: ``--no-sandbox``: CI runs as root, where Chromium refuses its sandbox; the pages are our own files.
CHROMIUM_ARGS = ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]


@dataclass
class BrowserLog:
    """Everything that went wrong while a page was open: console errors, uncaught script errors, requests
    that failed or were answered with an error status (a CSP violation is a console error)."""

    errors: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        url = message.location.get("url", "")
        if urlsplit(url).path == "/favicon.ico":
            return  # Chromium asks every origin for /favicon.ico by itself; the page did not
        if message.type in ("error", "assert"):
            self.errors.append(f"console {message.type}: {message.text} ({message.location.get('url', '')})")

    def page_error(self, error: Exception) -> None:
        self.errors.append(f"page error: {error}")

    def request_failed(self, request: Request) -> None:
        self.errors.append(f"request failed: {request.method} {request.url}: {request.failure}")

    def response(self, response: Response) -> None:
        if response.status >= 400:
            self.errors.append(f"response {response.status}: {response.request.method} {response.url}")


# -- the CLI and its report ---------------------------------------------------------------------------------


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``template-engine ARGS`` through the installed command, as a user runs it."""
    return subprocess.run([EXE, *args], capture_output=True, text=True, cwd=cwd, check=False, timeout=120)


def cli_json(*args: str, cwd: Path | None = None, ok: tuple[int, ...] = (0, 1)) -> Any:
    """The JSON a command prints (``-o json`` is added); its exit status must be one of ``ok``.

    A command that only reads the example org (``templates/``, which no test changes) runs once per
    session (per worker): its answer is the same for every test, and each caller gets its own copy."""
    done = (
        _run_cached(args) if cwd is None and str(EXAMPLE) in args else run_cli(*args, "-o", "json", cwd=cwd)
    )
    assert done.returncode in ok, f"template-engine {' '.join(args)}: {done.returncode}\n{done.stderr}"
    return json.loads(done.stdout)


@functools.cache
def _run_cached(args: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, "-o", "json")


@dataclass(frozen=True, slots=True)
class Report:
    """A static report written by ``template-engine report``, its pages addressed as ``file://`` URLs (the
    pages are self-contained: inline CSS, no script, nothing loaded from elsewhere)."""

    folder: Path

    def url(self, rel: str = "index.html") -> str:
        return (self.folder / rel).as_uri()

    def pair_url(self, pair_id: str, folder: str = "pairs") -> str:
        """The page of a pair id (``projects/vision/vit-finetune``), as ``report`` names its file."""
        return self.url(f"{folder}/{pair_id}.html")

    def pages(self) -> list[str]:
        """Every HTML file of the report, relative to its folder."""
        return sorted(p.relative_to(self.folder).as_posix() for p in self.folder.rglob("*.html"))


def build_report(root: Path, out: Path, *extra: str, cwd: Path | None = None) -> Report:
    """Run ``template-engine report --root ROOT --out OUT [EXTRA]``; it must succeed.

    Without ``cwd`` the command runs in this process (click's runner: the same command and arguments,
    without a Python start); with ``cwd`` (a git repository, for ``--against``) as a process of its own.
    The installed command itself is run by ``tests/test_cli_report.py``."""
    args = ("report", "--root", str(root), "--out", str(out), *extra)
    if cwd is None:
        from click.testing import CliRunner

        from template_engine.cli import main

        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (
            f"template-engine report failed ({result.exit_code}):\n{result.output}\n{result.exception!r}"
        )
    else:
        done = run_cli(*args, cwd=cwd)
        assert done.returncode == 0, f"template-engine report failed ({done.returncode}):\n{done.stderr}"
    return Report(out if out.is_absolute() else (cwd or Path.cwd()) / out)


#: ``make_report(root, *extra, cwd=None)``: the fixture that writes a report of another folder.
MakeReport = Callable[..., Report]


def pair_id_of(result: dict[str, Any]) -> str:
    """The pair id (as ``diff`` and the report name pairs) of one result of ``check -o json``."""
    template = result["template"]
    if result.get("project"):
        return f"projects/{result['project']}/{template}"
    if result.get("department"):
        return f"departments/{result['department']}/{template}"
    return f"system/{template}"


def git(repo: Path, *args: str) -> None:
    """``git ARGS`` in ``repo`` with a throwaway identity and no user or system configuration."""
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "HOME": str(repo),
    }
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, timeout=60)


# -- the service on a loopback port -------------------------------------------------------------------------

#: The development tokens the service accepts with ``--dev`` (``template_engine.service.auth.DEV_TOKENS``).
DEV_TOKENS = {
    "admin": "dev-admin",
    "research": "dev-research",
    "vision": "dev-vision",
    "viewer": "dev-viewer",
}


@dataclass
class LiveService:
    """``template-engine serve --dev --seed ROOT`` in a thread of this process, on a free loopback port, with
    its own SQLite file: what a browser test of the service's pages opens (``url``), as a user with one of
    :data:`DEV_TOKENS`."""

    seed: Path
    url: str = ""
    tokens: dict[str, str] = field(default_factory=lambda: dict(DEV_TOKENS))
    #: A role -> the cookies of a browser signed in as it on this service (see ``sign_in`` of the UI tests).
    sessions: dict[str, list[Any]] = field(default_factory=dict)
    _folder: tempfile.TemporaryDirectory[str] | None = None
    _server: Any = None
    _thread: threading.Thread | None = None
    _sock: socket.socket | None = None

    def __enter__(self) -> LiveService:
        import uvicorn

        from template_engine.service.app import create_app
        from template_engine.service.settings import Settings

        self._folder = tempfile.TemporaryDirectory(prefix="te-browser-service-")
        database = f"sqlite:///{Path(self._folder.name) / 'service.db'}"
        app = create_app(Settings(database_url=database, dev_tokens=True, seed=self.seed))
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                self.__exit__()
                raise RuntimeError("the service did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._sock is not None:
            self._sock.close()
        if self._folder is not None:
            self._folder.cleanup()

    def auth(self, role: str = "admin") -> dict[str, str]:
        """The ``Authorization`` header of a development token."""
        return {"Authorization": f"Bearer {self.tokens[role]}"}
