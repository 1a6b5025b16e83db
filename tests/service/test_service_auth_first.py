"""Authenticate, then authorize, then read the body, on every route (issue 30): 401 before 403 before 400,
and not one byte of the body is received for a caller who may not go on.

The routes are found by walking the app, so a new route is covered the day it is added: every API route
asks who calls (:func:`~template_engine.service.auth.authenticate`), but for the few listed here that must
answer strangers; for each route-method, a malformed body without a token is a 401, and with a viewer's
token a 403 wherever a viewer may not write; an ASGI spy between the client and the app proves the body was
never received."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import VIEWER, bearer, open_client
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.convertors import CONVERTOR_TYPES
from starlette.types import Message, Receive, Scope, Send

from template_engine.service.routes import ROUTERS
from template_engine.service.routes.common import authenticates

#: The API routes a stranger may call: health and readiness, the token endpoint (its body is the credential).
OPEN = {
    ("GET", "/health"),
    ("GET", "/ready"),
    ("POST", "/api/v1/token"),
}
MALFORMED = b'{"meta": {"name": "x"'  # truncated JSON: a 400 to anyone whose body is read


class BodySpy:
    """ASGI middleware that records whether the app received any byte of a request's body."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.read = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def spied() -> Message:
            message = await receive()
            if message["type"] == "http.request" and message.get("body"):
                self.read = True
            return message

        await self.app(scope, spied if scope["type"] == "http" else receive, send)


def _api_routes() -> list[tuple[str, str, APIRoute]]:
    """Every route-method of the API: the routes of every router the app includes (the UI's are not API
    routes: they answer a stranger with the sign-in page)."""
    found = []
    for route in (r for router in ROUTERS for r in router.routes):
        if isinstance(route, APIRoute) and route.include_in_schema:
            found += [(method, route.path, route) for method in sorted(route.methods - {"HEAD"})]
    return found


def _concrete(route: APIRoute) -> str:
    values = {"uuid": str(uuid.uuid4()), "orgid": "1"}
    path = route.path_format
    for name, convertor in route.param_convertors.items():
        kind = next(k for k in values if CONVERTOR_TYPES[k] is convertor)
        path = path.replace("{" + name + "}", values[kind])
    return path


def _writes(method: str, path: str) -> bool:
    return method in ("PUT", "PATCH", "DELETE") or (method == "POST" and not path.endswith("/preview"))


@pytest.fixture
def spy(app: FastAPI) -> Iterator[tuple[BodySpy, Any]]:
    watched = BodySpy(app)
    with open_client(watched, token=None) as client:  # type: ignore[arg-type]
        yield watched, client


def test_every_api_route_but_the_open_ones_authenticates() -> None:
    routes = _api_routes()
    assert len(routes) >= 80, len(routes)
    strangers = {(m, p) for m, p, r in routes if not authenticates(r.dependant)}
    assert strangers == OPEN


def test_a_stranger_gets_401_and_a_viewer_403_before_the_body_is_read(spy: tuple[BodySpy, Any]) -> None:
    watched, client = spy
    checked = viewers = 0
    for method, path, route in _api_routes():
        if (method, path) in OPEN:
            continue
        url = _concrete(route)
        callers = [(None, 401)] + ([(VIEWER, 403)] if _writes(method, path) else [])
        for token, status in callers:
            watched.read = False
            headers = {"Content-Type": "application/json", **(bearer(token) if token else {})}
            response = client.request(method, url, content=MALFORMED, headers=headers)
            assert response.status_code == status, (method, path, token, response.text)
            assert response.json()["code"] == status
            assert not watched.read, (method, path, token, "the body was read")
            checked += 1
            viewers += token is not None
    assert checked >= 120 and viewers >= 40, (checked, viewers)


def test_a_viewer_still_reads_with_a_body_where_reading_takes_one(spy: tuple[BodySpy, Any]) -> None:
    """A preview is a read: a viewer's malformed preview body is read, and is the 400 it is."""
    watched, client = spy
    response = client.post(
        "/api/v1/workload-templates/distributed/preview",
        content=MALFORMED,
        headers={"Content-Type": "application/json", **bearer(VIEWER)},
    )
    assert response.status_code == 400 and watched.read


def test_the_uis_writes_read_no_strangers_form(app: FastAPI) -> None:
    """The UI's pages that change something answer a caller without a session with the sign-in page, and
    never read the form it sent (a large one included)."""
    watched = BodySpy(app)
    with open_client(watched, token=None) as client:  # type: ignore[arg-type]
        client.base_url = "http://localhost"
        big = "text=" + "x" * (1024 * 1024 - 100)
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        for url in ("/ui/scope/system/edit/defaults", "/ui/sign-out"):
            watched.read = False
            response = client.post(url, content=big, headers=form, follow_redirects=False)
            assert response.status_code == 303 and "/sign-in" in response.headers["location"], url
            assert not watched.read, url
