"""What every resource module shares: the store, the raw body, ETags and the documented error answers.

Every router is made with :class:`JsonRoute`: a route that asks who calls authenticates the caller first,
before its body is read (401, then a viewer's 403, then any 400 of the body); a route that takes a body
decodes it once, strictly, with
:func:`~template_engine.service.documents.read_json`, before FastAPI validates it against the route's model,
and the handler's ``raw`` is that same decoded object.  A :class:`JsonRoute`'s path parameters are matched
by routing itself, from their declared types (:func:`typed_path`): a segment that is not an id or a UUID is
no path of the service (404), never a 400 about the parameter.
"""

from __future__ import annotations

import email.message
import re
import uuid
from collections.abc import Callable, Coroutine, Iterator
from typing import Annotated, Any

from fastapi import Depends, Header, Query, Request
from fastapi._compat import ModelField
from fastapi.dependencies.models import Dependant
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.convertors import Convertor, register_url_convertor

from template_engine.errors import Problem
from template_engine.service.auth import Principal, authenticate, authenticate_first
from template_engine.service.context import Store
from template_engine.service.documents import read_json, read_json_value
from template_engine.service.errors import bad_request
from template_engine.service.etags import check_if_match as check_if_match  # the routes' import
from template_engine.service.etags import etag
from template_engine.service.placements import template_scope as template_scope  # ui/routes.py's import
from template_engine.service.schemas import ID_PATTERN, IF_MATCH_PATTERN, ErrorOut

_DESCRIPTIONS = {
    400: "Bad request: the body, a parameter or a reference is not valid (details name the field).",
    401: "Unauthorized: no bearer token, or one the service does not know.",
    403: "Forbidden: the token's role does not reach this scope.",
    404: "Not found.",
    409: "Conflict: a name already taken, a resource in use, or a concurrent change.",
    412: "Precondition failed: If-Match does not name the current version.",
    413: "The request body is too large, or the work it asks for is over a request's budget.",
    500: "Something went wrong: a bug (the traceback goes to the server log only).",
    503: "The database is unavailable; try again.",
}


def errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: 400, 401, 403, 413, 500 and 503 always, plus ``codes``."""
    wanted = sorted({400, 401, 403, 413, 500, 503, *codes})
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


class JsonValueRequest(JsonRequest):
    """A :class:`JsonRequest` whose body may be any JSON value, an array too (:func:`read_json_value`)."""

    async def json(self) -> Any:
        if self._decoded is _UNREAD:
            self._decoded = read_json_value(await self.body())
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


class _IdConvertor(Convertor[str]):
    """A department or project id in a path (:data:`~.schemas.ID_PATTERN`), kept as the text it is."""

    regex = ID_PATTERN.removeprefix("^").removesuffix("$")

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("orgid", _IdConvertor())

_PARAMETER = re.compile(r"{([a-zA-Z_][a-zA-Z0-9_]*)}")


def _path_params(dependant: Dependant) -> Iterator[ModelField]:
    """The path parameters of a handler and of its dependencies."""
    yield from dependant.path_params
    for dependency in dependant.dependencies:
        yield from _path_params(dependency)


def _convertor(route: APIRoute, name: str) -> str:
    """The convertor of path parameter ``name`` from its declared type: ``uuid`` for a ``uuid.UUID``
    (Starlette's: hex digits, hyphens optional), ``orgid`` for a text of :data:`ID_PATTERN`.  A parameter
    is found by its name or its alias (a route factory's handler names it once for every family), on the
    handler or on one of its dependencies."""
    for param in _path_params(route.dependant):
        if name not in (param.name, param.alias):
            continue
        if param.field_info.annotation is uuid.UUID:
            return "uuid"
        patterns = {getattr(m, "pattern", None) for m in param.field_info.metadata}
        if param.field_info.annotation is str and ID_PATTERN in patterns:
            return "orgid"
    raise TypeError(
        f"{route.path}: path parameter {name!r} must be a uuid.UUID or an id of ID_PATTERN, "
        "so that routing refuses any other segment"
    )


def typed_path(route: APIRoute) -> str:
    """``route.path`` with a convertor on each parameter (``/distributed/{templateId:uuid}``), so a route
    matches only the segments its parameters accept."""
    return _PARAMETER.sub(lambda m: "{" + m[1] + ":" + _convertor(route, m[1]) + "}", route.path)


class JsonRoute(APIRoute):
    """A route whose JSON body is decoded before FastAPI reads it: what :func:`read_json` refuses is a 400
    naming each field, whatever the route; and whose path parameters match only what their types accept
    (:func:`typed_path`), so that ``/distributed/count`` or ``PUT /distributed/preview`` never reaches
    ``/distributed/{templateId}``: a 404, or a 405 naming the methods the path has."""

    #: How the body is decoded (:class:`JsonValueRequest` for a route whose body is an array).
    json_request: type[JsonRequest] = JsonRequest

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        typed = typed_path(self)
        if typed != path:  # FastAPI builds the route from the path: again, with the convertors in it
            super().__init__(typed, endpoint, **kwargs)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        authenticated = authenticates(self.dependant)
        if self.body_field is None and not authenticated:
            return handler

        async def strict(request: Request) -> Response:
            decoding = self.json_request(request.scope, request.receive)
            if authenticated:  # 401 and a viewer's 403 before a byte of the body is read
                await authenticate_first(decoding)
            json_body = self.body_field is not None and is_json(decoding.headers.get("content-type"))
            if json_body and await decoding.body():
                await decoding.json()  # raises the 400 here, where the exception handlers answer it
            return await handler(decoding)

        return strict


def authenticates(dependant: Dependant) -> bool:
    """Whether a route (its ``dependant``) asks for the caller (:func:`~..auth.authenticate`), directly or
    through another dependency."""
    return dependant.call is authenticate or any(authenticates(d) for d in dependant.dependencies)


class JsonValueRoute(JsonRoute):
    """A :class:`JsonRoute` whose body may be a JSON array (Run:ai's ``ResourcesUpdateRequest``)."""

    json_request = JsonValueRequest


async def raw_body(request: Request) -> Any:
    """The request body as sent (numbers as written, no defaults filled in), as :class:`JsonRoute` decoded it;
    ``None`` when it is not JSON (FastAPI's validation has answered that already)."""
    if not is_json(request.headers.get("content-type")) or not await request.body():
        return None
    return await request.json()


async def json_object(request: Request) -> dict[str, Any]:
    """The body of a route that checks it itself (:mod:`..bodies`): a JSON object decoded strictly by
    :func:`read_json`, not validated; a 400 when there is none or it is not JSON."""
    data = await request.body()
    if not data:
        raise bad_request([Problem("a JSON body is required", (), None, "Content-Type: application/json")])
    if not is_json(request.headers.get("content-type")):
        raise bad_request([Problem("the body is not JSON", (), None, "Content-Type: application/json")])
    return read_json(data)


def json_response(body: Any, status: int = 200, version: int | None = None) -> JSONResponse:
    headers = {"ETag": etag(version)} if version is not None else None
    return JSONResponse(body, status_code=status, headers=headers)


def no_content(version: int | None = None) -> Response:
    """A 204; with ``version``, its ETag (the version a write made, so that the next write can name it)."""
    return Response(status_code=204, headers={"ETag": etag(version)} if version is not None else None)


# -- the dependencies every route module declares its handlers with -----------------------------------------

Auth = Annotated[Principal, Depends(authenticate)]
StoreDep = Annotated[Store, Depends(store_of)]
Raw = Annotated[Any, Depends(raw_body)]
JsonObject = Annotated[dict[str, Any], Depends(json_object)]
IfMatch = Annotated[
    str | None,
    Header(
        alias="If-Match",
        pattern=IF_MATCH_PATTERN,
        description='The ETag read, such as "3" (or several separated by commas, or *): the write is refused '
        "with 412 when the resource has changed since (RFC 9110's strong comparison: a weak W/ tag never "
        "matches). A header that is not entity tags is a 400.",
    ),
]


#: ``?annotate=true`` of the manifests routes: add the source of every value.
AnnotateQuery = Annotated[bool | None, Query(description="Add the source of every value (sources).")]
