"""The application factory: :func:`create_app` wires settings, storage, auth, routes and error handling."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic.json_schema import models_json_schema
from sqlalchemy import Engine

from template_engine.service import errors
from template_engine.service.answers import AnswerCache, RevisionFeed
from template_engine.service.auth import DEV_APPLICATION, DEV_TOKENS, Authenticator
from template_engine.service.bodies import BODY_MODELS
from template_engine.service.cache import Answers
from template_engine.service.context import Store
from template_engine.service.routes import ROUTERS
from template_engine.service.settings import WORKER_SETTINGS, Settings
from template_engine.service.storage.database import Revisions, create_db_engine, migrate
from template_engine.service.tokens import Signer

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
    try:
        return version("template-engine")
    except PackageNotFoundError:  # pragma: no cover - only when run from an uninstalled tree
        return "0"


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
    stops it there), the schema created or migrated and ``settings.seed`` imported into an empty database."""
    _authenticator(settings)
    engine = create_db_engine(settings.database_url)
    try:
        _migrate_and_seed(engine, settings)
    finally:
        engine.dispose()


def app_from_workers() -> FastAPI:
    """The application of one ``serve --workers N`` worker (uvicorn's factory), from the settings its parent
    left in the environment."""
    return create_app(Settings.from_workers(os.environ[WORKER_SETTINGS]))


def _authenticator(settings: Settings) -> Authenticator:
    from template_engine.service.auth import AuthFileError

    try:
        return authenticator_for(settings)
    except AuthFileError as exc:
        raise ConfigError(str(exc)) from None


def _migrate_and_seed(engine: Engine, settings: Settings) -> None:
    migrate(engine)
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


def create_app(settings: Settings) -> FastAPI:
    """A ready application: the schema is created or migrated, and ``settings.seed`` imported into an empty
    database, before this returns."""
    authenticator = _authenticator(settings)
    engine = create_db_engine(settings.database_url)
    _migrate_and_seed(engine, settings)
    revisions = Revisions(engine)
    feed = RevisionFeed(revisions.read)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        feed.open()
        await _warm_up(app)
        yield
        feed.close()
        revisions.dispose()
        engine.dispose()

    app = FastAPI(
        title="template-engine",
        version=_version(),
        description=DESCRIPTION,
        lifespan=lifespan,
    )
    app.state.store = Store(engine)
    app.state.authenticator = authenticator
    app.state.settings = settings
    errors.install(app)
    for router in ROUTERS:
        app.include_router(router)
    app.state.methods = errors.Methods(
        [*app.router.routes, *(r for router in ROUTERS for r in router.routes)]
    )
    if settings.cache_bytes > 0:  # innermost of the three: Guard answers its failures, Head strips its bodies
        app.state.answers = Answers(max_bytes=settings.cache_bytes)
        app.add_middleware(AnswerCache, answers=app.state.answers, feed=feed, authenticator=authenticator)
    app.add_middleware(errors.Guard, limit=settings.max_body_bytes)
    app.add_middleware(errors.Head, methods=app.state.methods)  # outermost: no answer to HEAD has a body

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


async def _warm_up(app: FastAPI) -> None:
    """Route one request that matches nothing before serving.

    FastAPI builds each route's validation models on the first request that reaches it, inside
    ``warnings.catch_warnings()``, which is not thread-safe; concurrent first requests could then leak
    pydantic warnings.  A request that matches no route builds them all, once, before the first client.
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
    }

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(_message: Any) -> None:
        return None

    await app(scope, receive, send)


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
    return schema


def _add_body_models(components: dict[str, Any]) -> None:
    """The models of the bodies that routes check themselves (:mod:`.bodies`), which FastAPI does not see."""
    _, top = models_json_schema(
        [(model, "validation") for model in BODY_MODELS], ref_template="#/components/schemas/{model}"
    )
    for name, definition in top.get("$defs", {}).items():
        components.setdefault(name, definition)
