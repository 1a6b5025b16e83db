"""One access-log record per request, a request id to follow it by, and the log formats of ``serve``.

:class:`AccessLog` is the outermost ASGI middleware of the app (:func:`..app.create_app`): it takes the
request id from ``X-Request-Id`` when a proxy sends a readable one (:func:`request_id_of`; otherwise it draws
a fresh one), echoes it in the answer's ``X-Request-Id``, holds it in :data:`REQUEST_ID` for every log record
of the request (the 500's traceback included, :class:`RequestIdFilter`), and when the answer is sent logs one
:class:`Finished` record on ``template_engine.access`` and hands it to its observers (the metrics,
:mod:`.metrics`).  The route is the path's template (``/api/v1/workload-templates/{templateId}``), never the
raw path: what a metric may be labelled with (:class:`RouteTemplates`).

``serve`` configures logging with :func:`log_config`: every line on stderr, one JSON object each
(:class:`JsonFormatter`) or a line of text (:class:`TextFormatter`), in place of uvicorn's text access lines.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from contextvars import ContextVar
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

ACCESS_LOGGER = "template_engine.access"
_access = logging.getLogger(ACCESS_LOGGER)

#: A request id a client or proxy may choose: 1 to 128 characters of letters, digits and ``._:-`` (what
#: proxies send: a UUID, a hex trace id, HAProxy's ``%ID``).  Anything else is replaced by a fresh one, so a
#: log line never holds a client's arbitrary bytes.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")
REQUEST_ID_HEADER = b"x-request-id"
#: The request id of the request being answered (``None`` outside one).
REQUEST_ID: ContextVar[str | None] = ContextVar("template_engine_request_id", default=None)

#: The methods a route label may carry; any other is ``OTHER`` (a client chooses the method).
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
#: The route label of a path that matches no route (a 404): one label, whatever the path.
UNMATCHED = "unmatched"
#: A scope key of the app's own requests (its warm-up): neither logged nor counted.
INTERNAL = "template_engine.internal"
#: The longest path a log line keeps (the rest is cut, with ``...``).
MAX_LOGGED_PATH = 2048


def request_id_of(scope: Scope) -> str:
    """The request's ``X-Request-Id`` when it is one :data:`REQUEST_ID_PATTERN` accepts, else a fresh UUID
    (32 hex digits)."""
    for name, value in scope.get("headers") or ():
        if name == REQUEST_ID_HEADER:
            text: str = value.decode("latin-1")
            if REQUEST_ID_PATTERN.fullmatch(text):
                return text
            break
    return uuid.uuid4().hex


@dataclass(frozen=True, slots=True)
class Finished:
    """One request answered: what the access log writes and the metrics count."""

    time: str
    method: str
    route: str
    path: str
    status: int | None
    duration_ms: float
    request_id: str
    client: str | None


class RouteTemplates:
    """The path template of the route a request reaches, as the OpenAPI document writes it (Starlette's
    ``path_format``: ``{templateId}``, not ``{templateId:uuid}``): the route FastAPI's router matched
    (``scope["route"]``),
    or, for an answer given before routing (the answer cache's, a ``HEAD`` answered as ``GET``, a 413), the
    first route whose pattern matches path and method, then path alone, as Starlette's router chooses."""

    def __init__(self, routes: Iterable[Any]) -> None:
        self._routes: list[tuple[re.Pattern[str], frozenset[str], str]] = [
            (route.path_regex, frozenset(getattr(route, "methods", None) or ()), route.path_format)
            for route in routes
            if isinstance(getattr(route, "path_regex", None), re.Pattern)
            and isinstance(getattr(route, "path_format", None), str)
        ]
        self.find = functools.lru_cache(maxsize=4096)(self._find)

    def _find(self, method: str, path: str) -> str:
        partial = None
        for regex, methods, template in self._routes:
            if regex.match(path):
                if method in methods or (method == "HEAD" and "GET" in methods):
                    return template
                partial = partial or template
        return partial or UNMATCHED

    def of(self, scope: Scope) -> str:
        route = scope.get("route")
        template = getattr(route, "path_format", None)  # the path without its convertors (":uuid")
        if isinstance(template, str):
            return template
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "") or ""
        return self.find(scope.get("method", "GET"), path[len(root) :] if path.startswith(root) else path)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class AccessLog:
    """Outermost ASGI middleware: the request id, one access-log record and the observers (see the module)."""

    def __init__(
        self,
        app: ASGIApp,
        routes: RouteTemplates,
        observers: Sequence[Callable[[Finished], None]] = (),
    ) -> None:
        self.app = app
        self.routes = routes
        self.observers = tuple(observers)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(INTERNAL):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = request_id_of(scope)
        echoed = (REQUEST_ID_HEADER, request_id.encode("ascii"))
        status: int | None = None

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", ()), echoed]}
            await send(message)

        token = REQUEST_ID.set(request_id)
        try:
            await self.app(scope, receive, send_with_id)
        except Exception:
            status = status or 500
            raise
        finally:
            REQUEST_ID.reset(token)
            self._finished(scope, status, started, request_id)

    def _finished(self, scope: Scope, status: int | None, started: float, request_id: str) -> None:
        method = scope.get("method", "")
        path: str = scope.get("path", "")
        client = scope.get("client")
        finished = Finished(
            time=_now(),
            method=method if method in METHODS else "OTHER",
            route=self.routes.of(scope),
            path=path if len(path) <= MAX_LOGGED_PATH else path[: MAX_LOGGED_PATH - 3] + "...",
            status=status,
            duration_ms=round((time.perf_counter() - started) * 1000, 3),
            request_id=request_id,
            client=client[0] if client else None,
        )
        if _access.isEnabledFor(logging.INFO):
            _access.info(
                "%s %s %s", finished.method, finished.path, finished.status, extra={"access": finished}
            )
        for observe in self.observers:
            observe(finished)


# -- formats ------------------------------------------------------------------------------------------------


class RequestIdFilter(logging.Filter):
    """Gives every record the ``request_id`` of the request it was logged in (``None`` outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            record.request_id = REQUEST_ID.get()
        return True


def _record_time(record: logging.LogRecord) -> str:
    return (
        datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )


class JsonFormatter(logging.Formatter):
    """One JSON object per line: an access record's fields (:class:`Finished`), or ``time``, ``level``,
    ``logger``, ``message``, ``request_id`` (within a request) and ``exception`` (a traceback's text)."""

    def format(self, record: logging.LogRecord) -> str:
        access = getattr(record, "access", None)
        if isinstance(access, Finished):
            return json.dumps(asdict(access), ensure_ascii=False)
        data: dict[str, Any] = {
            "time": _record_time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            data["request_id"] = request_id
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        return json.dumps(data, ensure_ascii=False)


#: What :func:`text_safe` escapes: the backslash (so that an escape is never ambiguous), the ``"`` that
#: delimits the request line, every C0 control and DEL, every C1 control (U+0085 is a newline to some
#: readers) and the Unicode line and paragraph separators.
_UNSAFE = re.compile(r'[\\"\x00-\x1f\x7f-\x9f\u2028\u2029]')
_NAMED = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def text_safe(text: str) -> str:
    """``text`` with no character that could end a log line or forge one: ``\\n``, ``\\r``, ``\\t``,
    ``\\"`` and ``\\\\`` for those, ``\\xHH`` or ``\\uHHHH`` for the other controls (:data:`_UNSAFE`), as a
    Python string literal writes them. What a client sends (path, client address, a template's name in a
    warning) goes through it before a line of text is written; JSON lines escape it by themselves."""
    return _UNSAFE.sub(_escape, text)


#: A client address written bare in a text access line: what an IPv4 or IPv6 address (with a zone), a host
#: name or a socket path is made of.  Anything else (a space or a quote an ``X-Forwarded-For`` header put
#: there, uvicorn keeps its text as it came) is written as a quoted, escaped string, as the request line is.
_BARE_CLIENT = re.compile(r"[A-Za-z0-9._:%\[\]/-]+")


def text_client(client: str | None) -> str:
    """The client field of a text access line: ``-`` for none (an empty one is ``""``), the address as it
    is when :data:`_BARE_CLIENT` matches it, else ``"..."`` with :func:`text_safe` inside, so the field is
    always one token a reader can split on (a client named ``-`` is quoted too)."""
    if client is None:
        return "-"
    if client != "-" and _BARE_CLIENT.fullmatch(client):
        return client
    return f'"{text_safe(client)}"'


class TextFormatter(logging.Formatter):
    """A line of text: ``TIME LEVEL logger: message [request_id]``; an access record as
    ``TIME client "METHOD path" status duration ms route=... request_id=...`` (the client quoted when it is
    not an address: :func:`text_client`).

    Every field a client may choose, and every message (which may quote a path or a name), is
    :func:`text_safe`, so a record is exactly one line; a traceback follows on lines of its own, each indented
    by four spaces and escaped too, so that a line starting in column 0 is always the start of a record."""

    def format(self, record: logging.LogRecord) -> str:
        when = _record_time(record)
        access = getattr(record, "access", None)
        if isinstance(access, Finished):
            request = f"{text_safe(access.method)} {text_safe(access.path)}"
            return (
                f'{access.time} {text_client(access.client)} "{request}" '
                f"{access.status} {access.duration_ms:.1f} ms route={text_safe(access.route)} "
                f"request_id={text_safe(access.request_id)}"
            )
        line = f"{when} {record.levelname} {record.name}: {text_safe(record.getMessage())}"
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            line += f" [request_id={text_safe(str(request_id))}]"
        if record.exc_info:
            trace = self.formatException(record.exc_info)
            line += "".join(f"\n    {text_safe(part)}" for part in trace.split("\n"))
        return line


def log_config(log_format: str, level: str) -> dict[str, Any]:
    """The :func:`logging.config.dictConfig` of ``serve`` (uvicorn's ``log_config``, applied in each worker
    too): uvicorn's and the service's records on stderr in ``log_format`` (``json`` or ``text``) at ``level``,
    every other logger's warnings too (the root's handler); uvicorn's own access lines off
    (``uvicorn.access``), :class:`AccessLog` writes them."""
    formatter = JsonFormatter if log_format == "json" else TextFormatter
    handler = ["stderr"]
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": f"{__name__}.RequestIdFilter"}},
        "formatters": {"service": {"()": f"{__name__}.{formatter.__name__}"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "service",
                "filters": ["request_id"],
            }
        },
        "loggers": {
            "uvicorn": {"handlers": handler, "level": level.upper(), "propagate": False},
            "uvicorn.error": {"level": level.upper()},
            "uvicorn.access": {"handlers": [], "level": "CRITICAL", "propagate": False},
            "template_engine": {"handlers": handler, "level": level.upper(), "propagate": False},
        },
        # Any other library's record (SQLAlchemy's, alembic's, a Python warning's) in the same format, never
        # Python's last-resort handler writing plain text among the JSON lines.
        "root": {"handlers": handler, "level": "WARNING"},
    }
