"""A browser's session with the UI, and the guards every UI answer carries.

The session is the API's own bearer token (a token of the auth file, or one an application got from
``POST /api/v1/token``), kept in a cookie the page's script cannot read (``HttpOnly``), that no other site's
request carries (``SameSite=Strict``), that only travels over HTTPS (``Secure``, except on
``http://127.0.0.1`` and ``http://localhost``, for development) and only to the UI (``Path=/ui``).  Every
request is authenticated again with the :class:`~template_engine.service.auth.Authenticator`, so a token
removed from the auth file, or an application token that expired, ends the session, and a browser has
exactly the rights the token has over the API.

Cross-site request forgery: every state-changing request is a ``POST`` whose form carries the session's
CSRF token (an HMAC of the session token, so it needs no server-side state and is the same on every replica),
and is refused when its ``Origin`` (or, without one, its ``Referer``) names another host.  The sign-in form,
before there is a session, uses a random double-submit cookie instead.  ``GET`` never changes anything.

Every answer gets a strict Content-Security-Policy (scripts and styles from the UI's own path only, no inline
script, no framing), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy`` and ``Cache-Control: no-store``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from urllib.parse import parse_qs, urlsplit

from fastapi import Request
from fastapi.responses import Response
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from template_engine.service.auth import Authenticator, Principal

__all__ = [
    "SESSION_COOKIE",
    "SIGN_IN_COOKIE",
    "Guarded",
    "clear_session",
    "csrf_token",
    "form",
    "new_nonce",
    "principal_of",
    "protect",
    "same_origin",
    "set_session",
    "set_sign_in_cookie",
    "ui_path",
]

SESSION_COOKIE = "te_session"
#: The double-submit token of the sign-in form (there is no session to derive one from yet).
SIGN_IN_COOKIE = "te_sign_in"
_CSRF_CONTEXT = b"template-engine ui csrf v1"
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
#: The most fields a UI form has (a guard on what ``parse_qs`` builds).
MAX_FIELDS = 16

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def ui_path(request: Request) -> str:
    """Where the UI is mounted, behind any ``root_path`` (``/ui``)."""
    root: str = request.scope.get("root_path", "") or ""
    return root.rstrip("/") + "/ui"


def protect(response: Response) -> Response:
    """The guards of every UI answer (module doc)."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def _secure(request: Request) -> bool:
    """``Secure`` unless the page is served over plain HTTP on the loopback interface (development)."""
    return not (request.url.scheme == "http" and (request.url.hostname or "") in _LOOPBACK)


def _encode(token: str) -> str:
    return base64.urlsafe_b64encode(token.encode("utf-8")).decode("ascii")


def _decode(value: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(value.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        return None


def set_session(response: Response, request: Request, token: str) -> None:
    response.set_cookie(
        SESSION_COOKIE,
        _encode(token),
        path=ui_path(request),
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )


def clear_session(
    response: Response, request: Request, names: tuple[str, ...] = (SESSION_COOKIE, SIGN_IN_COOKIE)
) -> None:
    """Remove the session (and the sign-in form's token) from the browser."""
    for name in names:
        response.delete_cookie(
            name, path=ui_path(request), secure=_secure(request), httponly=True, samesite="strict"
        )


def new_nonce() -> str:
    """A new double-submit token for the sign-in form."""
    return secrets.token_urlsafe(32)


def set_sign_in_cookie(response: Response, request: Request, nonce: str) -> None:
    """The sign-in form's double-submit token, as the cookie its ``POST`` is compared with."""
    response.set_cookie(
        SIGN_IN_COOKIE,
        nonce,
        path=ui_path(request),
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )


def session_token(request: Request) -> str | None:
    value = request.cookies.get(SESSION_COOKIE)
    return _decode(value) if value else None


def principal_of(request: Request) -> tuple[Principal, str] | None:
    """The principal of the session and its token, or ``None`` (no session, or a token no longer valid)."""
    token = session_token(request)
    if not token:
        return None
    authenticator: Authenticator = request.app.state.authenticator
    principal = authenticator.authenticate(token)
    return (principal, token) if principal is not None else None


def csrf_token(token: str) -> str:
    """The CSRF token of a session: unguessable without the session token, and revealing nothing of it."""
    return hmac.new(token.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def csrf_ok(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode("utf-8"), csrf_token(token).encode("ascii"))


def sign_in_ok(request: Request, given: str | None) -> bool:
    expected = request.cookies.get(SIGN_IN_COOKIE)
    if not expected or given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _host(url: str) -> str | None:
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return parts.netloc.lower() if parts.scheme in ("http", "https") and parts.netloc else None


def same_origin(request: Request) -> bool:
    """Whether the request comes from the UI's own pages: its ``Origin`` (or, without one, ``Referer``)
    names the host it was sent to.  A request with neither passes (the CSRF token still has to match);
    ``Origin: null`` (a sandboxed or privacy-redirected request) does not."""
    host = (request.headers.get("host") or "").lower()
    origin = request.headers.get("origin")
    if origin is not None:
        return bool(host) and _host(origin) == host
    referer = request.headers.get("referer")
    if referer is not None:
        return bool(host) and _host(referer) == host
    return True


async def form(request: Request) -> dict[str, str] | None:
    """An ``application/x-www-form-urlencoded`` body as its fields (the first value of each), or ``None``
    when the body is not such a form or not UTF-8."""
    kind = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return None
    try:
        text = (await request.body()).decode("utf-8")
        fields = parse_qs(text, keep_blank_values=True, max_num_fields=MAX_FIELDS, errors="strict")
    except (UnicodeDecodeError, ValueError):
        return None
    return {name: values[0] for name, values in fields.items() if values}


class Guarded:
    """ASGI middleware: every answer under ``/ui`` carries :data:`HEADERS`, the errors the service answers
    before or outside the UI's routes included (a body too large, a path or method the UI does not have)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] == "http" else ""
        root = (scope.get("root_path", "") or "").rstrip("/")
        if not (path == f"{root}/ui" or path.startswith(f"{root}/ui/")):
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    if name not in headers:
                        headers[name] = value
            await send(message)

        await self.app(scope, receive, guarded)
