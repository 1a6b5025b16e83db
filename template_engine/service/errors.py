"""Every failure the service answers: ``{code, message, details?}`` (Run:ai's ``Error``), never a traceback.

``details`` is one line per problem (``field: message``); ``problems`` repeats them as records (``field``,
``message``, ``expected``...) for programs.  The engine's :class:`~template_engine.errors.TemplateEngineError`
problems keep their field paths.  A request that breaks is logged with its traceback and answered
``500 Something went wrong.``; the client never sees the traceback.

A pattern a field is checked against is shown in plain words (:data:`~.schemas.PATTERN_RULES`), never as
the regular expression.  A 405 names in ``Allow`` every method its path takes, and ``OPTIONS`` on a path of
the API answers 204 with that same ``Allow``.  ``HEAD`` is answered as ``GET`` without the body wherever
``GET`` is (:class:`Head`), so ``Allow`` names it there.
"""

from __future__ import annotations

import difflib
import logging
import re
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from enum import Enum
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from template_engine.errors import Problem, TemplateEngineError
from template_engine.loader.validate import (
    NUMBER_KINDS,
    another_kinds_field,
    model_at,
    placed,
    real_path,
    yaml_number_hint,
)
from template_engine.paths import Path
from template_engine.service.schemas import ID_PATTERN, PATTERN_RULES
from template_engine.service.storage.repository import StaleVersion, Unstorable

log = logging.getLogger("template_engine.service")

#: Run:ai's canonical messages (reference/runai-facts.md 7.4).
MESSAGES: dict[int, str] = {
    400: "Bad request.",
    401: "Issuer is not familiar.",
    403: "You do not have sufficient permissions.",
    404: "Resource id not found.",
    405: "Method not allowed.",
    409: "Resource with this name already exists",
    412: "The resource has changed since it was read.",
    413: "Request body is too large.",
    415: "Unsupported media type.",
    500: "Something went wrong.",
    503: "Please try again in few minutes.",
}


class Reason(Enum):
    """Why a request was refused, as callers branch on it (never on a status number or a message)."""

    INVALID = "invalid"  # 400
    UNAUTHENTICATED = "unauthenticated"  # 401
    FORBIDDEN = "forbidden"  # 403
    NOT_FOUND = "not found"  # 404
    NOT_ALLOWED = "method not allowed"  # 405
    CONFLICT = "conflict"  # 409
    STALE = "stale"  # 412
    TOO_LARGE = "too large"  # 413
    UNSUPPORTED = "unsupported media type"  # 415
    FAILED = "failed"  # 500 and any other status
    UNAVAILABLE = "unavailable"  # 503


#: The reason of each status an :class:`ApiError` is answered with: the one place they are paired.
REASONS: dict[int, Reason] = {
    400: Reason.INVALID,
    401: Reason.UNAUTHENTICATED,
    403: Reason.FORBIDDEN,
    404: Reason.NOT_FOUND,
    405: Reason.NOT_ALLOWED,
    409: Reason.CONFLICT,
    412: Reason.STALE,
    413: Reason.TOO_LARGE,
    415: Reason.UNSUPPORTED,
    503: Reason.UNAVAILABLE,
}


class ApiError(Exception):
    """An answer other than success, with its status, message, details and any extra body fields; callers
    branch on its :attr:`reason`."""

    def __init__(
        self,
        status: int,
        message: str | None = None,
        problems: Sequence[Problem] = (),
        extra: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status = status
        self.message = message or MESSAGES.get(status, "Error.")
        self.problems = tuple(problems)
        self.extra = dict(extra or {})
        self.headers = dict(headers or {})
        super().__init__(self.message)

    @property
    def reason(self) -> Reason:
        """Why the request was refused (:data:`REASONS`)."""
        return REASONS.get(self.status, Reason.FAILED)

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.status, "message": self.message}
        if self.problems:
            out["details"] = details(self.problems)
            out["problems"] = [p.to_dict() for p in self.problems]
        out.update(self.extra)
        return out


def details(problems: Iterable[Problem]) -> str:
    return "\n".join(p.field_line() for p in problems)


def bad_request(problems: Sequence[Problem], message: str = "The request is not valid.") -> ApiError:
    return ApiError(400, message, problems)


def field_error(path: Path, message: str, expected: str | None = None) -> ApiError:
    return bad_request([Problem(message, path, None, expected)])


def not_found(what: str) -> ApiError:
    return ApiError(404, f"Resource id not found: {what}.")


def from_engine(error: TemplateEngineError, status: int = 400) -> ApiError:
    return ApiError(status, "The request cannot be composed.", error.problems)


class BodyTooLarge(StarletteHTTPException):
    """Raised while a request body is read past the limit (an HTTPException so FastAPI lets it through)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"Request body is larger than {limit} bytes.")


# -- validation errors --------------------------------------------------------------------------------------


def _unknown_field(name: str, path: Path, model: type[BaseModel] | None, loc: tuple[Any, ...]) -> Problem:
    """An unknown field of a body, with the field of its object it is closest to when ``model`` (the body's
    model) is known: the same did-you-mean as a file's (``loader/validate.py``)."""
    holder = model_at(model, loc) if model is not None else None
    if holder is None:
        return Problem(f"unknown field {name!r}", path, None, "a field of this object")
    of_kind = another_kinds_field(holder, name, path, None)
    if of_kind is not None:
        return of_kind
    allowed = sorted(field.alias or key for key, field in holder.model_fields.items())
    close = difflib.get_close_matches(name, allowed, n=1)
    if close:
        return Problem(
            f"unknown field {name!r} (did you mean {close[0]!r}?)",
            path,
            None,
            f"{close[0]!r} or another field of this section",
        )
    return Problem(f"unknown field {name!r}", path, None, "one of: " + ", ".join(allowed))


def validation_problems(
    errors: Sequence[Any], body: Any, model: type[BaseModel] | None = None
) -> list[Problem]:
    """Pydantic's errors of a request as problems; ``model`` (the body's, when known) gives an unknown
    field its did-you-mean."""
    problems: list[Problem] = []
    seen: set[tuple[str, Path]] = set()
    for given in errors:
        err = placed(given, body, 1)
        loc = tuple(err.get("loc", ()))
        where, rest = (loc[0], loc[1:]) if loc else ("body", ())
        kind = err.get("type", "")
        if kind == "json_invalid":
            error = (err.get("ctx") or {}).get("error", "invalid JSON")
            problem = Problem(
                f"malformed JSON: {error} at character {rest[0] if rest else 0}", (), None, "JSON"
            )
        elif where == "body":
            path = real_path(body, tuple(rest))
            if not rest and kind == "missing":
                problem = Problem("a JSON body is required", (), None, "Content-Type: application/json")
            elif kind == "extra_forbidden":
                problem = _unknown_field(str(rest[-1]), path, model, tuple(rest))
            elif kind == "missing":
                problem = Problem(f"missing required field {str(rest[-1])!r}", path)
            elif not rest and kind in ("model_attributes_type", "dict_type"):
                problem = _not_an_object(err.get("input"))
            else:
                problem = Problem(_invalid(err), path)
        else:
            name = ".".join(str(p) for p in rest) or where
            problem = Problem(f"{where} parameter: {_invalid(err)}", (name,))
        if (problem.message, problem.path) not in seen:
            seen.add((problem.message, problem.path))
            problems.append(problem)
    return problems


def _not_an_object(got: Any) -> Problem:
    if isinstance(got, bytes | bytearray):  # FastAPI reads only a JSON Content-Type as JSON
        return Problem("the body is not JSON", (), None, "Content-Type: application/json")
    sent = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(got), "a number"
    )
    return Problem(f"the body must be a JSON object, not {sent}", (), None, "a JSON object")


#: What a JSON value of the wrong type should have been, by pydantic's error type.
_SHAPES = {
    "model_type": "an object",
    "model_attributes_type": "an object",
    "dict_type": "an object",
    "list_type": "an array",
}


#: The fields that hold a department or project id, wherever one is read.
_ID_FIELDS = frozenset({"departmentId", "projectId", "parentId", "scopeId"})


def _invalid(err: Mapping[str, Any]) -> str:
    """Pydantic's message and what was sent (``Input should be a valid number (got 'x')``); a pattern in plain
    words."""
    got = err.get("input")
    if isinstance(got, Mapping | list):
        shown = "an object" if isinstance(got, Mapping) else "an array"
    else:
        shown = repr(got)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
    message = err.get("msg", "invalid value")
    if err.get("type") in _SHAPES:  # pydantic names the model's class: say what JSON belongs there
        message = f"must be {_SHAPES[err['type']]}"
    loc = tuple(err.get("loc", ()))
    if loc and loc[-1] in _ID_FIELDS and err.get("type") == "int_parsing":
        message = PATTERN_RULES[ID_PATTERN]  # an id read as a number: the words of every other id door
    elif err.get("type") == "string_pattern_mismatch":
        message = PATTERN_RULES.get((err.get("ctx") or {}).get("pattern", ""), message)
    if isinstance(got, str) and err.get("type") in NUMBER_KINDS:  # a YAML form's 1e308, as the loader says
        hint = yaml_number_hint(got, str(err.get("type")).startswith("int")).strip()
        shown += f"; {hint[1:-1]}" if hint else ""
    return f"{message} (got {shown})"


# -- allowed methods ----------------------------------------------------------------------------------------

_METHOD_ORDER = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


class Methods:
    """Every method each path of the app takes, for ``Allow`` (one route holds one method, so the route that
    answers 405 knows only its own)."""

    def __init__(self, routes: Iterable[Any]) -> None:
        self._routes: list[tuple[re.Pattern[str], frozenset[str]]] = [
            (route.path_regex, frozenset(route.methods))
            for route in routes
            if isinstance(getattr(route, "path_regex", None), re.Pattern) and getattr(route, "methods", None)
        ]

    def taken(self, path: str) -> set[str]:
        """The methods of every route on ``path``, HEAD wherever GET is (:class:`Head`), and OPTIONS."""
        methods = {"OPTIONS"}
        for regex, taken in self._routes:
            if regex.match(path):
                methods |= taken
        if "GET" in methods:
            methods.add("HEAD")
        return methods

    def allow(self, path: str) -> str:
        """``Allow`` for ``path``: :meth:`taken`, in the usual order."""
        order = {method: index for index, method in enumerate(_METHOD_ORDER)}
        return ", ".join(sorted(self.taken(path), key=lambda m: (order.get(m, len(order)), m)))


def _route_path(request: Request | Scope) -> str:
    scope = request.scope if isinstance(request, Request) else request
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


class Head:
    """Outermost ASGI middleware: ``HEAD`` is answered as ``GET``, without the body (RFC 9110 9.3.2), on
    every path that takes ``GET`` (a FastAPI route takes only the methods it names, so ``HEAD`` was a 405).
    On other paths it stays ``HEAD``: a 405 with ``Allow``, or a 404.  No answer to ``HEAD`` carries a body;
    its headers are the ``GET``'s, ``Content-Length`` included."""

    def __init__(self, app: ASGIApp, methods: Methods) -> None:
        self.app = app
        self.methods = methods

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        if "GET" in self.methods.taken(_route_path(scope)):
            scope = {**scope, "method": "GET"}

        async def without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app(scope, receive, without_body)


# -- handlers -----------------------------------------------------------------------------------------------

#: PostgreSQL's SQLSTATE ``foreign_key_violation`` (class 23, integrity constraint violation).
POSTGRES_FOREIGN_KEY_VIOLATION = "23503"


def violates_foreign_key(error: IntegrityError) -> bool:
    """Whether the driver says ``error`` broke a foreign key: SQLite's extended result code
    (``SQLITE_CONSTRAINT_FOREIGNKEY``), or PostgreSQL's SQLSTATE as psycopg gives it (``sqlstate``, or
    ``diag.sqlstate``).  Never read from the message text."""
    orig = error.orig
    if isinstance(orig, sqlite3.Error):
        return getattr(orig, "sqlite_errorcode", None) == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
    sqlstate = getattr(orig, "sqlstate", None) or getattr(getattr(orig, "diag", None), "sqlstate", None)
    return sqlstate == POSTGRES_FOREIGN_KEY_VIOLATION


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers or None)


def _body_model(request: Request) -> type[BaseModel] | None:
    """The pydantic model of the matched route's JSON body, if it has one."""
    field = getattr(request.scope.get("route"), "body_field", None)
    annotation = getattr(getattr(field, "field_info", None), "annotation", None)
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def install(app: FastAPI) -> None:
    """Register the exception handlers on ``app``."""

    async def api_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, ApiError)
        return error_response(exc)

    async def request_validation(request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        problems = validation_problems(exc.errors(), getattr(exc, "body", None), _body_model(request))
        return error_response(bad_request(problems))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        message = exc.detail if isinstance(exc.detail, str) and exc.status_code == 413 else None
        headers = dict(exc.headers or {})
        if exc.status_code == 404:
            message = "No such endpoint."
        if exc.status_code == 405:
            headers["Allow"] = request.app.state.methods.allow(_route_path(request))
            if request.method == "OPTIONS":
                return Response(status_code=204, headers=headers)
            message = f"Method {request.method} is not allowed here; this path takes {headers['Allow']}."
        return error_response(ApiError(exc.status_code, message, headers=headers))

    async def stale(_request: Request, _exc: Exception) -> JSONResponse:
        return error_response(
            ApiError(409, "The resource was changed by another request at the same time; read it and retry.")
        )

    async def integrity(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, IntegrityError)
        if violates_foreign_key(exc):
            return error_response(ApiError(409, "The resource is in use or refers to one that is gone."))
        return error_response(ApiError(409))

    async def unstorable(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, Unstorable)
        path = exc.path if exc.column == "document" else (exc.column, *exc.path)
        return error_response(bad_request([Problem(f"cannot be stored: {exc.reason}", path)]))

    async def unavailable(_request: Request, exc: Exception) -> JSONResponse:
        log.warning("database unavailable: %s", type(exc).__name__)
        return error_response(ApiError(503))

    async def engine_error(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, TemplateEngineError)
        return error_response(from_engine(exc))

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, request_validation)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(StaleVersion, stale)
    app.add_exception_handler(IntegrityError, integrity)
    app.add_exception_handler(Unstorable, unstorable)
    app.add_exception_handler(OperationalError, unavailable)
    app.add_exception_handler(DBAPIError, unavailable)
    app.add_exception_handler(TemplateEngineError, engine_error)


# -- middleware ---------------------------------------------------------------------------------------------


class Guard:
    """Outer ASGI middleware: refuses bodies over ``limit`` bytes (413) and turns any unhandled exception into
    ``500 Something went wrong.`` (logged with its traceback, never shown)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await _send_error(send, ApiError(400, "Content-Length is not a number."))
                return
            if size > self.limit:
                await _send_error(send, ApiError(413, f"Request body is larger than {self.limit} bytes."))
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:
                    raise BodyTooLarge(self.limit)
            return message

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge as exc:
            if not started:
                await _send_error(send, ApiError(413, str(exc.detail)))
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await _send_error(send, ApiError(500))


async def _send_error(send: Send, error: ApiError) -> None:
    response = error_response(error)
    await send(
        {"type": "http.response.start", "status": response.status_code, "headers": response.raw_headers}
    )
    await send({"type": "http.response.body", "body": response.body})
