"""Distributed templates: ``/api/v1/workload-templates/distributed`` (runai-facts 7.1, 7.2)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from template_engine.errors import Problem
from template_engine.explain import explain
from template_engine.paths import parse_path
from template_engine.service.auth import Principal
from template_engine.service.composer import (
    compose_row,
    template_body,
    template_meta,
)
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import check_template, clear_fields, merge_patch, strip_nulls
from template_engine.service.errors import ApiError, bad_request, not_found
from template_engine.service.listing import FilterBy, needs_composition, parse_filters, sort_key
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
    resolve_assets,
    scope_from_body,
    template_scope,
    view_from_query,
)
from template_engine.service.schemas import (
    NAME_PATTERN,
    NAME_RULE,
    CountOut,
    ExplainOut,
    ScopeType,
    SortBy,
    TemplateCreate,
    TemplateListOut,
    TemplateOut,
    TemplatePatch,
    TemplatePreview,
    TemplateReplace,
)
from template_engine.service.storage.repository import Audit, TemplateRow
from template_engine.service.storage.tables import now

router = APIRouter(prefix="/api/v1/workload-templates", tags=["Distributed templates"], route_class=JsonRoute)

_ETAG = {"ETag": {"description": 'The version, such as "3" (for If-Match).', "schema": {"type": "string"}}}
ProjectQuery = Annotated[
    str | None, Query(description="Compose as seen from this project (at or below the template's scope).")
]
_PATCH_ROOTS = ("meta", "spec", "assets", "masterSpecSameAsWorker", "master")


def _document(raw: Any) -> dict[str, Any]:
    """The stored template document: the body without nulls, its meta without the scope."""
    doc: dict[str, Any] = strip_nulls(raw if isinstance(raw, dict) else {})
    meta = doc.get("meta") or {}
    doc["meta"] = {k: meta[k] for k in ("name", "description") if k in meta}
    return doc


def _load(ctx: Ctx, template_id: uuid.UUID, lock: bool = False) -> tuple[TemplateRow, Placement]:
    row = ctx.repo.template(str(template_id), lock=lock)
    if row is None:
        raise not_found(f"template {template_id}")
    return row, template_scope(ctx, row.scope_type, row.department_id, row.project_id)


def _taken(ctx: Ctx, own: Placement, name: str, template_id: str | None = None) -> None:
    other = ctx.repo.template_named(own.key, name)
    if other is not None and other.id != template_id:
        raise ApiError(
            409,
            problems=[Problem(f"a template named {name!r} already exists in this scope", ("meta", "name"))],
        )


def _respond(ctx: Ctx, template_id: str, own: Placement, status: int = 200) -> JSONResponse:
    row = ctx.repo.template(template_id)
    assert row is not None
    body = template_body(row, own, own, compose_row(ctx, row, own, own))
    return json_response(body, status, row.audit.version)


@router.post(
    "/distributed",
    status_code=202,
    response_model=None,
    responses={202: {"model": TemplateOut, "headers": _ETAG}, **errors(409)},
)
def create_template(body: TemplateCreate, raw: Raw, principal: Auth, store: StoreDep) -> JSONResponse:
    """Create a distributed training template in a scope (202, as Run:ai)."""
    document = _document(raw)
    doc = check_template(document)
    with store.write(principal) as ctx:
        own = scope_from_body(ctx, body.meta.scopeType, body.meta.scopeId, ("meta", "scopeId"))
        ctx.access.require_write(own.ref)
        asset_ids = resolve_assets(ctx, doc)
        _taken(ctx, own, doc.meta.name)
        template_id = str(uuid.uuid4())
        ctx.repo.add_template(template_id, own.type, own.id, document, ctx.subject)
        ctx.repo.set_template_assets(template_id, asset_ids)
        return _respond(ctx, template_id, own, 202)


def _visible(ctx: Ctx) -> list[tuple[TemplateRow, Placement]]:
    out = []
    for row in ctx.repo.templates():
        own = template_scope(ctx, row.scope_type, row.department_id, row.project_id)
        if ctx.access.can_read(own.ref):
            out.append((row, own))
    return out


def _entries(
    ctx: Ctx, filter_by: list[str] | None, search: str | None, compose_all: bool
) -> list[dict[str, Any]]:
    filters = parse_filters(filter_by)
    entries: list[dict[str, Any]] = []
    for row, own in _visible(ctx):
        if search and search.lower() not in row.name.lower():
            continue
        entry: dict[str, Any] = {"meta": template_meta(row, own, own), "_row": (row, own)}
        if compose_all or needs_composition(filters, None):
            entry = template_body(row, own, own, compose_row(ctx, row, own, own)) | {"_row": (row, own)}
        if all(f(entry) for f in filters):
            entries.append(entry)
    return entries


@router.get("/distributed", response_model=TemplateListOut, responses=errors())
def list_templates(
    principal: Auth,
    store: StoreDep,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    sortBy: SortBy = "name",
    sortOrder: Literal["asc", "desc"] = "asc",
    filterBy: FilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """The templates the caller may read, composed as seen from their own scopes."""
    with store.read(principal) as ctx:
        entries = _entries(ctx, filterBy, search, sortBy == "runnable")
        entries.sort(key=sort_key(sortBy), reverse=sortOrder == "desc")
        page = entries[offset : offset + limit]
        out = []
        for entry in page:
            row, own = entry.pop("_row")
            if "runnable" not in entry:
                entry = template_body(row, own, own, compose_row(ctx, row, own, own))
            out.append(entry)
    more = offset + limit < len(entries)
    pagination = {"limit": limit, "offset": offset, "nextOffset": offset + limit if more else None}
    return json_response({"entries": out, "pagination": pagination})


@router.get("/count", response_model=CountOut, responses=errors())
def count_templates(
    principal: Auth,
    store: StoreDep,
    filterBy: FilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """How many templates the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_entries(ctx, filterBy, search, False))})


@router.get(
    "/name-availability",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "The name is free in that scope."}, **errors(404, 409)},
)
def name_availability(
    principal: Auth,
    store: StoreDep,
    templateName: Annotated[
        str,
        Query(min_length=1, max_length=253, pattern=NAME_PATTERN, description=f"A name: {NAME_RULE}."),
    ],
    scopeType: ScopeType,
    scopeId: Annotated[
        str | None,
        Query(
            max_length=18,
            description="The department or project id; the system scope takes none (a 400 when given).",
        ),
    ] = None,
) -> Response:
    """204 when create would take the name in that scope; otherwise create's own refusal: 400 for a name
    create refuses (the same rules), 409 when a template of that name exists."""
    with store.read(principal) as ctx:
        own = scope_from_body(ctx, scopeType, scopeId, ("scopeId",))
        ctx.access.require_read(own.ref)
        _taken(ctx, own, templateName)
    return no_content()


@router.post("/distributed/preview", response_model=None, responses={200: {"model": TemplateOut}, **errors()})
def preview_template(
    body: TemplatePreview, raw: Raw, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
) -> JSONResponse:
    """Compose a template body without storing it (as seen from its scope, or ``?projectId=``)."""
    document = _document(raw)
    doc = check_template(document)
    with store.read(principal) as ctx:
        own = scope_from_body(ctx, body.meta.scopeType, body.meta.scopeId, ("meta", "scopeId"))
        ctx.access.require_read(own.ref)
        resolve_assets(ctx, doc)
        view = view_from_query(ctx, own, projectId)
        stamp = now()
        audit = Audit(0, ctx.subject, stamp, ctx.subject, stamp)
        row = TemplateRow(
            str(uuid.UUID(int=0)), doc.meta.name, own.type, own.key, None, None, document, audit
        )
        return json_response(template_body(row, own, view, compose_row(ctx, row, own, view)))


@router.get(
    "/distributed/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404)},
)
def get_template(
    templateId: uuid.UUID, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
) -> JSONResponse:
    """A template composed as seen from its own scope, or previewed from a project below it."""
    with store.read(principal) as ctx:
        row, own = _load(ctx, templateId)
        ctx.access.require_read(own.ref)
        view = view_from_query(ctx, own, projectId)
        body = template_body(row, own, view, compose_row(ctx, row, own, view))
    return json_response(body, version=row.audit.version)


@router.put(
    "/distributed/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404, 409, 412)},
)
def replace_template(
    templateId: uuid.UUID,
    body: TemplateReplace,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    """Replace a template's document (its scope stays)."""
    del body
    document = _document(raw)
    return _write(templateId, principal, store, if_match, lambda _row: document)


@router.patch(
    "/distributed/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404, 409, 412)},
)
def patch_template(
    templateId: uuid.UUID,
    body: TemplatePatch,
    raw: Raw,
    principal: Auth,
    store: StoreDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    """Clear ``fieldsToClear``, then merge the given fields (mappings merge, lists and values replace)."""
    patch = strip_nulls(raw if isinstance(raw, dict) else {})
    paths = patch.pop("fieldsToClear", None) or []
    del body

    def change(row: TemplateRow) -> dict[str, Any]:
        cleared = clear_fields(row.document, paths, _PATCH_ROOTS, protected=("meta", "meta.name"))
        return merge_patch(cleared, patch)

    return _write(templateId, principal, store, if_match, change)


def _write(
    template_id: uuid.UUID, principal: Principal, store: Store, if_match: str | None, change: Any
) -> JSONResponse:
    with store.write(principal) as ctx:
        row, own = _load(ctx, template_id, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        document = change(row)
        doc = check_template(document)
        asset_ids = resolve_assets(ctx, doc)
        if doc.meta.name != row.name:
            _taken(ctx, own, doc.meta.name, row.id)
        ctx.repo.update_template(row.id, row.audit.version, document, ctx.subject)
        ctx.repo.set_template_assets(row.id, asset_ids)
        return _respond(ctx, row.id, own)


@router.delete(
    "/distributed/{templateId}", status_code=204, response_class=Response, responses=errors(404, 412)
)
def delete_template(
    templateId: uuid.UUID, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> Response:
    """Delete a template (204)."""
    with store.write(principal) as ctx:
        row, own = _load(ctx, templateId, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        ctx.repo.delete_template(row.id, row.audit.version)
    return no_content()


@router.get("/distributed/{templateId}/explain", response_model=ExplainOut, responses=errors(404))
def explain_template(
    templateId: uuid.UUID,
    principal: Auth,
    store: StoreDep,
    projectId: ProjectQuery = None,
    field: Annotated[str | None, Query(max_length=1000, description="Narrow to this field path.")] = None,
) -> JSONResponse:
    """Which layer set, added or excluded every field, as the CLI's ``explain``."""
    try:
        path = parse_path(field) if field else ()
    except ValueError as exc:
        raise bad_request(
            [Problem(str(exc), ("field",), None, "a field path such as compute.gpuDevicesRequest")]
        ) from None
    with store.read(principal) as ctx:
        row, own = _load(ctx, templateId)
        ctx.access.require_read(own.ref)
        view = view_from_query(ctx, own, projectId)
        outcome = compose_row(ctx, row, own, view)
    if isinstance(outcome, list):
        raise bad_request(outcome, "The template cannot be composed.")
    entries = [e.to_dict() for e in explain(outcome, path)]
    warnings = [w.to_dict() for w in outcome.runnable.warnings]
    return json_response({"entries": entries, "warnings": warnings})
