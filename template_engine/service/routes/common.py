"""What every resource module shares: the store, the raw body, ETags and the documented error answers.

Every router is made with :class:`JsonRoute`: a route that takes a body decodes it once, strictly, with
:func:`~template_engine.service.documents.read_json`, before FastAPI validates it against the route's model,
and the handler's ``raw`` is that same decoded object.
"""

from __future__ import annotations

import email.message
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, Header, Request
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute

from template_engine.errors import Problem
from template_engine.loader.rules import asset_refs
from template_engine.models.documents import TemplateDocument
from template_engine.service.auth import Principal, authenticate
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import read_json
from template_engine.service.errors import ApiError, bad_request
from template_engine.service.schemas import ErrorOut

_DESCRIPTIONS = {
    400: "Bad request: the body, a parameter or a reference is not valid (details name the field).",
    401: "Unauthorized: no bearer token, or one the service does not know.",
    403: "Forbidden: the token's role does not reach this scope.",
    404: "Not found.",
    409: "Conflict: a name already taken, a resource in use, or a concurrent change.",
    412: "Precondition failed: If-Match does not name the current version.",
    413: "The request body is too large.",
    503: "The database is unavailable; try again.",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: 400, 401, 403, 413 and 503 always, plus ``codes``."""
    wanted = sorted({400, 401, 403, 413, 503, *codes})
    return {code: {"model": ErrorOut, "description": _DESCRIPTIONS[code]} for code in wanted}


def store_of(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


# -- the one JSON decoding step -----------------------------------------------------------------------------

_UNREAD = object()


class JsonRequest(Request):
    """A request whose JSON body is decoded by :func:`read_json` (strict, bounded), once."""

    _decoded: Any = _UNREAD

    async def json(self) -> Any:
        if self._decoded is _UNREAD:
            self._decoded = read_json(await self.body())
        return self._decoded


def is_json(content_type: str | None) -> bool:
    """Whether FastAPI reads a body of this Content-Type as JSON (``application/json``, ``...+json``)."""
    if not content_type:
        return False
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


class JsonRoute(APIRoute):
    """A route whose JSON body is decoded before FastAPI reads it: what :func:`read_json` refuses is a 400
    naming each field, whatever the route."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if self.body_field is None:
            return handler

        async def strict(request: Request) -> Response:
            decoding = JsonRequest(request.scope, request.receive)
            if is_json(decoding.headers.get("content-type")) and await decoding.body():
                await decoding.json()  # raises the 400 here, where the exception handlers answer it
            return await handler(decoding)

        return strict


async def raw_body(request: Request) -> Any:
    """The request body as sent (numbers as written, no defaults filled in), as :class:`JsonRoute` decoded it;
    ``None`` when it is not JSON (FastAPI's validation has answered that already)."""
    if not is_json(request.headers.get("content-type")) or not await request.body():
        return None
    return await request.json()


def json_response(body: Any, status: int = 200, version: int | None = None) -> JSONResponse:
    headers = {"ETag": etag(version)} if version is not None else None
    return JSONResponse(body, status_code=status, headers=headers)


def no_content() -> Response:
    return Response(status_code=204)


def etag(version: int) -> str:
    return f'"{version}"'


def check_if_match(header: str | None, version: int) -> None:
    """``If-Match`` must name the current version (``"3"``, ``W/"3"`` and ``*`` are understood)."""
    if header is None:
        return
    for tag in header.split(","):
        tag = tag.strip()
        if tag == "*":
            return
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag.strip('"') == str(version):
            return
    raise ApiError(
        412,
        f"If-Match does not match the current version {etag(version)}; read the resource again.",
        headers={"ETag": etag(version)},
    )


def template_scope(ctx: Ctx, scope_type: str, department_id: int | None, project_id: int | None) -> Placement:
    return ctx.placement(scope_type, project_id if scope_type == "project" else department_id)


def scope_from_body(ctx: Ctx, scope_type: str, scope_id: str | None, path: tuple[str, ...]) -> Placement:
    """The scope a body names: ``system`` (no id), or a department or project by id (400 if unknown)."""
    if scope_type == "system":
        if scope_id is not None:
            raise bad_request([Problem("the system scope has no id", path, None, "no scopeId")])
        return Placement("system")
    if scope_id is None:
        raise bad_request([Problem(f"a {scope_type} scope needs its id", path, None, f"the {scope_type} id")])
    if not scope_id.isdigit() or len(scope_id) > 18:
        raise bad_request([Problem(f"invalid {scope_type} id {scope_id!r}", path, None, "an id such as '1'")])
    try:
        return ctx.placement(scope_type, int(scope_id))
    except ApiError as exc:
        if exc.status == 404:
            raise bad_request([Problem(f"unknown {scope_type} {scope_id!r}", path)]) from None
        raise


def view_from_query(ctx: Ctx, own: Placement, project_id: str | None) -> Placement:
    """``?projectId=``: a project at or below ``own``; otherwise the template's own scope."""
    if project_id is None:
        return own
    view = ctx.project_placement(project_id, "projectId")
    if not own.contains(view):
        raise bad_request(
            [Problem(f"project {project_id} is not at or below the template's scope", ("projectId",))]
        )
    ctx.access.require_read(view.ref)
    return view


def resolve_assets(ctx: Ctx, doc: TemplateDocument) -> list[str]:
    """The ids of the assets a template document names; an unknown one is a 400 on its field."""
    refs = asset_refs(doc)
    found = ctx.repo.assets_named((kind, name) for kind, name, _ in refs)
    problems = [
        Problem(f"unknown {kind} asset {name!r}", path, None, f"the name of a {kind} asset")
        for kind, name, path in refs
        if (kind, name) not in found
    ]
    if problems:
        raise bad_request(problems)
    return [found[(kind, name)].id for kind, name, _ in refs]


# -- the dependencies every route module declares its handlers with -----------------------------------------

Auth = Annotated[Principal, Depends(authenticate)]
StoreDep = Annotated[Store, Depends(store_of)]
Raw = Annotated[Any, Depends(raw_body)]
IfMatch = Annotated[str | None, Header(alias="If-Match", description='The ETag read, such as "3".')]
