"""A browser's session with the UI, and the guards every UI answer carries.

Signing in takes one of the API's bearer tokens (a token of the auth file, or one an application got from
``POST /api/v1/token``) and opens a session in the database (:mod:`..storage.sessions`): the cookie holds
the session's random id, never the token, and the token is not kept anywhere after the sign-in request.  The
cookie is one the page's script cannot read (``HttpOnly``), that no other site's request carries
(``SameSite=Strict``), that only travels over HTTPS (``Secure``, except on ``http://127.0.0.1`` and
``http://localhost``, for development) and only to the UI (``Path=/ui``).

Every request looks the session up in the database, so every process on it knows a session the moment it
opens and none after sign-out deletes it (a copied cookie stops working then).  A session ends at its
expiry (``Settings.session_seconds`` after sign-in, 8 hours by default, or when the application token it was
opened with expires, if sooner), and as soon as its credential leaves the auth file or the binding it signed
in changes (:meth:`~template_engine.service.auth.Authenticator.holder`).  An unknown, revoked or expired id
is no session: the visitor is signed out.  The time is read from ``app.state.clock`` (``create_app``'s
``clock``), so a test moves it instead of waiting.

Cross-site request forgery: every state-changing request is a ``POST`` whose form carries the session's
CSRF token (an HMAC of the session id, so it needs no more state than the session and is the same on every
replica), and is refused when its ``Origin`` (or, without one, its ``Referer``) names another host.  The
sign-in form, before there is a session, uses a random double-submit cookie instead.  ``GET`` never changes
anything.

Every answer gets a strict Content-Security-Policy (scripts and styles from the UI's own path only, no inline
script, no framing), ``X-Content-Type-Options: nosniff``, ``Referrer-Policy`` and ``Cache-Control: no-store``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlsplit

from fastapi import Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from template_engine.service.auth import Authenticator, Credential, Principal
from template_engine.service.storage.sessions import SessionRow, Sessions

__all__ = [
    "SESSION_COOKIE",
    "SIGN_IN_COOKIE",
    "Guarded",
    "SignedIn",
    "clear_session",
    "csrf_token",
    "end_session",
    "form",
    "new_nonce",
    "open_session",
    "protect",
    "same_origin",
    "set_sign_in_cookie",
    "signed_in",
    "signed_in_form",
    "ui_path",
]

SESSION_COOKIE = "te_session"
#: The double-submit token of the sign-in form (there is no session to derive one from yet).
SIGN_IN_COOKIE = "te_sign_in"
_CSRF_CONTEXT = b"template-engine ui csrf v2"
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


@dataclass(frozen=True, slots=True)
class SignedIn:
    """The caller of a request with a session: its principal and the session's id (the cookie's value)."""

    principal: Principal
    session_id: str

    @property
    def csrf(self) -> str:
        return csrf_token(self.session_id)


def _now(request: Request) -> datetime:
    clock: Callable[[], float] = request.app.state.clock
    return datetime.fromtimestamp(clock(), UTC)


def _sessions(request: Request) -> Sessions:
    sessions: Sessions = request.app.state.sessions
    return sessions


def open_session(response: Response, request: Request, credential: Credential) -> None:
    """Open a session for ``credential`` in the database and give the browser its id in the cookie."""
    now = _now(request)
    lifetime = timedelta(seconds=request.app.state.settings.session_seconds)
    expires = now + lifetime
    if credential.expires is not None:
        expires = min(expires, datetime.fromtimestamp(credential.expires, UTC))
    principal = credential.principal
    row = SessionRow(
        principal.subject,
        principal.role,
        principal.department,
        principal.project,
        credential.ref,
        now,
        expires,
    )
    session_id = _sessions(request).open(row)
    response.set_cookie(
        SESSION_COOKIE,
        session_id,
        max_age=max(1, int((expires - now).total_seconds())),
        path=ui_path(request),
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )


def signed_in(request: Request) -> SignedIn | None:
    """The session of the request's cookie, or ``None``: no cookie, an id the database does not hold (never
    opened, signed out, or a value made by hand), a session past its expiry, or one whose credential no
    longer signs in its principal."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if not session_id:
        return None
    row = _sessions(request).find(session_id, _now(request))
    if row is None:
        return None
    authenticator: Authenticator = request.app.state.authenticator
    holder = authenticator.holder(row.credential)
    stored = (row.subject, row.role, row.department, row.project)
    if holder is None or (holder.subject, holder.role, holder.department, holder.project) != stored:
        return None
    return SignedIn(holder, session_id)


def end_session(request: Request) -> None:
    """Revoke the request's session in the database (every process stops knowing it)."""
    session_id = request.cookies.get(SESSION_COOKIE)
    if session_id:
        _sessions(request).revoke(session_id)


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


def csrf_token(session_id: str) -> str:
    """The CSRF token of a session: unguessable without the session's id, and revealing nothing of it."""
    return hmac.new(session_id.encode("utf-8"), _CSRF_CONTEXT, hashlib.sha256).hexdigest()


def csrf_ok(given: str | None, session_id: str) -> bool:
    expected = csrf_token(session_id).encode("ascii")
    return given is not None and hmac.compare_digest(given.encode("utf-8"), expected)


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


async def signed_in_form(request: Request) -> dict[str, str] | None:
    """:func:`form`, read only for a signed-in caller: a stranger's body is never parsed (the page answers
    it with the sign-in page), as the API checks the token before it reads a body."""
    if await run_in_threadpool(signed_in, request) is None:
        return None
    return await form(request)


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
