"""The UI's sessions: an opaque id in the cookie, the session in the database, revoked at sign-out.

Issue 17 found ``te_session`` to be the bearer token in base64: a copied cookie kept working after sign-out,
and one made by hand from any token signed in.  These tests sign in through the form, as a browser does,
and move the sessions' clock (``create_app(clock=...)``) instead of waiting.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ADMIN, AUTH_YAML, TEMPLATES, VIEWER, VISION
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.engine import make_url
from test_service_ui import BASE, Browser, _field

from template_engine.service.app import create_app
from template_engine.service.auth import DEV_APPLICATION
from template_engine.service.settings import SettingError, Settings
from template_engine.service.storage import tables
from template_engine.service.storage.database import read_revision, transaction
from template_engine.service.ui.session import SESSION_COOKIE


class Clock:
    """A clock the test moves (seconds since the epoch)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clients() -> Iterator[Any]:
    opened: list[TestClient] = []

    def make(app: FastAPI) -> TestClient:
        client = TestClient(app, base_url=BASE)
        client.__enter__()
        opened.append(client)
        return client

    yield make
    for client in opened:
        client.__exit__(None, None, None)


def _signed_in(client: TestClient, token: str) -> str:
    """Sign ``client`` in with ``token``; the cookie's value."""
    response = Browser(client).sign_in(token)
    assert response.status_code == 303, response.text
    value = client.cookies.get(SESSION_COOKIE)
    assert value
    return value


def _with_cookie(client: TestClient, value: str) -> TestClient:
    """``client`` sending ``value`` as the session cookie, as a copied (or made-up) cookie would be sent."""
    client.headers["Cookie"] = f"{SESSION_COOKIE}={value}"
    return client


def _open(client: TestClient) -> bool:
    """Whether ``client`` is signed in: the org tree answers, instead of sending it to sign in."""
    response = client.get("/ui/", follow_redirects=False)
    assert response.status_code in (200, 303), response.status_code
    return response.status_code == 200


def _sign_out(client: TestClient) -> None:
    csrf = _field(client.get("/ui/").text, "csrf")
    assert client.post("/ui/sign-out", data={"csrf": csrf}, follow_redirects=False).status_code == 303


def _rows(app: FastAPI) -> list[Any]:
    with transaction(app.state.store.engine, write=False) as connection:
        return list(connection.execute(select(tables.ui_sessions)).mappings())


def test_a_copied_cookie_stops_working_at_sign_out(app: FastAPI, clients: Any) -> None:
    browser = clients(app)
    value = _signed_in(browser, ADMIN)
    copy = _with_cookie(clients(app), value)
    assert _open(browser) and _open(copy)
    _sign_out(browser)
    assert not _open(browser)
    assert not _open(copy)  # revoked in the database, not only deleted from the browser
    assert _rows(app) == []


def test_a_cookie_made_by_hand_from_a_token_signs_no_one_in(sqlite_url: str, clients: Any) -> None:
    app = create_app(Settings(database_url=sqlite_url, dev_tokens=True))
    client_id, secret, _ = DEV_APPLICATION
    client = clients(app)
    login = client.post("/api/v1/token", json={"clientID": client_id, "clientSecret": secret})
    assert login.status_code == 200, login.text
    application_token = login.json()["accessToken"]
    assert client.get("/api/v1/org-unit/departments", headers={"Authorization": f"Bearer {ADMIN}"}).is_success
    for token in (ADMIN, application_token):
        # The old format (the token in URL-safe base64), the token itself, and the standard alphabet.
        for value in (
            base64.urlsafe_b64encode(token.encode()).decode(),
            token,
            base64.b64encode(token.encode()).decode(),
        ):
            assert not _open(_with_cookie(clients(app), value)), value
    assert not _open(_with_cookie(clients(app), "x" * 43))  # the shape of a session id, but none
    assert not _open(_with_cookie(clients(app), "a" * 5000))
    # A real session's cookie, sent the same way, does sign in.
    assert _open(_with_cookie(clients(app), _signed_in(clients(app), ADMIN)))


def test_neither_the_cookie_nor_the_page_nor_the_database_holds_the_token(app: FastAPI, clients: Any) -> None:
    client = clients(app)
    response = Browser(client).sign_in(VISION)
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(f"{SESSION_COOKIE}="))
    value = client.cookies.get(SESSION_COOKIE)
    assert value is not None and len(value) == 43  # secrets.token_urlsafe(32)
    encoded = (base64.urlsafe_b64encode(VISION.encode()).decode(), base64.b64encode(VISION.encode()).decode())
    for text in (cookie, value):
        assert VISION not in text and not any(e.rstrip("=") in text for e in encoded)
    page = client.get("/ui/")
    assert page.status_code == 200 and VISION not in page.text and value not in page.text
    assert _field(page.text, "csrf") != value
    (row,) = _rows(app)
    assert row["id_hash"] == hashlib.sha256(value.encode()).hexdigest()  # the id itself is not stored
    stored = " ".join(str(v) for v in row.values())
    assert VISION not in stored and value not in stored
    assert hashlib.sha256(VISION.encode()).hexdigest() not in stored
    assert (row["subject"], row["role"], row["project"]) == ("carol", "project-editor", "vision")


def test_a_session_expires_at_its_lifetime(sqlite_url: str, seeded_sqlite: Path, auth_file: Path) -> None:
    shutil.copyfile(seeded_sqlite, make_url(sqlite_url).database or "")
    clock = Clock()
    app = create_app(Settings(database_url=sqlite_url, auth_file=auth_file, session_seconds=600), clock=clock)
    with TestClient(app, base_url=BASE) as client:
        response = Browser(client).sign_in(VIEWER)
        cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE))
        assert "Max-Age=600" in cookie
        (row,) = _rows(app)
        assert (row["expires_at"] - row["created_at"]).total_seconds() == pytest.approx(600, abs=0.01)
        clock.now += 599
        assert _open(client)
        clock.now += 1
        assert not _open(client)  # ended, in the database's terms: no sleep needed
        # The next sign-in deletes the sessions that have ended.
        _signed_in(TestClient(app, base_url=BASE), VIEWER)
        assert len(_rows(app)) == 1


def test_an_application_token_s_session_ends_with_the_token(sqlite_url: str) -> None:
    clock = Clock()
    app = create_app(Settings(database_url=sqlite_url, dev_tokens=True), clock=clock)
    client_id, secret, _ = DEV_APPLICATION
    with TestClient(app, base_url=BASE) as client:
        login = client.post("/api/v1/token", json={"AppId": client_id, "AppSecret": secret}).json()
        _signed_in(client, login["accessToken"])
        clock.now += login["expiresIn"] - 5
        assert _open(client)
        clock.now += 10  # past the token's exp, well within the 8 hours of a session
        assert not _open(client)


def test_the_default_lifetime_is_eight_hours(app: FastAPI) -> None:
    assert app.state.settings.session_seconds == 8 * 3600
    assert Settings.from_env({}).session_seconds == 8 * 3600
    assert Settings.from_env({"TEMPLATE_ENGINE_SESSION_SECONDS": "900"}).session_seconds == 900
    with pytest.raises(SettingError, match=r"TEMPLATE_ENGINE_SESSION_SECONDS='5'.*from 60 to 604800"):
        Settings.from_env({"TEMPLATE_ENGINE_SESSION_SECONDS": "5"})  # refused, naming the bounds
    settings = Settings(session_seconds=1200)
    assert Settings.from_workers(settings.for_workers()).session_seconds == 1200


def test_two_apps_on_one_database_share_a_session(database_url: str, auth_file: Path, clients: Any) -> None:
    first = create_app(Settings(database_url=database_url, auth_file=auth_file, seed=TEMPLATES))
    second = create_app(Settings(database_url=database_url, auth_file=auth_file))
    on_first = clients(first)
    value = _signed_in(on_first, ADMIN)
    on_second = _with_cookie(clients(second), value)
    assert _open(on_second)  # signed in on one process, known to the other
    page = on_second.get("/ui/")
    assert 'data-role="system-admin"' in page.text
    _sign_out(on_second)  # signed out on the other: the first no longer knows it
    assert not _open(on_first)


def test_a_session_ends_when_its_token_leaves_the_auth_file(
    sqlite_url: str, seeded_sqlite: Path, tmp_path: Path, clients: Any
) -> None:
    shutil.copyfile(seeded_sqlite, make_url(sqlite_url).database or "")
    before, after = tmp_path / "before.yaml", tmp_path / "after.yaml"
    before.write_text(AUTH_YAML)
    after.write_text("\n".join(line for line in AUTH_YAML.splitlines() if VISION not in line) + "\n")
    signed = clients(create_app(Settings(database_url=sqlite_url, auth_file=before)))
    vision, admin = _signed_in(signed, VISION), _signed_in(clients(signed.app), ADMIN)
    restarted = create_app(Settings(database_url=sqlite_url, auth_file=after))
    assert not _open(_with_cookie(clients(restarted), vision))
    assert _open(_with_cookie(clients(restarted), admin))


def test_signing_in_and_out_leaves_the_org_revision_alone(app: FastAPI, clients: Any) -> None:
    """A session is not a change of the org: the caches of composed answers stay valid."""
    with transaction(app.state.store.engine, write=False) as connection:
        before = read_revision(connection)
    client = clients(app)
    _signed_in(client, ADMIN)
    _sign_out(client)
    with transaction(app.state.store.engine, write=False) as connection:
        assert read_revision(connection) == before
