"""Templates: ``/api/v1/workload-templates/distributed`` and the any-type ``/api/v1/workload-templates``
(runai-facts 7.1, 7.2).

Writes check their bodies whole (:mod:`..bodies`): one 400 names every problem of a request, the schema's,
the rules', the scope's and the assets'.  Lists take Run:ai's parameters, ``complyToProject`` (with
``complyToReplicaType`` and, on the any-type list, ``complyToWorkloadType``) included: each entry then
carries ``complianceIssues``, what keeps it from being submitted in that project.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse, Response

from template_engine.errors import Problem
from template_engine.explain import explain
from template_engine.models.documents import NAME_MAX_LENGTH, TemplateDocument
from template_engine.paths import parse_path
from template_engine.pricing import Pricer, data_bytes
from template_engine.service.auth import Principal
from template_engine.service.bodies import documented, pruned, refuse, schema_problems, under
from template_engine.service.budget import REQUEST_BUDGET, REQUEST_BYTES, over_budget, rows_price
from template_engine.service.cache import uncommitted
from template_engine.service.cluster_api import ManifestsOut, composition_resolver, manifests_body
from template_engine.service.compliance import (
    Comply,
    ComplyToProject,
    ComplyToReplicaType,
    ComplyToWorkloadType,
)
from template_engine.service.composer import (
    compose_row,
    composed,
    template_body,
    template_meta,
)
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import clear_fields, merge_patch, strip_nulls, template_problems
from template_engine.service.errors import ApiError, bad_request, not_found
from template_engine.service.listing import FilterBy, needs_composition, parse_filters, sort_key
from template_engine.service.quota import admit_write
from template_engine.service.routes.common import (
    AnnotateQuery,
    Auth,
    IfMatch,
    JsonObject,
    JsonRoute,
    StoreDep,
    asset_problems,
    check_if_match,
    errors,
    json_response,
    no_content,
    scope_from_body,
    scope_of,
    template_scope,
    view_from_query,
)
from template_engine.service.schemas import (
    NAME_PATTERN,
    NAME_RULE,
    SCOPE_ID_WORDS,
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
_SCOPE_TYPES = frozenset({"system", "tenant", "cluster", "department", "project"})

Offset = Annotated[int, Query(ge=0, le=10**9)]
Limit = Annotated[int, Query(ge=1, le=500)]
Search = Annotated[str | None, Query(max_length=253)]


def _document(raw: Any) -> dict[str, Any]:
    """The stored template document: the body without nulls, its meta without the scope."""
    doc: dict[str, Any] = strip_nulls(raw if isinstance(raw, dict) else {})
    meta = doc.get("meta")
    # A meta that is not an object (a number, a boolean, text) is the body's schema problem at ``meta``.
    kept = meta if isinstance(meta, dict) else {}
    doc["meta"] = {k: kept[k] for k in ("name", "description") if k in kept}
    return doc


def _checked(
    document: dict[str, Any], problems: list[Problem]
) -> tuple[TemplateDocument | None, list[Problem]]:
    """The document and the problems beyond ``problems`` (the body's schema problems, already worded): with
    none the document's own schema is checked too; with some, only the rules, on what they leave: a rule's
    problem at or under a field the schema refused is not said again (a 5,000-character description is
    longer than its own 250, and that is all that is said of it), as at the files' door."""
    if problems:
        doc, rules = template_problems(document, pruned(document, problems))
        refused = [p.path for p in problems if p.path]
        return doc, [p for p in rules if not under(p.path, refused)]
    return template_problems(document)


def _load(ctx: Ctx, template_id: uuid.UUID, lock: bool = False) -> tuple[TemplateRow, Placement]:
    row = ctx.repo.template(str(template_id), lock=lock)
    if row is None:
        raise not_found(f"template {template_id}")
    return row, template_scope(ctx, row.scope_type, row.department_id, row.project_id)


def _taken(ctx: Ctx, own: Placement, name: str, template_id: str | None = None, status: int = 400) -> None:
    """A ``status`` error when another template of the scope has ``name``: a create or update answers 400, the
    status Run:ai declares for them (``400BadRequest``; it declares no 409 there), ``name-availability`` 409,
    the one it declares (``409Conflict``)."""
    other = ctx.repo.template_named(own.key, name)
    if other is not None and other.id != template_id:
        raise ApiError(
            status,
            problems=[Problem(f"a template named {name!r} already exists in this scope", ("meta", "name"))],
        )


def _respond(ctx: Ctx, template_id: str, own: Placement, status: int = 200) -> JSONResponse:
    row = ctx.repo.template(template_id)
    assert row is not None
    body = template_body(row, own, own, compose_row(ctx, row, own, own))
    return json_response(body, status, row.audit.version)


def _scope_in(ctx: Ctx, raw: dict[str, Any], problems: list[Problem]) -> Placement | None:
    """The scope a create or preview body names, with its problems added to ``problems``; ``None`` when the
    body's meta cannot name one (its schema problems say why)."""
    meta = pruned(raw, problems).get("meta")
    if not isinstance(meta, dict) or meta.get("scopeType") not in _SCOPE_TYPES:
        return None
    scope_id = meta.get("scopeId")
    if isinstance(scope_id, int) and not isinstance(scope_id, bool):
        scope_id = str(scope_id)
    if scope_id is not None and not isinstance(scope_id, str):
        return None
    own, more = scope_of(ctx, meta["scopeType"], scope_id, ("meta", "scopeType"), ("meta", "scopeId"))
    problems += more
    return own


def _new(
    ctx: Ctx, raw: dict[str, Any], write: bool
) -> tuple[Placement, dict[str, Any], TemplateDocument, list[str]]:
    """A create or preview body checked whole: its scope (403 when the caller may not write or read it),
    document and asset ids; one 400 with every problem."""
    problems = schema_problems(TemplateCreate, raw)
    document = _document(raw)
    doc, more = _checked(document, problems)
    own = _scope_in(ctx, raw, problems)
    if own is not None:
        if write:
            ctx.access.require_write(own.ref)
        else:
            ctx.access.require_read(own.ref)
    asset_ids, unknown = asset_problems(ctx, doc, own) if doc is not None else ([], [])
    refuse([*problems, *more, *unknown])
    assert own is not None and doc is not None
    return own, document, doc, asset_ids


@router.post(
    "/distributed",
    status_code=202,
    response_model=None,
    responses={202: {"model": TemplateOut, "headers": _ETAG}, **errors(409)},
    openapi_extra=documented(TemplateCreate),
)
def create_template(principal: Auth, raw: JsonObject, store: StoreDep) -> JSONResponse:
    """Create a distributed training template in a scope (202, as Run:ai); every problem of the body in one
    400, a name taken in the scope included (Run:ai declares 400 here, no 409); 409 only for a write that
    collided with another at the same instant."""
    with store.write(principal) as ctx:
        own, document, doc, asset_ids = _new(ctx, raw, write=True)
        _taken(ctx, own, doc.meta.name)
        template_id = str(uuid.uuid4())
        admit_write(ctx.repo, "template", own.type, own.id, document)
        ctx.repo.add_template(template_id, own.type, own.id, document, ctx.subject)
        ctx.repo.set_template_assets(template_id, asset_ids)
        return _respond(ctx, template_id, own, 202)


# -- lists --------------------------------------------------------------------------------------------------


def _visible(ctx: Ctx) -> list[tuple[TemplateRow, Placement]]:
    """The templates the caller may read, as heads (no document: :func:`_whole` reads one)."""
    out = []
    for row in ctx.repo.template_heads():
        own = template_scope(ctx, row.scope_type, row.department_id, row.project_id)
        if ctx.access.can_read(own.ref):
            out.append((row, own))
    return out


def _whole(ctx: Ctx, row: TemplateRow) -> TemplateRow:
    """The whole row of a head (its document read), or the row itself."""
    if not row.head:
        return row
    whole = ctx.repo.template(row.id)
    return whole if whole is not None else row  # pragma: no cover - read in the same transaction


class _Prices:
    """The price of composing stored templates (:mod:`..budget`): the template's document and the defaults
    and policies of the scopes it is seen from, read once per scope."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.pricer = Pricer()
        self._chains: dict[str, tuple[list[Any], list[Any]]] = {}

    def _chain(self, view: Placement) -> tuple[list[Any], list[Any]]:
        """The defaults, and the policies, of the scopes ``view`` is seen from."""
        chain = self._chains.get(view.key)
        if chain is None:
            keys = view.chain_keys()
            defaults = [r.document for r in self.ctx.repo.defaults(keys).values()]
            policies = [r.document for r in self.ctx.repo.policies(keys).values()]
            chain = self._chains[view.key] = (defaults, policies)
        return chain

    def __call__(self, row: TemplateRow, view: Placement) -> int:
        defaults, policies = self._chain(view)
        return rows_price(self.pricer, [row.document, *defaults, *policies])

    def bytes(self, row: TemplateRow, view: Placement) -> int:
        """The bytes of the entry of ``row`` seen from ``view``, priced from what it stores before it is
        read or composed (a head's stored size): the template shown as it is (``spec``, ``masterSpec``) and
        combined with the defaults of its scopes (``combinedSpec``, ``combinedMasterSpec``)."""
        defaults, _ = self._chain(view)
        own = self.ctx.repo.template_size(row.id) if row.head else self.pricer.bytes(row.document)
        return 2 * own + 2 * sum(self.pricer.bytes(d) for d in defaults)


def _entries(
    ctx: Ctx, filter_by: list[str] | None, search: str | None, compose_all: bool
) -> list[dict[str, Any]]:
    """The entries a list holds, composed when a filter or the order needs their ``runnable``: then every
    one is priced first, and a ``413`` answers a list whose compositions exceed the request's budget."""
    filters = parse_filters(filter_by)
    entries: list[dict[str, Any]] = []
    listed = [(row, own) for row, own in _visible(ctx) if not search or search.lower() in row.name.lower()]
    if compose_all or needs_composition(filters, None):
        listed = [(_whole(ctx, row), own) for row, own in listed]  # each is composed: read whole
        price = _Prices(ctx)
        total = sum(price(row, own) for row, own in listed)
        if total > REQUEST_BUDGET:
            raise over_budget(
                f"composing the {len(listed)} templates that are sorted or filtered by runnable", total
            )
    for row, own in listed:
        entry: dict[str, Any] = {"meta": template_meta(row, own, own), "_row": (row, own)}
        if compose_all or needs_composition(filters, None):
            entry = composed(ctx, row, own, own)[1] | {"_row": (row, own)}
        if all(f(entry) for f in filters):
            entries.append(entry)
    return entries


def _list(
    principal: Principal,
    store: Store,
    offset: int,
    limit: int,
    sort_by: str,
    sort_order: str,
    filter_by: list[str] | None,
    search: str | None,
    comply: Callable[[Ctx], Comply],
) -> JSONResponse:
    with store.read(principal) as ctx:
        compliance = comply(ctx)
        entries = _entries(ctx, filter_by, search, sort_by == "runnable")
        entries.sort(key=sort_key(sort_by), reverse=sort_order == "desc")
        page = entries[offset : offset + limit]
        out: list[dict[str, Any]] = []
        price, spent, sent = _Prices(ctx), 0, 0
        for entry in page:
            head, own = entry.pop("_row")
            # The page's work is paged too: entries are composed while they fit the request's budget (one
            # at least), and the rest are left to the next page.  So are its bytes (REQUEST_BYTES): priced
            # from the stored documents before the entry is composed, then from the entry composed.
            stored = price.bytes(head, own)
            if out and sent + stored > REQUEST_BYTES:
                break  # priced from the head: the document is not even read
            row = _whole(ctx, head)
            cost = 0 if "runnable" in entry else price(row, own)
            target = compliance.target
            if target is not None and own.contains(target):
                cost += price(row, target)
            if out and spent + cost > REQUEST_BUDGET:
                break
            spent += cost
            if "runnable" not in entry:
                entry = dict(composed(ctx, row, own, own)[1])  # a copy: the composed body is shared
            issues = compliance.issues(ctx, row, own)
            if issues is not None:
                entry["complianceIssues"] = issues
            size = data_bytes(entry)
            if out and sent + size > REQUEST_BYTES:
                break
            sent += size
            out.append(entry)
    pagination: dict[str, Any] = {"limit": limit, "offset": offset}
    if offset + len(out) < len(entries):  # Run:ai's nextOffset is never null: absent on the last page
        pagination["nextOffset"] = offset + len(out)
    return json_response({"entries": out, "pagination": pagination})


@router.get("/distributed", response_model=TemplateListOut, responses=errors())
def list_templates(
    principal: Auth,
    store: StoreDep,
    offset: Offset = 0,
    limit: Limit = 50,
    sortBy: SortBy = "name",
    sortOrder: Literal["asc", "desc"] = "asc",
    filterBy: FilterBy = None,
    search: Search = None,
    complyToProject: ComplyToProject = None,
    complyToReplicaType: ComplyToReplicaType = None,
) -> JSONResponse:
    """The templates the caller may read, composed as seen from their own scopes."""
    return _list(
        principal,
        store,
        offset,
        limit,
        sortBy,
        sortOrder,
        filterBy,
        search,
        lambda ctx: Comply(ctx, complyToProject, complyToReplicaType, None),
    )


@router.get("/count", response_model=CountOut, responses=errors())
def count_templates(
    principal: Auth,
    store: StoreDep,
    filterBy: FilterBy = None,
    search: Search = None,
) -> JSONResponse:
    """How many templates the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_entries(ctx, filterBy, search, False))})


@router.get(
    "/name-availability",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "The name is free in that scope."}, **errors(409)},
)
def name_availability(
    principal: Auth,
    store: StoreDep,
    templateName: Annotated[
        str,
        Query(
            min_length=1,
            max_length=NAME_MAX_LENGTH,
            pattern=NAME_PATTERN,
            description=f"A name: {NAME_RULE}.",
        ),
    ],
    scopeType: ScopeType,
    scopeId: Annotated[str | None, Query(max_length=18, description=SCOPE_ID_WORDS)] = None,
) -> Response:
    """204 when create would take the name in that scope; 400 for a name create refuses (the same rules), 409
    when a template of that name exists (Run:ai's ``409Conflict`` here; create answers that case 400)."""
    with store.read(principal) as ctx:
        own = scope_from_body(ctx, scopeType, scopeId, ("scopeId",))
        ctx.access.require_read(own.ref)
        _taken(ctx, own, templateName, status=409)
    return no_content()


@router.post(
    "/distributed/preview",
    response_model=None,
    responses={200: {"model": TemplateOut}, **errors()},
    openapi_extra=documented(TemplatePreview),
)
def preview_template(
    principal: Auth, raw: JsonObject, store: StoreDep, projectId: ProjectQuery = None
) -> JSONResponse:
    """Compose a template body without storing it (as seen from its scope, or ``?projectId=``); nothing of
    it is cached (it is keyed on no row)."""
    with uncommitted(), store.read(principal) as ctx:
        own, document, doc, _ = _new(ctx, raw, write=False)
        view = view_from_query(ctx, own, projectId)
        stamp = now()
        audit = Audit(0, ctx.subject, stamp, ctx.subject, stamp)
        row = TemplateRow(
            str(uuid.UUID(int=0)), doc.meta.name, own.type, own.key, None, None, document, audit
        )
        return json_response(template_body(row, own, view, compose_row(ctx, row, own, view)))


def _get(template_id: uuid.UUID, principal: Principal, store: Store, project_id: str | None) -> JSONResponse:
    with store.read(principal) as ctx:
        row, own = _load(ctx, template_id)
        ctx.access.require_read(own.ref)
        view = view_from_query(ctx, own, project_id)
        body = composed(ctx, row, own, view)[1]
    return json_response(body, version=row.audit.version)


@router.get(
    "/distributed/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404)},
)
def get_template(
    templateId: uuid.UUID, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
) -> JSONResponse:
    """A template composed as seen from its own scope, or previewed from a project below it."""
    return _get(templateId, principal, store, projectId)


#: A write's change: the stored row to the new document and the problems found on the way.
Change = Callable[[TemplateRow], tuple[dict[str, Any], list[Problem]]]


@router.put(
    "/distributed/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404, 409, 412)},
    openapi_extra=documented(TemplateReplace),
)
def replace_template(
    templateId: uuid.UUID,
    principal: Auth,
    raw: JsonObject,
    store: StoreDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    """Replace a template's document (its scope stays)."""
    problems = schema_problems(TemplateReplace, raw)
    document = _document(raw)
    return _write(templateId, principal, store, if_match, lambda _row: (document, problems))


@router.patch(
    "/distributed/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404, 409, 412)},
    openapi_extra=documented(TemplatePatch),
)
def patch_template(
    templateId: uuid.UUID,
    principal: Auth,
    raw: JsonObject,
    store: StoreDep,
    if_match: IfMatch = None,
) -> JSONResponse:
    """Clear ``fieldsToClear``, then merge the given fields (mappings merge, lists and values replace)."""
    problems = schema_problems(TemplatePatch, raw)
    patch = strip_nulls(pruned(raw, problems))
    paths = patch.pop("fieldsToClear", None)
    paths = paths if isinstance(paths, list) else []

    def change(row: TemplateRow) -> tuple[dict[str, Any], list[Problem]]:
        found = list(problems)
        try:
            cleared = clear_fields(row.document, paths, _PATCH_ROOTS, protected=("meta", "meta.name"))
        except ApiError as exc:
            found += exc.problems
            cleared = dict(row.document)
        return merge_patch(cleared, patch), found

    return _write(templateId, principal, store, if_match, change)


def _write(
    template_id: uuid.UUID, principal: Principal, store: Store, if_match: str | None, change: Change
) -> JSONResponse:
    with store.write(principal) as ctx:
        row, own = _load(ctx, template_id, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        document, problems = change(row)
        doc, more = _checked(document, problems)
        asset_ids, unknown = asset_problems(ctx, doc, own) if doc is not None else ([], [])
        refuse([*problems, *more, *unknown])
        assert doc is not None
        if doc.meta.name != row.name:
            _taken(ctx, own, doc.meta.name, row.id)
        admit_write(ctx.repo, "template", own.type, own.id, document, row.id)
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
    """Which layer set, added or excluded every field, as the CLI's ``explain``, with the template's
    ``runnable`` as its GET answers it.  A template that cannot be composed (an expression that fails) is
    answered as GET answers it: 200, no entries, and the problems as its ``runnable`` issues."""
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
        outcome, body = composed(ctx, row, own, view)
    runnable = body["runnable"]
    if isinstance(outcome, list):
        return json_response({"entries": [], "warnings": [], "runnable": runnable})
    entries = [e.to_dict() for e in explain(outcome, path)]
    warnings = [w.to_dict() for w in outcome.runnable.warnings]
    return json_response({"entries": entries, "warnings": warnings, "runnable": runnable})


@router.get(
    "/distributed/{templateId}/manifests",
    response_model=ManifestsOut,
    responses=errors(404),
    description="An extension of Run:ai's API: the objects the cluster would run (docs/cluster.md).",
    openapi_extra={"x-template-engine-extension": True},
)
def template_manifests(
    templateId: uuid.UUID,
    principal: Auth,
    store: StoreDep,
    projectId: ProjectQuery = None,
    annotate: AnnotateQuery = None,
) -> JSONResponse:
    """The Kubeflow job and the claims a template becomes, seen from its scope or from a project below it
    (the project's namespace and queue), with its ``runnable`` as GET answers it.  A template that cannot be
    composed is answered as explain answers it: 200, no objects, the problems as ``runnable``'s issues."""
    with store.read(principal) as ctx:
        row, own = _load(ctx, templateId)
        ctx.access.require_read(own.ref)
        view = view_from_query(ctx, own, projectId)
        outcome, body = composed(ctx, row, own, view)
        cluster = ctx.repo.cluster_settings() if annotate else None
    if isinstance(outcome, list):
        return json_response(manifests_body(None, body["runnable"], bool(annotate), None))
    resolve = composition_resolver(outcome, cluster)
    return json_response(manifests_body(outcome.manifests, body["runnable"], bool(annotate), resolve))


# -- any type: GET /api/v1/workload-templates[/{templateId}] -------------------------------------------------
# Declared last: ``/{templateId}`` would otherwise take ``/count``, ``/name-availability``, ``/distributed``.


@router.get("", response_model=TemplateListOut, responses=errors(), tags=["Workload templates"])
def list_any_templates(
    principal: Auth,
    store: StoreDep,
    offset: Offset = 0,
    limit: Limit = 50,
    sortBy: SortBy = "name",
    sortOrder: Literal["asc", "desc"] = "asc",
    filterBy: FilterBy = None,
    search: Search = None,
    complyToProject: ComplyToProject = None,
    complyToWorkloadType: ComplyToWorkloadType = None,
    complyToReplicaType: ComplyToReplicaType = None,
) -> JSONResponse:
    """Templates of any type (Run:ai's ``SupersetTemplate``): here every template is Distributed, so this is
    the distributed list, with ``complyToWorkloadType`` as well."""
    return _list(
        principal,
        store,
        offset,
        limit,
        sortBy,
        sortOrder,
        filterBy,
        search,
        lambda ctx: Comply(ctx, complyToProject, complyToReplicaType, complyToWorkloadType),
    )


@router.get(
    "/{templateId}",
    response_model=None,
    responses={200: {"model": TemplateOut, "headers": _ETAG}, **errors(404)},
    tags=["Workload templates"],
)
def get_any_template(
    templateId: uuid.UUID, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
) -> JSONResponse:
    """A template of any type by id (Run:ai's ``SupersetTemplate``): the distributed template's body."""
    return _get(templateId, principal, store, projectId)
