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

from template_engine.kinds import TEMPLATE_KINDS, WorkloadKind
from template_engine.models.documents import NAME_MAX_LENGTH
from template_engine.service import template_lists
from template_engine.service import template_store as stored
from template_engine.service.bodies import documented
from template_engine.service.cluster_api import ManifestsOut
from template_engine.service.compliance import (
    Comply,
    ComplyToProject,
    ComplyToReplicaType,
    ComplyToWorkloadType,
)
from template_engine.service.context import Ctx
from template_engine.service.listing import FilterBy
from template_engine.service.routes.common import (
    AnnotateQuery,
    Auth,
    IfMatch,
    JsonObject,
    JsonRoute,
    StoreDep,
    errors,
    json_response,
    no_content,
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
from template_engine.service.template_lists import Asked
from template_engine.service.template_store import Change, patching, replacing

router = APIRouter(prefix="/api/v1/workload-templates", route_class=JsonRoute)

_ETAG = {"ETag": {"description": 'The version, such as "3" (for If-Match).', "schema": {"type": "string"}}}
ProjectQuery = Annotated[
    str | None, Query(description="Compose as seen from this project (at or below the template's scope).")
]
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


# -- lists --------------------------------------------------------------------------------------------------


def _asked(
    offset: Offset = 0,
    limit: Limit = 50,
    sortBy: SortBy = "name",
    sortOrder: Literal["asc", "desc"] = "asc",
    filterBy: FilterBy = None,
    search: Search = None,
) -> Asked:
    """What a list was asked: Run:ai's list parameters (a dependency of every template list)."""
    return Asked(offset, limit, sortBy, sortOrder == "desc", filterBy, search)


Page = Annotated[Asked, Depends(_asked)]


@router.get("/count", response_model=CountOut, responses=errors(), tags=["Workload templates"])
def count_templates(
    principal: Auth,
    store: StoreDep,
    filterBy: FilterBy = None,
    search: Search = None,
) -> JSONResponse:
    """How many templates of every kind the caller may read match the filters."""
    return json_response({"count": template_lists.template_count(store, principal, filterBy, search)})


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
    scopeId: Annotated[str | None, Query(max_length=36, description=SCOPE_ID_WORDS)] = None,
) -> Response:
    """204 when create would take the name in that scope; 400 for a name create refuses (the same rules), 409
    when a template of that name, of any kind, exists (Run:ai's ``409Conflict`` here; create answers that
    case 400)."""
    stored.name_free(store, principal, templateName, scopeType, scopeId)
    return no_content()


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
        body, version = stored.create_template(store, principal, raw, kind)
        return json_response(body, 202, version)

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
        return json_response(stored.preview_template(store, principal, raw, projectId, kind))

    @at("GET", one, f"Get a {noun} template", responses={200: answer, **errors(404)})
    def get_template(
        templateId: uuid.UUID, principal: Auth, store: StoreDep, projectId: ProjectQuery = None
    ) -> JSONResponse:
        """A template of this kind composed as seen from its own scope, or previewed from a project below
        it; another kind's id is not found here (404)."""
        body, version = stored.read_template(store, principal, templateId, projectId, kind)
        return json_response(body, version=version)

    if kind.template_updates:
        replaced = "Replace a template's document (its scope and kind stay)."
        _update_route(kind, one, "PUT", shapes.replace, replacing, replaced)
        patched = (
            "Clear ``fieldsToClear``, then merge the given fields (mappings merge, lists, values replace)."
        )
        _update_route(kind, one, "PATCH", shapes.patch, patching, patched)

    deleted = {"status_code": 204, "response_class": Response, "responses": errors(404, 412)}

    @at("DELETE", one, f"Delete a {noun} template", **deleted)
    def delete_template(
        templateId: uuid.UUID, principal: Auth, store: StoreDep, if_match: IfMatch = None
    ) -> Response:
        """Delete a template (204)."""
        stored.delete_template(store, principal, templateId, if_match, kind)
        return no_content()

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
        return json_response(
            stored.explanation(store, principal, seen.template_id, seen.project_id, field, kind)
        )

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
        return json_response(
            stored.template_manifests(store, principal, seen.template_id, seen.project_id, annotate, kind)
        )


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
        return json_response(template_lists.list_templates(store, principal, page, kind, comply))


#: A write route's change of a body of a kind (:func:`~..template_store.replacing`, ``patching``).
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
        body, version = stored.update_template(store, principal, templateId, if_match, kind, work(raw, kind))
        return json_response(body, version=version)


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
    body, version = stored.read_template(store, principal, templateId, projectId, None)
    return json_response(body, version=version)
