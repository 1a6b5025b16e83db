"""Org defaults per scope: ``/api/v1/defaults/{system | departments/ID | projects/ID}``, the four routes of
each written once (:func:`_routes`, over the scope families of :data:`FAMILIES`).

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

# No ``from __future__ import annotations``: the routes are made by a factory (:func:`_routes`) and FastAPI
# must see the annotations themselves, not their names.

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response

from template_engine.service.auth import Principal
from template_engine.service.cache import uncommitted
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import check_defaults, clear_fields, merge_patch, strip_nulls
from template_engine.service.ids import parse_id
from template_engine.service.impact import (
    Affected,
    DefaultsWriteOut,
    DryRun,
    StoredOrg,
    admit_reading,
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
            if validate_only:
                admit_reading(ctx)  # priced from the stored sizes, before anything is read
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


# -- the routes, one family per scope kind ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScopeFamily:
    """One kind of scope with defaults: its path under ``/api/v1/defaults``, the path parameter naming it
    (``None``: the one system scope), how the docs name its defaults, and what reading them says.  Adding a
    kind of scope is a row of :data:`FAMILIES`."""

    kind: str
    path: str
    param: str | None
    defaults: str
    reads: str

    @property
    def missing(self) -> tuple[int, ...]:
        """404 for an unknown id in the path; the system scope always exists."""
        return (404,) if self.param else ()


FAMILIES = (
    ScopeFamily(
        "system", "/system", None, "the system defaults", "The system defaults (``{}`` when there are none)."
    ),
    ScopeFamily(
        "department",
        "/departments/{departmentId}",
        "departmentId",
        "a department's defaults",
        "A department's defaults.",
    ),
    ScopeFamily(
        "project", "/projects/{projectId}", "projectId", "a project's defaults", "A project's defaults."
    ),
)


def _no_id() -> None:
    return None


def _scope_id(family: ScopeFamily) -> Any:
    """The handlers' annotation of the scope's id: the path parameter ``family.param`` (an id), or nothing."""
    if family.param is None:
        return Annotated[None, Depends(_no_id)]
    return Annotated[str, PathParam(pattern=ID_PATTERN, alias=family.param)]


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
        return _read(store, principal, kind, scope_id)

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
        return _write(store, principal, kind, scope_id, if_match, _put(raw), validateOnly)

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
        return _write(store, principal, kind, scope_id, if_match, _patch(raw), validateOnly)

    @router.delete(
        path,
        status_code=204,
        response_class=Response,
        responses=errors(*family.missing, 412),
        name=f"delete_{kind}_defaults",
        description=f"Remove {family.defaults} layer.",
    )
    def delete(scope_id: ScopeId, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:  # type: ignore[valid-type]
        return _delete(store, principal, kind, scope_id, if_match)


for _family in FAMILIES:
    _routes(_family)
