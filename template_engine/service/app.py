"""The application factory: :func:`create_app` wires settings, storage, auth, routes and error handling."""

from __future__ import annotations

import copy
import functools
import hashlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema
from sqlalchemy import Engine
from starlette.routing import BaseRoute

from template_engine._version import VERSION
from template_engine.models.spec import INT64_MAX, INT64_MIN
from template_engine.service import errors, metrics
from template_engine.service.access_log import INTERNAL, AccessLog, RouteTemplates
from template_engine.service.answers import AnswerCache, RevisionFeed
from template_engine.service.auth import DEV_APPLICATION, DEV_TOKENS, Authenticator
from template_engine.service.bodies import BODY_MODELS
from template_engine.service.cache import Answers
from template_engine.service.context import Store
from template_engine.service.openapi_limits import state_limits
from template_engine.service.routes import ROUTERS
from template_engine.service.settings import WORKER_SETTINGS, Settings
from template_engine.service.storage.database import Readiness, Revisions, create_db_engine, ensure_schema
from template_engine.service.storage.repository import Repository
from template_engine.service.storage.sessions import Sessions
from template_engine.service.tokens import Signer
from template_engine.service.ui.session import Guarded

_log = logging.getLogger("template_engine.service")


class ConfigError(Exception):
    """The service cannot start with these settings (the message says why)."""


DESCRIPTION = """\
Distributed training templates, org defaults per scope, assets, departments, projects and workloads, shaped
like the NVIDIA Run:ai control-plane API, composed by `template_engine`.

Every endpoint but `/health`, `POST /api/v1/token` and this document needs `Authorization: Bearer <token>`
(exactly one): a token of the auth file, or one an application got from `POST /api/v1/token` with its client
credentials (as Run:ai's Python SDK logs in).  Errors are `{code, message, details?}`; validation problems are
400 with `details` naming each field, all of a request's problems in one answer.  Bodies are strict JSON
objects: a key given twice, `NaN`, `Infinity`, numbers out of range, NUL characters and lone surrogates are
refused with 400 before anything is stored.  `OPTIONS` answers with `Allow`; `HEAD` is answered as `GET`
without the body wherever `GET` is.

Where this service answers a status Run:ai's operation does not declare (400 for an id that is not a UUID or
a filter it cannot read, 409 for a name taken, 412 for a stale `If-Match`, 413 for a body too large), each
operation declares it here; docs/http-api.md lists them.
"""


def _version() -> str:
    """The package's version (``template_engine/_version.py``, what ``pyproject.toml`` builds with): the same
    in an installed copy and in an uninstalled tree, read without scanning the installed distributions."""
    return VERSION


def authenticator_for(settings: Settings) -> Authenticator:
    if settings.auth_file is not None:
        return Authenticator.from_file(settings.auth_file)
    if settings.dev_tokens:
        if settings.dev_signing_key is None:
            return Authenticator.development()
        client_id, secret, principal = DEV_APPLICATION
        return Authenticator(
            [(hashlib.sha256(token.encode()).digest(), who) for _, token, who in DEV_TOKENS],
            {client_id: (hashlib.sha256(secret.encode()).digest(), principal)},
            Signer(settings.dev_signing_key),
        )
    raise ConfigError(
        "no auth file: give --auth-file (or TEMPLATE_ENGINE_AUTH_FILE), or --dev for the development tokens"
    )


def prepare(settings: Settings) -> None:
    """What ``serve --workers N`` does once, before its workers start: the auth file is read (so a bad one
    stops it there), the schema created or checked and ``settings.seed`` imported into an empty database."""
    _authenticator(settings)
    engine = create_db_engine(settings.database_url)
    try:
        _migrate_and_seed(engine, settings)
    finally:
        engine.dispose()


def app_from_workers() -> FastAPI:
    """The application of one ``serve --workers N`` worker (uvicorn's factory), from the settings its parent
    left in the environment; a Python warning is a log record there too, as in the parent."""
    logging.captureWarnings(True)
    return create_app(Settings.from_workers(os.environ[WORKER_SETTINGS]))


def _authenticator(settings: Settings) -> Authenticator:
    from template_engine.service.auth import AuthFileError

    try:
        return authenticator_for(settings)
    except AuthFileError as exc:
        raise ConfigError(str(exc)) from None


def _migrate_and_seed(engine: Engine, settings: Settings) -> None:
    ensure_schema(engine)  # an empty database gets the schema; one not at the head is refused
    if settings.seed is not None:
        from template_engine.service.importer import seed_if_empty

        report = seed_if_empty(engine, settings.seed)
        if report is None:
            _log.warning(
                "--seed %s skipped: the database already holds data (use `db import` to load it)",
                settings.seed,
            )
        else:
            _log.info("seeded the database from %s", settings.seed)
    if settings.dev_tokens and settings.auth_file is None:
        for line in unbound_dev_tokens(engine):
            _log.warning("%s", line)


def unbound_dev_tokens(engine: Engine) -> list[str]:
    """A line for each development token bound to a department or project this database does not have
    (an org seeded from another folder than ``templates/``): that token sees the system scope only."""
    with engine.connect() as connection:
        repo = Repository(connection)
        departments = {row.name for row in repo.departments()}
        projects = {row.name for row in repo.projects()}
    lines = []
    for _, token, who in DEV_TOKENS:
        if who.department is not None and who.department not in departments:
            scope, names = f"department {who.department!r}", departments
        elif who.project is not None and who.project not in projects:
            scope, names = f"project {who.project!r}", projects
        else:
            continue
        lines.append(
            f"development token {token} ({who.role} of {scope}) matches no {scope.split()[0]} of this "
            f"database ({', '.join(sorted(names)) or 'none'}): it sees the system scope only; "
            "give an auth file (--auth-file) to bind tokens to this org's scopes"
        )
    return lines


def create_app(settings: Settings, *, clock: Callable[[], float] = time.time) -> FastAPI:
    """A ready application: the schema is created or checked (:func:`ensure_schema`), and ``settings.seed``
    imported into an empty database, before this returns.  ``clock`` (seconds since the epoch) is what the
    UI's sessions read the time from: a test gives its own to see a session expire without waiting."""
    authenticator = _authenticator(settings)
    engine = create_db_engine(settings.database_url)
    try:
        _migrate_and_seed(engine, settings)
    except BaseException:  # a schema refused, a seed that failed: no connection is left open
        engine.dispose()
        raise
    revisions = Revisions(engine)
    readiness = Readiness(engine)
    feed = RevisionFeed(revisions.read)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        feed.open()
        unwatch_pool = metrics.watch_pool(engine)  # while serving: each lifespan counts its pool once
        await _warm_up(app)
        yield
        feed.close()
        unwatch_pool()
        revisions.dispose()
        readiness.dispose()
        engine.dispose()

    app = FastAPI(
        title="template-engine",
        version=_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
        # No Swagger UI or ReDoc pages: they run scripts loaded from a CDN, and in the UI's origin any script
        # can request /ui pages with the signed-in user's cookie. /openapi.json stays (any OpenAPI viewer).
        docs_url=None,
        redoc_url=None,
    )
    app.state.store = Store(engine)
    app.state.authenticator = authenticator
    app.state.settings = settings
    app.state.sessions = Sessions(engine)
    app.state.readiness = readiness
    app.state.clock = clock
    errors.install(app)
    app.router.routes.extend(_shared_routes())
    app.dependency_overrides = _NoOverrides()
    routes = [*app.router.routes, *(r for router in ROUTERS for r in router.routes)]
    app.state.methods = errors.Methods(routes)
    if settings.cache_bytes > 0:  # innermost of the three: Guard answers its failures, Head strips its bodies
        app.state.answers = Answers(max_bytes=settings.cache_bytes)
        app.add_middleware(AnswerCache, answers=app.state.answers, feed=feed, authenticator=authenticator)
    app.add_middleware(errors.Guard, limit=settings.max_body_bytes)
    app.add_middleware(Guarded)  # the UI's security headers on every answer under /ui, errors included
    app.add_middleware(errors.Head, methods=app.state.methods)  # no answer to HEAD has a body
    app.add_middleware(  # outermost: the request id, the access log and the metrics see every answer
        AccessLog,
        routes=RouteTemplates(routes),
        observers=[metrics.observe_request],
    )

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _cached_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


@functools.cache
def _shared_routes() -> tuple[BaseRoute, ...]:
    """The routes of :data:`ROUTERS`, included once per process and shared by every app.

    ``app.include_router`` would give each app new route objects, and FastAPI builds each route's validation
    models (its dependant, body and response fields) for every one of them: about 0.12 CPU-s per app.  The
    routes hold no state of an app (endpoints reach it through ``request.app.state``), so every app takes
    these.  They are included into a router with the defaults ``FastAPI()`` gives its own, so they are the
    routes (paths, operation ids, response classes, limits) that ``app.include_router`` would have made; but
    FastAPI's ``dependency_overrides_provider`` is that router, not an app, so ``app.dependency_overrides``
    cannot work and is refused (:class:`_NoOverrides`).  Event handlers and lifespans of the routers would
    not reach the apps either: they have none, and this checks it.
    """
    parent = APIRouter(strict_content_type=True)  # as FastAPI() makes its own router
    default_lifespan = type(parent.lifespan_context)
    for router in ROUTERS:
        if (
            router.on_startup
            or router.on_shutdown
            or not isinstance(router.lifespan_context, default_lifespan)
        ):
            raise TypeError(f"{router.prefix or '/'}: a router shared by every app cannot have a lifespan")
        parent.include_router(router)
    return tuple(parent.routes)


class _NoOverrides(dict[Callable[..., Any], Callable[..., Any]]):
    """``app.dependency_overrides`` of an app of :func:`create_app`: always empty, since the routes are
    shared by every app of the process (:func:`_shared_routes`) and FastAPI would not look here."""

    def __setitem__(self, key: Callable[..., Any], value: Callable[..., Any]) -> None:
        raise NotImplementedError(
            "the routes of create_app's apps are shared by every app of the process: "
            "app.dependency_overrides is not supported"
        )


async def _warm_up(app: FastAPI) -> None:
    """Route one request that matches nothing before serving.

    FastAPI builds each route's validation models on the first request that reaches it, inside
    ``warnings.catch_warnings()``, which is not thread-safe; concurrent first requests could then leak
    pydantic warnings.  A request that matches no route builds them all, once, before the first client (once
    per process, in fact: the apps share their routes, :func:`_shared_routes`).
    """
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/.template-engine-warm-up",
        "raw_path": b"/.template-engine-warm-up",
        "root_path": "",
        "query_string": b"",
        "headers": [],
        "client": ("127.0.0.1", 0),
        "server": ("127.0.0.1", 0),
        INTERNAL: True,  # not a client's: neither logged nor counted
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: Any) -> None:
        return None

    await app(scope, receive, send)


#: The OpenAPI document by (title, version, description) of the app: the rest it depends on is the code (the
#: routes of :func:`_shared_routes`, the same for every app of the process); no setting changes it.
_documents: dict[tuple[str, str, str], dict[str, Any]] = {}
_documents_lock = threading.Lock()


def _cached_document(app: FastAPI) -> dict[str, Any]:
    """:func:`_document`, built once per process (0.5 to 1.2 CPU-s) and copied for each app that serves it
    (0.01 CPU-s), so that no app sees another's changes to its own."""
    shared = {id(route) for route in _shared_routes()}
    if any(id(route) not in shared and getattr(route, "include_in_schema", True) for route in app.routes):
        return _document(app)  # a route added to this app alone: not the document of the others
    key = (app.title, app.version, app.description)
    with _documents_lock:
        document = _documents.get(key)
        if document is None:
            document = _documents[key] = _document(app)
    return copy.deepcopy(document)


def _document(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document without its 422 answers: validation problems are answered 400 here."""
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            responses.pop("422", None)
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    _add_body_models(components)
    _exact_bounds(schema)
    state_limits(schema)
    return schema


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
#: The integer bounds a float cannot hold: FastAPI's document model keeps ``minimum`` and ``maximum`` as
#: floats, and ``float(INT64_MAX)`` is ``2**63``, one past the bound.
_EXACT = {float(bound): bound for bound in (INT64_MIN, INT64_MAX)}


def _exact_bounds(node: Any) -> None:
    """Integer bounds written as integers again (``2147483647``, not ``2147483647.0``; int64's exactly)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _BOUNDS and isinstance(value, float) and value.is_integer():
                node[key] = _EXACT.get(value, int(value))
            else:
                _exact_bounds(value)
    elif isinstance(node, list):
        for item in node:
            _exact_bounds(item)


def _add_body_models(components: dict[str, Any]) -> None:
    """The models of the bodies that routes check themselves (:mod:`.bodies`), which FastAPI does not see."""
    _, top = models_json_schema(
        [(model, "validation") for model in BODY_MODELS], ref_template="#/components/schemas/{model}"
    )
    for name, definition in top.get("$defs", {}).items():
        components.setdefault(name, definition)
