"""Org defaults per scope: ``/api/v1/defaults/{system | departments/ID | projects/ID}``.

Each holds the layer document a ``defaults.yaml`` holds (``spec``, ``masterSpecSameAsWorker``,
``master: {spec}``).  A scope that never had defaults reads as ``{}`` with ETag ``"0"``; PUT replaces, PATCH
clears ``fieldsToClear`` then merges, DELETE removes the layer (the scope then reads ``{}`` with the ETag of
the delete: versions never go back, so an ETag read before a delete never matches the next document).
Compositions read the defaults on every request, so a change shows in the next response of every template it
affects.

PUT and PATCH take ``validateOnly=true``: the write is checked and made in its transaction, which is then
rolled back; the answer is the document it would store and ``affectedTemplates``, every template whose
effective spec or compliance it would change, field by field (:mod:`..impact`).  The UI's preview is the
same call (:func:`write_defaults`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response

from template_engine.service.auth import Principal
from template_engine.service.cache import uncommitted
from template_engine.service.context import Ctx, Placement, Store, parse_id
from template_engine.service.documents import check_defaults, clear_fields, merge_patch, strip_nulls
from template_engine.service.impact import (
    Affected,
    DefaultsWriteOut,
    DryRun,
    StoredOrg,
    affected,
    affected_body,
    stored_org,
)
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    Raw,
    StoreDep,
    check_if_match,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import ID_PATTERN, DefaultsDocument, DefaultsPatch

router = APIRouter(prefix="/api/v1/defaults", tags=["Org defaults"], route_class=JsonRoute)

DepartmentId = Annotated[str, PathParam(pattern=ID_PATTERN)]
ProjectId = Annotated[str, PathParam(pattern=ID_PATTERN)]
_ROOTS = ("spec", "masterSpecSameAsWorker", "master")
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


def _scope(ctx: Ctx, kind: str, scope_id: str | None, lock: bool = False) -> Placement:
    if kind == "system":
        return Placement("system")
    return ctx.placement(kind, parse_id(scope_id or "", f"{kind}Id"), lock=lock)


def _read(store: Store, principal: Principal, kind: str, scope_id: str | None) -> JSONResponse:
    with store.read(principal) as ctx:
        place = _scope(ctx, kind, scope_id)
        ctx.access.require_read(place.ref)
        row, version = ctx.repo.defaults_at(place.key)
    return json_response(row.document if row else {}, version=version)


#: A write's change: the stored document (``{}`` when there is none) to the new one.
Change = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, slots=True)
class DefaultsWrite:
    """What a write stored (or, validating only, would store), its version, and with ``validate_only`` the
    templates it would change and the stored org before it (for their ids and provenance)."""

    document: dict[str, Any]
    version: int
    affected: list[Affected] | None = None
    body: list[dict[str, Any]] | None = None
    labels: dict[str, str] | None = None


def _would_change(
    document: dict[str, Any], current: int, before: StoredOrg, after: StoredOrg
) -> DefaultsWrite:
    found = affected(before, after)
    labels = {**before.labels, **after.labels}
    return DefaultsWrite(document, current, found, affected_body(found, after), labels)


def write_defaults(
    store: Store,
    principal: Principal,
    kind: str,
    scope_id: str | None,
    if_match: str | None,
    change: Change,
    validate_only: bool = False,
) -> DefaultsWrite:
    """Check and store a scope's new defaults; with ``validate_only``, roll back and answer what the write
    would change instead (the same checks, the same 403, 404, 412 and 400)."""
    try:
        with uncommitted(validate_only), store.write(principal) as ctx:
            place = _scope(ctx, kind, scope_id)
            ctx.access.require_write(place.ref)
            row, current = ctx.repo.defaults_at(place.key, lock=True)
            check_if_match(if_match, current)
            document = change(row.document if row else {})
            check_defaults(document)
            before = stored_org(ctx) if validate_only else None
            version = ctx.repo.put_defaults(
                place.key,
                document,
                current,
                ctx.subject,
                department_id=place.department.id
                if place.type == "department" and place.department
                else None,
                project_id=place.project.id if place.project else None,
            )
            if before is not None:
                after = stored_org(ctx)
                raise DryRun(partial(_would_change, document, current, before, after))
    except DryRun as done:
        answer: DefaultsWrite = done.answer()  # after the rollback: composing holds no lock
        return answer
    return DefaultsWrite(document, version)


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
    body: dict[str, Any] = dict(result.document)
    if result.body is not None:
        body["affectedTemplates"] = result.body
    return json_response(body, version=result.version)


def _put(raw: Any) -> Change:
    document = strip_nulls(raw if isinstance(raw, dict) else {})
    return lambda _current: document


def _patch(raw: Any) -> Change:
    patch = strip_nulls(raw if isinstance(raw, dict) else {})
    paths = patch.pop("fieldsToClear", None) or []
    return lambda current: merge_patch(clear_fields(current, paths, _ROOTS), patch)


def _delete(
    store: Store, principal: Principal, kind: str, scope_id: str | None, if_match: str | None
) -> Response:
    with store.write(principal) as ctx:
        place = _scope(ctx, kind, scope_id)
        ctx.access.require_write(place.ref)
        row, current = ctx.repo.defaults_at(place.key, lock=True)
        check_if_match(if_match, current)
        if row is not None:
            ctx.repo.delete_defaults(place.key, current, ctx.subject)
    return no_content()


# -- system -------------------------------------------------------------------------------------------------


@router.get("/system", response_model=None, responses={**_DOC, **errors()})
def get_system_defaults(principal: Auth, store: StoreDep) -> JSONResponse:
    """The system defaults (``{}`` when there are none)."""
    return _read(store, principal, "system", None)


@router.put("/system", response_model=None, responses={**_WRITTEN, **errors(412)})
def put_system_defaults(
    body: DefaultsDocument,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
    validateOnly: ValidateOnly = None,
) -> JSONResponse:
    """Replace the system defaults."""
    return _write(store, principal, "system", None, if_match, _put(raw), validateOnly)


@router.patch("/system", response_model=None, responses={**_WRITTEN, **errors(412)})
def patch_system_defaults(
    body: DefaultsPatch,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
    validateOnly: ValidateOnly = None,
) -> JSONResponse:
    """Clear ``fieldsToClear``, then merge the given fields into the system defaults."""
    return _write(store, principal, "system", None, if_match, _patch(raw), validateOnly)


@router.delete("/system", status_code=204, response_class=Response, responses=errors(412))
def delete_system_defaults(principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
    """Remove the system defaults layer."""
    return _delete(store, principal, "system", None, if_match)


# -- departments --------------------------------------------------------------------------------------------


@router.get("/departments/{departmentId}", response_model=None, responses={**_DOC, **errors(404)})
def get_department_defaults(departmentId: DepartmentId, principal: Auth, store: StoreDep) -> JSONResponse:
    """A department's defaults."""
    return _read(store, principal, "department", departmentId)


@router.put("/departments/{departmentId}", response_model=None, responses={**_WRITTEN, **errors(404, 412)})
def put_department_defaults(
    departmentId: DepartmentId,
    body: DefaultsDocument,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
    validateOnly: ValidateOnly = None,
) -> JSONResponse:
    """Replace a department's defaults."""
    return _write(store, principal, "department", departmentId, if_match, _put(raw), validateOnly)


@router.patch("/departments/{departmentId}", response_model=None, responses={**_WRITTEN, **errors(404, 412)})
def patch_department_defaults(
    departmentId: DepartmentId,
    body: DefaultsPatch,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
    validateOnly: ValidateOnly = None,
) -> JSONResponse:
    """Clear ``fieldsToClear``, then merge the given fields into a department's defaults."""
    return _write(store, principal, "department", departmentId, if_match, _patch(raw), validateOnly)


@router.delete(
    "/departments/{departmentId}", status_code=204, response_class=Response, responses=errors(404, 412)
)
def delete_department_defaults(
    departmentId: DepartmentId, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> Response:
    """Remove a department's defaults layer."""
    return _delete(store, principal, "department", departmentId, if_match)


# -- projects -----------------------------------------------------------------------------------------------


@router.get("/projects/{projectId}", response_model=None, responses={**_DOC, **errors(404)})
def get_project_defaults(projectId: ProjectId, principal: Auth, store: StoreDep) -> JSONResponse:
    """A project's defaults."""
    return _read(store, principal, "project", projectId)


@router.put("/projects/{projectId}", response_model=None, responses={**_WRITTEN, **errors(404, 412)})
def put_project_defaults(
    projectId: ProjectId,
    body: DefaultsDocument,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
    validateOnly: ValidateOnly = None,
) -> JSONResponse:
    """Replace a project's defaults."""
    return _write(store, principal, "project", projectId, if_match, _put(raw), validateOnly)


@router.patch("/projects/{projectId}", response_model=None, responses={**_WRITTEN, **errors(404, 412)})
def patch_project_defaults(
    projectId: ProjectId,
    body: DefaultsPatch,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
    validateOnly: ValidateOnly = None,
) -> JSONResponse:
    """Clear ``fieldsToClear``, then merge the given fields into a project's defaults."""
    return _write(store, principal, "project", projectId, if_match, _patch(raw), validateOnly)


@router.delete("/projects/{projectId}", status_code=204, response_class=Response, responses=errors(404, 412))
def delete_project_defaults(
    projectId: ProjectId, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> Response:
    """Remove a project's defaults layer."""
    return _delete(store, principal, "project", projectId, if_match)
