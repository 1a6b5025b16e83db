"""The application factory: :func:`create_app` wires settings, storage, auth, routes and error handling."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from template_engine.service import errors
from template_engine.service.auth import Authenticator
from template_engine.service.context import Store
from template_engine.service.routes import ROUTERS
from template_engine.service.settings import Settings
from template_engine.service.storage.database import create_db_engine, migrate

_log = logging.getLogger("template_engine.service")


class ConfigError(Exception):
    """The service cannot start with these settings (the message says why)."""


DESCRIPTION = """\
Distributed training templates, org defaults per scope, assets, departments, projects and workloads, shaped
like the NVIDIA Run:ai control-plane API, composed by `template_engine`.

Every endpoint but `/health` and this document needs `Authorization: Bearer <token>` (exactly one).  Errors
are `{code, message, details?}`; validation problems are 400 with `details` naming each field.  Bodies are
strict JSON objects: a key given twice, `NaN`, `Infinity`, numbers out of range, NUL characters and lone
surrogates are refused with 400 before anything is stored.  `OPTIONS` answers with `Allow`.
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
        return Authenticator.development()
    raise ConfigError(
        "no auth file: give --auth-file (or TEMPLATE_ENGINE_AUTH_FILE), or --dev for the development tokens"
    )


def create_app(settings: Settings) -> FastAPI:
    """A ready application: the schema is created or migrated, and ``settings.seed`` imported into an empty
    database, before this returns."""
    from template_engine.service.auth import AuthFileError

    try:
        authenticator = authenticator_for(settings)
    except AuthFileError as exc:
        raise ConfigError(str(exc)) from None
    engine = create_db_engine(settings.database_url)
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

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await _warm_up(app)
        yield
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
    app.add_middleware(errors.Guard, limit=settings.max_body_bytes)

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
    components = schema.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        components.pop(name, None)
    return schema
