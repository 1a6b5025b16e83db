"""Departments and projects at Run:ai's paths: ``/api/v1/org-unit/departments`` and ``.../projects``, their
``count`` and their ``resources``, in Run:ai's shapes (:mod:`..orgunit_shapes`).

The routes of a level of units are made once (:func:`_routes`), over a row per level (:data:`LEVELS`: the
service's :class:`~..org_units.UnitLevel` and the level's Run:ai models); the rules are
:mod:`..org_units`'s.  Ids are assigned by the service (``"1"``, ``"2"``...).  A project's ``PUT`` may rename
it or move it to another department (``name``, ``parentId``: extensions of Run:ai's
``ProjectUpdateRequest``); every composition reads the org tree of the database, so a moved project composes
with its new department's defaults at once.
"""

# No ``from __future__ import annotations``: the routes are made by a factory and FastAPI must see the
# parameter types themselves, not their names.

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, WithJsonSchema

from template_engine.models.orgunit import ResourcesList
from template_engine.service.org_units import (
    DEPARTMENT_UNITS,
    PROJECT_UNITS,
    DepartmentField,
    ProjectField,
    UnitLevel,
    create_unit,
    delete_unit,
    page,
    read_unit,
    set_resources,
    update_unit,
    visible_units,
)
from template_engine.service.orgunit_shapes import (
    DepartmentCreate,
    DepartmentListOut,
    DepartmentOut,
    DepartmentUpdate,
    ProjectCreate,
    ProjectListOut,
    ProjectOut,
    ProjectUpdate,
    ResourcesOut,
    merge_resources,
)
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    JsonValueRoute,
    StoreDep,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import ID_PATTERN, CountOut

router = APIRouter(prefix="/api/v1/org-unit", tags=["Departments and projects"], route_class=JsonRoute)

#: The listings of each level (read by the OpenAPI limits' test).
DEPARTMENTS = DEPARTMENT_UNITS.listing
PROJECTS = PROJECT_UNITS.listing
ResourcesBody = Annotated[ResourcesList, Body(max_length=1000)]
Offset = Annotated[int, Query(ge=0, le=10**9)]
Limit = Annotated[int, Query(ge=1, le=500)]
SortOrder = Literal["asc", "desc"]
Search = Annotated[str | None, Query(max_length=253, description="Only units whose name contains this.")]


def _no_search() -> None:
    return None


@dataclass(frozen=True, slots=True)
class Routes:
    """A level of units as its routes show it: its rules (:class:`~..org_units.UnitLevel`), Run:ai's
    models, its list's fields and whether its lists take ``search``, and what each route says of itself
    (``None``: nothing)."""

    unit: UnitLevel
    create: type[BaseModel]
    update: type[BaseModel]
    out: type[BaseModel]
    listed: type[BaseModel]
    fields: Any
    search: bool
    texts: dict[str, str | None]


LEVELS = (
    Routes(
        DEPARTMENT_UNITS,
        DepartmentCreate,
        DepartmentUpdate,
        DepartmentOut,
        DepartmentListOut,
        DepartmentField,
        False,
        {
            "create": "Create a department (system admins); Run:ai's fields are stored as given.",
            "list": "The departments the caller may read, filtered, sorted and paged as Run:ai's "
            "``get_departments``.",
            "count": "How many departments the caller may read match the filters.",
            "get": None,
            "update": "Replace a department's description and Run:ai fields, or rename it (``name``, an "
            "extension); a\nrename that leaves stored documents unloadable is a 409 naming them (system "
            "admins).",
            "put_resources": "Replace a department's quotas per node pool (system admins).",
            "patch_resources": "Change a department's quotas of the node pools given (each merged into that "
            "node pool's entry).",
            "delete": "Delete an empty department (system admins); its defaults go with it.",
        },
    ),
    Routes(
        PROJECT_UNITS,
        ProjectCreate,
        ProjectUpdate,
        ProjectOut,
        ProjectListOut,
        ProjectField,
        True,
        {
            "create": "Create a project in a department (system admins, and that department's admins); "
            "Run:ai's fields are\nstored as given.",
            "list": "The projects the caller may read, filtered, sorted and paged as Run:ai's "
            "``get_projects``.",
            "count": "How many projects the caller may read match the filters.",
            "get": None,
            "update": "Replace a project's description and Run:ai fields; rename it (``name``) or move it to "
            "another\ndepartment (``parentId``), both extensions.  A move needs the right to manage "
            "projects in both\ndepartments; a rename or move that leaves stored documents unloadable is a "
            "409 naming them.",
            "put_resources": "Replace a project's quotas per node pool.",
            "patch_resources": "Change a project's quotas of the node pools given (each merged into that "
            "node pool's entry).",
            "delete": "Delete a project without templates or live workloads; its defaults go with it (at "
            "once: 204, of the\n202 and 204 Run:ai declares).",
        },
    ),
)


def _given(body: ResourcesList) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", exclude_unset=True) for r in body]


def _routes(level: Routes) -> None:
    """The routes of one level of units: create, list, count, read, update, its resources (PUT, PATCH) and
    delete."""
    unit, texts = level.unit, level.texts
    base, noun, one = f"/{unit.plural}", unit.type, f"/{unit.plural}/{{{unit.param}}}"
    UnitId = Annotated[str, PathParam(pattern=ID_PATTERN, alias=unit.param)]
    FilterBy = Annotated[
        list[Annotated[str, WithJsonSchema({"type": "string", "pattern": unit.listing.pattern})]] | None,
        Query(description=unit.listing.syntax()),
    ]
    UnitSearch: Any = Search if level.search else Annotated[None, Depends(_no_search)]
    Fields: Any = level.fields
    Create: Any = level.create
    Update: Any = level.update

    def add(method: str, path: str, verb: str, endpoint: Callable[..., Any], **more: Any) -> None:
        name = {"list": f"list_{unit.plural}", "count": f"count_{unit.plural}"}.get(verb, f"{verb}_{noun}")
        if verb.endswith("resources"):
            name = f"{'patch' if method == 'PATCH' else 'update'}_{noun}_resources"
        router.add_api_route(path, endpoint, methods=[method], name=name, description=texts[verb], **more)

    def create(body: Create, principal: Auth, store: StoreDep) -> JSONResponse:
        with store.write(principal) as ctx:
            answer, version = create_unit(ctx, unit, body)
        return json_response(answer, 201, version)

    def list_units(
        principal: Auth,
        store: StoreDep,
        filterBy: FilterBy = None,
        sortBy: Fields | None = None,
        sortOrder: SortOrder = "asc",
        offset: Offset = 0,
        limit: Limit = 50,
        search: UnitSearch = None,
    ) -> JSONResponse:
        with store.read(principal) as ctx:
            entries = visible_units(ctx, unit, filterBy, search)
        return json_response(page(entries, unit.listing, sortBy, sortOrder, offset, limit, unit.plural))

    def count(
        principal: Auth, store: StoreDep, filterBy: FilterBy = None, search: UnitSearch = None
    ) -> JSONResponse:
        with store.read(principal) as ctx:
            return json_response({"count": len(visible_units(ctx, unit, filterBy, search))})

    def get(unit_id: UnitId, principal: Auth, store: StoreDep) -> JSONResponse:
        with store.read(principal) as ctx:
            answer, version = read_unit(ctx, unit, unit_id)
        return json_response(answer, version=version)

    def update(
        unit_id: UnitId, body: Update, principal: Auth, store: StoreDep, if_match: IfMatch = None
    ) -> JSONResponse:
        with store.write(principal) as ctx:
            answer, version = update_unit(ctx, unit, unit_id, body, if_match)
        return json_response(answer, version=version)

    def resources(
        change: Callable[[list[dict[str, Any]]], Callable[[list[Any] | None], list[Any]]],
    ) -> Callable[..., JSONResponse]:
        def endpoint(
            unit_id: UnitId, body: ResourcesBody, principal: Auth, store: StoreDep, if_match: IfMatch = None
        ) -> JSONResponse:
            given = _given(body)
            with store.write(principal) as ctx:
                answer, version = set_resources(ctx, unit, unit_id, if_match, given, change(given))
            return json_response(answer, version=version)

        return endpoint

    def delete(unit_id: UnitId, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
        with store.write(principal) as ctx:
            delete_unit(ctx, unit, unit_id, if_match)
        return no_content()

    array = {"response_model": list[ResourcesOut], "route_class_override": JsonValueRoute}
    add("POST", base, "create", create, status_code=201, response_model=level.out, responses=errors(403, 409))
    add("GET", base, "list", list_units, response_model=level.listed, responses=errors())
    add("GET", f"{base}/count", "count", count, response_model=CountOut, responses=errors())
    add("GET", one, "get", get, response_model=level.out, responses=errors(403, 404))
    add("PUT", one, "update", update, response_model=level.out, responses=errors(403, 404, 409, 412))
    replace = lambda given: lambda _old: given  # noqa: E731
    merge = lambda given: lambda old: merge_resources(old, given)  # noqa: E731
    add(
        "PUT",
        f"{one}/resources",
        "put_resources",
        resources(replace),
        responses=errors(403, 404, 412),
        **array,
    )
    add(
        "PATCH",
        f"{one}/resources",
        "patch_resources",
        resources(merge),
        responses=errors(403, 404, 412),
        **array,
    )
    deleted = {"status_code": 204, "response_class": Response, "responses": errors(403, 404, 409, 412)}
    add("DELETE", one, "delete", delete, **deleted)


for _level in LEVELS:
    _routes(_level)
