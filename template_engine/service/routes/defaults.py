"""Org defaults per scope: ``/api/v1/defaults/{system | clusters/UUID | departments/ID | projects/ID}``, the
four routes of each written once (:func:`_routes`, over the scope families of
:data:`~..defaults_store.FAMILIES`).

Each holds the layer document a ``defaults.yaml`` holds (``spec``, ``masterSpecSameAsWorker``,
``master: {spec}``).  A scope that never had defaults reads as ``{}`` with ETag ``"0"``; PUT replaces, PATCH
clears ``fieldsToClear`` then merges, DELETE removes the layer (the scope then reads ``{}`` with the ETag of
the delete: versions never go back, so an ETag read before a delete never matches the next document).
Compositions read the defaults on every request, so a change shows in the next response of every template it
affects.

PUT and PATCH take ``validateOnly=true``: the write is checked and made in its transaction, which is then
rolled back; the answer is the document it would store and ``affectedTemplates``, every template whose
effective spec or compliance it would change, field by field (:mod:`..impact`).  The UI's preview is the
same call (:func:`~..defaults_store.write_defaults`).
"""

# No ``from __future__ import annotations``: the routes are made by a factory (:func:`_routes`) and FastAPI
# must see the annotations themselves, not their names.

import uuid
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response

from template_engine.service.auth import Principal
from template_engine.service.context import Store
from template_engine.service.defaults_store import (
    FAMILIES,
    Change,
    ScopeFamily,
    delete_defaults,
    patching,
    read_defaults,
    replacing,
    written_body,
)
from template_engine.service.defaults_store import (
    write_defaults as write_defaults,  # ui/routes.py imports it from here
)
from template_engine.service.impact import DefaultsWriteOut
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    Raw,
    StoreDep,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import UUID_PATTERN, DefaultsDocument, DefaultsPatch

router = APIRouter(prefix="/api/v1/defaults", tags=["Org defaults"], route_class=JsonRoute)

_DOC: dict[int | str, dict[str, Any]] = {
    200: {"model": DefaultsDocument, "headers": {"ETag": {"schema": {"type": "string"}}}}
}
_WRITTEN: dict[int | str, dict[str, Any]] = {
    200: {"model": DefaultsWriteOut, "headers": {"ETag": {"schema": {"type": "string"}}}}
}
ValidateOnly = Annotated[
    bool | None,
    Query(
        description="Check the write and answer the document it would store, with affectedTemplates: every "
        "template whose effective spec or compliance it would change. Nothing is stored."
    ),
]


def _write(
    store: Store,
    principal: Principal,
    kind: str,
    scope_id: str | None,
    if_match: str | None,
    change: Change,
    validate_only: bool | None = None,
) -> JSONResponse:
    result = write_defaults(store, principal, kind, scope_id, if_match, change, bool(validate_only))
    return json_response(written_body(result), version=result.version)


# -- the routes, one family per scope kind ------------------------------------------------------------------


def _no_id() -> None:
    return None


def _scope_id(family: ScopeFamily) -> Any:
    """The handlers' annotation of the scope's id: the path parameter ``family.param`` (an id), or nothing."""
    if family.param is None:
        return Annotated[None, Depends(_no_id)]
    if family.pattern == UUID_PATTERN:  # a cluster's UUID, routed as one (:func:`.common.typed_path`)
        return Annotated[uuid.UUID, PathParam(alias=family.param)]
    return Annotated[str, PathParam(pattern=family.pattern, alias=family.param)]


def _routes(family: ScopeFamily) -> None:
    """The four routes of a scope family's defaults (read, replace, change, remove)."""
    kind, path = family.kind, family.path
    ScopeId = _scope_id(family)

    @router.get(
        path,
        response_model=None,
        responses={**_DOC, **errors(*family.missing)},
        name=f"get_{kind}_defaults",
        description=family.reads,
    )
    def get(scope_id: ScopeId, principal: Auth, store: StoreDep) -> JSONResponse:  # type: ignore[valid-type]
        document, version = read_defaults(store, principal, kind, scope_id)
        return json_response(document, version=version)

    @router.put(
        path,
        response_model=None,
        responses={**_WRITTEN, **errors(*family.missing, 412)},
        name=f"put_{kind}_defaults",
        description=f"Replace {family.defaults}.",
    )
    def put(
        scope_id: ScopeId,  # type: ignore[valid-type]
        body: DefaultsDocument,
        raw: Raw,
        principal: Auth,
        store: StoreDep,
        if_match: IfMatch = None,
        validateOnly: ValidateOnly = None,
    ) -> JSONResponse:
        return _write(store, principal, kind, scope_id, if_match, replacing(raw), validateOnly)

    @router.patch(
        path,
        response_model=None,
        responses={**_WRITTEN, **errors(*family.missing, 412)},
        name=f"patch_{kind}_defaults",
        description=f"Clear ``fieldsToClear``, then merge the given fields into {family.defaults}.",
    )
    def patch(
        scope_id: ScopeId,  # type: ignore[valid-type]
        body: DefaultsPatch,
        raw: Raw,
        principal: Auth,
        store: StoreDep,
        if_match: IfMatch = None,
        validateOnly: ValidateOnly = None,
    ) -> JSONResponse:
        return _write(store, principal, kind, scope_id, if_match, patching(raw), validateOnly)

    @router.delete(
        path,
        status_code=204,
        response_class=Response,
        responses=errors(*family.missing, 412),
        name=f"delete_{kind}_defaults",
        description=f"Remove {family.defaults} layer.",
    )
    def delete(scope_id: ScopeId, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:  # type: ignore[valid-type]
        delete_defaults(store, principal, kind, scope_id, if_match)
        return no_content()


for _family in FAMILIES:
    _routes(_family)
