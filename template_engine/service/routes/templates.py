"""Templates: ``/api/v1/workload-templates/{segment}`` for each kind Run:ai has templates of
(:data:`template_engine.kinds.TEMPLATE_KINDS`: ``distributed``, ``trainings``, ``workspaces``,
``inferences``), and the any-type ``/api/v1/workload-templates`` (runai-facts 7.1, 7.2).

The routes of a kind are made once, over the kinds (as :mod:`.assets` makes those of each asset kind): a body
is the kind's (Run:ai's ``<Kind>TemplateCreationRequest``...: no ``kind``, the route says it, and the
database keeps it in ``templates.kind``), an answer Run:ai's ``<Kind>Template``; a template of another kind
is not found under a kind's route (404), and a kind Run:ai does not let change (inference) has no PUT or
PATCH (405).  A name is unique in its scope across kinds.

Writes check their bodies whole (:mod:`..bodies`): one 400 names every problem of a request, the schema's,
the rules', the scope's and the assets'.  Lists take Run:ai's parameters, ``complyToProject`` (with
``complyToReplicaType`` and, on the any-type list, ``complyToWorkloadType``) included: each entry then
carries ``complianceIssues``, what keeps it from being submitted in that project.
"""

# No ``from __future__ import annotations``: the routes are made by a factory and FastAPI must see the
# parameter types themselves, not their names.

import uuid
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from template_engine.errors import Problem
from template_engine.explain import explain
from template_engine.kinds import TEMPLATE_KINDS, WorkloadKind
from template_engine.models.documents import NAME_MAX_LENGTH, AnyTemplateDocument
from template_engine.paths import Path, parse_path
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
    Composed,
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
    TEMPLATE_SHAPES,
    CountOut,
    ExplainOut,
    ScopeType,
    SortBy,
    SupersetListOut,
    SupersetTemplateOut,
)
from template_engine.service.storage.repository import Audit, TemplateRow
from template_engine.service.storage.tables import now

router = APIRouter(prefix="/api/v1/workload-templates", route_class=JsonRoute)

_ETAG = {"ETag": {"description": 'The version, such as "3" (for If-Match).', "schema": {"type": "string"}}}
ProjectQuery = Annotated[
    str | None, Query(description="Compose as seen from this project (at or below the template's scope).")
]
_SCOPE_TYPES = frozenset({"system", "tenant", "cluster", "department", "project"})

Offset = Annotated[int, Query(ge=0, le=10**9)]
Limit = Annotated[int, Query(ge=1, le=500)]
Search = Annotated[str | None, Query(max_length=253)]
Field = Annotated[str | None, Query(max_length=1000, description="Narrow to this field path.")]
Annotate = AnnotateQuery


class _Seen:
    """The template a read names (``templateId``) and the project it is seen from (``?projectId=``)."""

    def __init__(self, templateId: uuid.UUID, projectId: ProjectQuery = None) -> None:
        self.template_id, self.project_id = templateId, projectId


Seen = Annotated[_Seen, Depends()]
#: A route's handler.
Endpoint = Callable[..., Any]
#: ``complyToReplicaType`` and ``complyToWorkloadType`` on a list Run:ai does not declare them on: taken, as
#: the declared ones are, and not in the document (:func:`_list_route`).
_UNDECLARED_REPLICA: Any = Annotated[get_args(ComplyToReplicaType)[0], Query(include_in_schema=False)]
_UNDECLARED_TYPE: Any = Annotated[get_args(ComplyToWorkloadType)[0], Query(include_in_schema=False)]


def _tags(kind: WorkloadKind) -> list[str | Enum]:
    return [f"{kind.noun[0].upper()}{kind.noun[1:]} templates"]


def _patch_roots(kind: WorkloadKind) -> tuple[str, ...]:
    """The roots ``fieldsToClear`` may name in a template of ``kind``."""
    master = ("masterSpecSameAsWorker", "master") if kind.is_distributed else ()
    return ("meta", "spec", "assets", *master)


def _document(raw: Any) -> dict[str, Any]:
    """The stored template document: the body without nulls, its meta without the scope."""
    doc: dict[str, Any] = strip_nulls(raw if isinstance(raw, dict) else {})
    meta = doc.get("meta")
    # A meta that is not an object (a number, a boolean, text) is the body's schema problem at ``meta``.
    kept = meta if isinstance(meta, dict) else {}
    doc["meta"] = {k: kept[k] for k in ("name", "description") if k in kept}
    return doc


def _checked(
    document: dict[str, Any], problems: list[Problem], kind: WorkloadKind
) -> tuple[AnyTemplateDocument | None, list[Problem]]:
    """The document of ``kind`` and the problems beyond ``problems`` (the body's schema problems, already
    worded): with none the document's own schema is checked too; with some, only the rules, on what they
    leave: a rule's problem at or under a field the schema refused is not said again (a 5,000-character
    description is longer than its own 250, and that is all that is said of it), as at the files' door."""
    if problems:
        doc, rules = template_problems(document, pruned(document, problems), kind)
        refused = [p.path for p in problems if p.path]
        return doc, [p for p in rules if not under(p.path, refused)]
    return template_problems(document, kind=kind)


def _load(
    ctx: Ctx, template_id: uuid.UUID, kind: WorkloadKind | None = None, lock: bool = False
) -> tuple[TemplateRow, Placement]:
    """The template and its scope; 404 when there is none, or (``kind`` given) it is of another kind."""
    row = ctx.repo.template(str(template_id), lock=lock)
    if row is None or (kind is not None and row.kind != kind.name):
        raise not_found(f"template {template_id}" if kind is None else f"{kind.noun} template {template_id}")
    return row, template_scope(ctx, row.scope_type, row.department_id, row.project_id)


def _taken(ctx: Ctx, own: Placement, name: str, template_id: str | None = None, status: int = 400) -> None:
    """A ``status`` error when another template of the scope, of any kind, has ``name``: a create or update
    answers 400, the status Run:ai declares for them (``400BadRequest``; it declares no 409 there),
    ``name-availability`` 409, the one it declares (``409Conflict``)."""
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
    ctx: Ctx, raw: dict[str, Any], write: bool, kind: WorkloadKind, body: type[BaseModel]
) -> tuple[Placement, dict[str, Any], AnyTemplateDocument, list[str]]:
    """A create or preview body of ``kind`` (its model ``body``) checked whole: its scope (403 when the caller
    may not write or read it), document and asset ids; one 400 with every problem."""
    problems = schema_problems(body, raw)
    document = _document(raw)
    doc, more = _checked(document, problems, kind)
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


def _create(principal: Principal, raw: dict[str, Any], store: Store, kind: WorkloadKind) -> JSONResponse:
    with store.write(principal) as ctx:
        own, document, doc, asset_ids = _new(ctx, raw, True, kind, TEMPLATE_SHAPES[kind.name].create)
        _taken(ctx, own, doc.meta.name)
        template_id = str(uuid.uuid4())
        admit_write(ctx.repo, "template", own.type, own.id, document)
        ctx.repo.add_template(template_id, own.type, own.id, document, ctx.subject, kind.name)
        ctx.repo.set_template_assets(template_id, asset_ids)
        return _respond(ctx, template_id, own, 202)


# -- lists --------------------------------------------------------------------------------------------------


def _visible(ctx: Ctx, kind: WorkloadKind | None) -> list[tuple[TemplateRow, Placement]]:
    """The templates (of ``kind``, or of every kind) the caller may read, as heads (no document:
    :func:`_whole` reads one)."""
    out = []
    for row in ctx.repo.template_heads():
        if kind is not None and row.kind != kind.name:
            continue
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
    ctx: Ctx, filter_by: list[str] | None, search: str | None, compose_all: bool, kind: WorkloadKind | None
) -> list[dict[str, Any]]:
    """The entries a list holds (of ``kind``, or of every kind), composed when a filter or the order needs
    their ``runnable``: then every one is priced first, and a ``413`` answers a list whose compositions exceed
    the request's budget."""
    filters = parse_filters(filter_by)
    entries: list[dict[str, Any]] = []
    listed = [
        (row, own) for row, own in _visible(ctx, kind) if not search or search.lower() in row.name.lower()
    ]
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


class _Page:
    """What a list was asked of its page, order and filters: Run:ai's list parameters (a dependency of every
    template list)."""

    def __init__(
        self,
        offset: Offset = 0,
        limit: Limit = 50,
        sortBy: SortBy = "name",
        sortOrder: Literal["asc", "desc"] = "asc",
        filterBy: FilterBy = None,
        search: Search = None,
    ) -> None:
        self.offset, self.limit, self.sort_by, self.descending = offset, limit, sortBy, sortOrder == "desc"
        self.filter_by, self.search = filterBy, search


Page = Annotated[_Page, Depends()]


def _list(
    principal: Principal,
    store: Store,
    asked: _Page,
    kind: WorkloadKind | None,
    comply: Callable[[Ctx], Comply],
) -> JSONResponse:
    """A list of the templates of ``kind`` (``None``: of every kind), each with its compliance."""
    offset, limit = asked.offset, asked.limit
    with store.read(principal) as ctx:
        compliance = comply(ctx)
        entries = _entries(ctx, asked.filter_by, asked.search, asked.sort_by == "runnable", kind)
        entries.sort(key=sort_key(asked.sort_by), reverse=asked.descending)
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


@router.get("/count", response_model=CountOut, responses=errors(), tags=["Workload templates"])
def count_templates(
    principal: Auth,
    store: StoreDep,
    filterBy: FilterBy = None,
    search: Search = None,
) -> JSONResponse:
    """How many templates of every kind the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_entries(ctx, filterBy, search, False, None))})


@router.get(
    "/name-availability",
    status_code=204,
    response_class=Response,
    responses={204: {"description": "The name is free in that scope."}, **errors(409)},
    tags=["Workload templates"],
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
    when a template of that name, of any kind, exists (Run:ai's ``409Conflict`` here; create answers that
    case 400)."""
    with store.read(principal) as ctx:
        own = scope_from_body(ctx, scopeType, scopeId, ("scopeId",))
        ctx.access.require_read(own.ref)
        _taken(ctx, own, templateName, status=409)
    return no_content()


def _preview(
    principal: Principal, raw: dict[str, Any], store: Store, project_id: str | None, kind: WorkloadKind
) -> JSONResponse:
    with uncommitted(), store.read(principal) as ctx:
        own, document, doc, _ = _new(ctx, raw, False, kind, TEMPLATE_SHAPES[kind.name].preview)
        view = view_from_query(ctx, own, project_id)
        stamp = now()
        audit = Audit(0, ctx.subject, stamp, ctx.subject, stamp)
        zero = str(uuid.UUID(int=0))
        row = TemplateRow(zero, doc.meta.name, own.type, own.key, None, None, document, audit, kind=kind.name)
        return json_response(template_body(row, own, view, compose_row(ctx, row, own, view)))


def _seen(
    ctx: Ctx, template_id: uuid.UUID, kind: WorkloadKind | None, project_id: str | None
) -> tuple[TemplateRow, Composed]:
    """A template the caller may read (of ``kind``, when given) composed as seen from its own scope or from
    ``project_id`` below it, with its answer."""
    row, own = _load(ctx, template_id, kind)
    ctx.access.require_read(own.ref)
    return row, composed(ctx, row, own, view_from_query(ctx, own, project_id))


def _get(
    template_id: uuid.UUID,
    principal: Principal,
    store: Store,
    project_id: str | None,
    kind: WorkloadKind | None,
) -> JSONResponse:
    with store.read(principal) as ctx:
        row, (_, body) = _seen(ctx, template_id, kind, project_id)
    return json_response(body, version=row.audit.version)


#: A write's change: the stored row to the new document and the problems found on the way.
Change = Callable[[TemplateRow], tuple[dict[str, Any], list[Problem]]]


def _replace(raw: dict[str, Any], kind: WorkloadKind) -> Change:
    """A PUT's change: the body is the new document (its scope and kind stay)."""
    problems = schema_problems(TEMPLATE_SHAPES[kind.name].replace, raw)
    document = _document(raw)
    return lambda _row: (document, problems)


def _patch(raw: dict[str, Any], kind: WorkloadKind) -> Change:
    """A PATCH's change: ``fieldsToClear`` cleared, then the given fields merged in."""
    problems = schema_problems(TEMPLATE_SHAPES[kind.name].patch, raw)
    patch = strip_nulls(pruned(raw, problems))
    paths = patch.pop("fieldsToClear", None)
    paths = paths if isinstance(paths, list) else []

    def change(row: TemplateRow) -> tuple[dict[str, Any], list[Problem]]:
        found = list(problems)
        try:
            cleared = clear_fields(row.document, paths, _patch_roots(kind), protected=("meta", "meta.name"))
        except ApiError as exc:
            found += exc.problems
            cleared = dict(row.document)
        return merge_patch(cleared, patch), found

    return change


def _write(
    template_id: uuid.UUID,
    principal: Principal,
    store: Store,
    if_match: str | None,
    kind: WorkloadKind,
    change: Change,
) -> JSONResponse:
    with store.write(principal) as ctx:
        row, own = _load(ctx, template_id, kind, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        document, problems = change(row)
        doc, more = _checked(document, problems, kind)
        asset_ids, unknown = asset_problems(ctx, doc, own) if doc is not None else ([], [])
        refuse([*problems, *more, *unknown])
        assert doc is not None
        if doc.meta.name != row.name:
            _taken(ctx, own, doc.meta.name, row.id)
        admit_write(ctx.repo, "template", own.type, own.id, document, row.id)
        ctx.repo.update_template(row.id, row.audit.version, document, ctx.subject)
        ctx.repo.set_template_assets(row.id, asset_ids)
        return _respond(ctx, row.id, own)


def _delete(
    template_id: uuid.UUID, principal: Principal, store: Store, if_match: str | None, kind: WorkloadKind
) -> Response:
    with store.write(principal) as ctx:
        row, own = _load(ctx, template_id, kind, lock=True)
        ctx.access.require_write(own.ref)
        check_if_match(if_match, row.audit.version)
        ctx.repo.delete_template(row.id, row.audit.version)
    return no_content()


def _field_path(field: str | None) -> Path:
    try:
        return parse_path(field) if field else ()
    except ValueError as exc:
        raise bad_request(
            [Problem(str(exc), ("field",), None, "a field path such as compute.gpuDevicesRequest")]
        ) from None


def _explain(
    template_id: uuid.UUID,
    principal: Principal,
    store: Store,
    project_id: str | None,
    field: str | None,
    kind: WorkloadKind,
) -> JSONResponse:
    path = _field_path(field)
    with store.read(principal) as ctx:
        outcome, body = _seen(ctx, template_id, kind, project_id)[1]
    runnable = body["runnable"]
    if isinstance(outcome, list):
        return json_response({"entries": [], "warnings": [], "runnable": runnable})
    entries = [e.to_dict() for e in explain(outcome, path)]
    warnings = [w.to_dict() for w in outcome.runnable.warnings]
    return json_response({"entries": entries, "warnings": warnings, "runnable": runnable})


def _manifests(
    template_id: uuid.UUID,
    principal: Principal,
    store: Store,
    project_id: str | None,
    annotate: bool | None,
    kind: WorkloadKind,
) -> JSONResponse:
    with store.read(principal) as ctx:
        outcome, body = _seen(ctx, template_id, kind, project_id)[1]
        cluster = ctx.repo.cluster_settings() if annotate else None
    if isinstance(outcome, list):
        return json_response(manifests_body(None, body["runnable"], bool(annotate), None))
    resolve = composition_resolver(outcome, cluster)
    return json_response(manifests_body(outcome.manifests, body["runnable"], bool(annotate), resolve))


# -- the routes of each kind --------------------------------------------------------------------------------


def _kind_routes(kind: WorkloadKind) -> None:
    """The routes of ``kind``'s templates under ``/api/v1/workload-templates/{segment}``."""
    shapes = TEMPLATE_SHAPES[kind.name]
    base = f"/{kind.template_segment}"
    one = f"{base}/{{templateId}}"
    noun = kind.noun
    answer = {"model": shapes.out, "headers": _ETAG}

    def at(method: str, path: str, summary: str, **more: Any) -> Callable[[Endpoint], Endpoint]:
        """The decorator of one of the kind's routes."""
        return router.api_route(path, methods=[method], tags=_tags(kind), summary=summary, **more)

    created = {"status_code": 202, "responses": {202: answer, **errors(409)}}

    @at("POST", base, f"Create a {noun} template", openapi_extra=documented(shapes.create), **created)
    def create_template(principal: Auth, raw: JsonObject, store: StoreDep) -> JSONResponse:
        """Create a template of this kind in a scope (202, as Run:ai); every problem of the body in one 400, a
        name taken in the scope (by a template of any kind) included (Run:ai declares 400 here, no 409); 409
        only for a write that collided with another at the same instant."""
        return _create(principal, raw, store, kind)

    _list_route(base, kind, shapes.listed, _tags(kind), f"List {noun} templates")

    previewed = {"responses": {200: {"model": shapes.out}, **errors()}}

    @at(
        "POST",
        f"{base}/preview",
        f"Preview a {noun} template",
        openapi_extra=documented(shapes.preview),
        **previewed,
    )
    def preview_template(
        principal: Auth, raw: JsonObject, store: StoreDep, projectId: ProjectQuery = None
    ) -> JSONResponse:
        """Compose a template body without storing it (as seen from its scope, or ``?projectId=``); nothing of
        it is cached (it is keyed on no row)."""
        return _preview(principal, raw, store, projectId, kind)

    @at("GET", one, f"Get a {noun} template", responses={200: answer, **errors(404)})
    def get_template(
        templateId: uuid.UUID, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
    ) -> JSONResponse:
        """A template of this kind composed as seen from its own scope, or previewed from a project below
        it; another kind's id is not found here (404)."""
        return _get(templateId, principal, store, projectId, kind)

    if kind.template_updates:
        replaced = "Replace a template's document (its scope and kind stay)."
        _update_route(kind, one, "PUT", shapes.replace, _replace, replaced)
        patched = (
            "Clear ``fieldsToClear``, then merge the given fields (mappings merge, lists, values replace)."
        )
        _update_route(kind, one, "PATCH", shapes.patch, _patch, patched)

    deleted = {"status_code": 204, "response_class": Response, "responses": errors(404, 412)}

    @at("DELETE", one, f"Delete a {noun} template", **deleted)
    def delete_template(
        templateId: uuid.UUID, principal: Auth, store: StoreDep, if_match: IfMatch = None
    ) -> Response:
        """Delete a template (204)."""
        return _delete(templateId, principal, store, if_match, kind)

    @at(
        "GET",
        f"{one}/explain",
        f"Explain a {noun} template",
        response_model=ExplainOut,
        responses=errors(404),
    )
    def explain_template(seen: Seen, principal: Auth, store: StoreDep, field: Field = None) -> JSONResponse:
        """Which layer set, added or excluded every field, as the CLI's ``explain``, with the template's
        ``runnable`` as its GET answers it.  A template that cannot be composed (an expression that fails)
        is answered as GET answers it: 200, no entries, and the problems as its ``runnable`` issues."""
        return _explain(seen.template_id, principal, store, seen.project_id, field, kind)

    extension = {
        "response_model": ManifestsOut,
        "responses": errors(404),
        "description": "An extension of Run:ai's API: the objects the cluster would run (docs/cluster.md).",
        "openapi_extra": {"x-template-engine-extension": True},
    }

    @at("GET", f"{one}/manifests", f"The cluster objects of a {noun} template", **extension)
    def template_manifests(
        seen: Seen, principal: Auth, store: StoreDep, annotate: Annotate = None
    ) -> JSONResponse:
        """The objects and the claims a template becomes, seen from its scope or from a project below it
        (the project's namespace and queue), with its ``runnable`` as GET answers it.  A template that
        cannot be composed is answered as explain answers it: 200, no objects, the problems as
        ``runnable``'s issues."""
        return _manifests(seen.template_id, principal, store, seen.project_id, annotate, kind)


def _list_route(
    path: str, kind: WorkloadKind | None, listed: type[BaseModel], tags: list[str | Enum], summary: str
) -> None:
    """The list of ``kind``'s templates, or (``None``) the any-type list: Run:ai's ``SupersetTemplate``
    entries, each in its kind's shape.  Run:ai declares ``complyToWorkloadType`` on the any-type list and
    ``complyToReplicaType`` there and on the distributed list; another kind's list takes them undeclared (a
    template of another type has that as its compliance issue; a kind without a master has no replica to
    narrow to)."""
    workload: Any = ComplyToWorkloadType if kind is None else _UNDECLARED_TYPE
    replica: Any = ComplyToReplicaType if kind is None or kind.is_distributed else _UNDECLARED_REPLICA

    def compliance(
        complyToProject: ComplyToProject = None,
        complyToWorkloadType: workload = None,
        complyToReplicaType: replica = None,
    ) -> Callable[[Ctx], Comply]:
        return lambda ctx: Comply(ctx, complyToProject, complyToReplicaType, complyToWorkloadType)

    Compliance = Annotated[Callable[[Ctx], Comply], Depends(compliance)]

    @router.get(path, response_model=listed, responses=errors(), tags=tags, summary=summary)
    def list_templates(principal: Auth, store: StoreDep, page: Page, comply: Compliance) -> JSONResponse:
        """The templates the caller may read, composed as seen from their own scopes."""
        return _list(principal, store, page, kind, comply)


#: A write route's change of a body of a kind (:func:`_replace`, :func:`_patch`).
Update = Callable[[dict[str, Any], WorkloadKind], Change]


def _update_route(
    kind: WorkloadKind, path: str, method: str, body: type[BaseModel], work: Update, description: str
) -> None:
    """The ``PUT`` or ``PATCH`` of ``kind``'s templates (a kind whose templates may change)."""

    @router.api_route(
        path,
        methods=[method],
        response_model=None,
        responses={200: {"model": TEMPLATE_SHAPES[kind.name].out, "headers": _ETAG}, **errors(404, 409, 412)},
        openapi_extra=documented(body),
        tags=_tags(kind),
        summary=f"{'Replace' if method == 'PUT' else 'Patch'} a {kind.noun} template",
        description=description,
    )
    def update_template(
        templateId: uuid.UUID,
        principal: Auth,
        raw: JsonObject,
        store: StoreDep,
        if_match: IfMatch = None,
    ) -> JSONResponse:
        return _write(templateId, principal, store, if_match, kind, work(raw, kind))


for _kind in TEMPLATE_KINDS:
    _kind_routes(_kind)


# -- any type: GET /api/v1/workload-templates[/{templateId}] -------------------------------------------------
# Declared last: ``/{templateId}`` would otherwise take ``/count``, ``/name-availability``, ``/distributed``.


_list_route("", None, SupersetListOut, ["Workload templates"], "List templates of every kind")


@router.get(
    "/{templateId}",
    response_model=None,
    responses={200: {"model": SupersetTemplateOut, "headers": _ETAG}, **errors(404)},
    tags=["Workload templates"],
)
def get_any_template(
    templateId: uuid.UUID, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
) -> JSONResponse:
    """A template of any kind by id (Run:ai's ``SupersetTemplate``): its kind's body."""
    return _get(templateId, principal, store, projectId, None)
