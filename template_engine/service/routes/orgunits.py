"""Departments and projects at Run:ai's paths: ``/api/v1/org-unit/departments`` and ``.../projects``, their
``count`` and their ``resources``, in Run:ai's shapes (:mod:`..orgunit_shapes`).

Ids are assigned by the service (``"1"``, ``"2"``...).  Department names are unique; project names are unique
in the whole org, which also makes them unique within their department (a templates folder and Kubernetes
namespaces need org-wide project names).  A department with projects or templates, or a project with
templates or live workloads, is not deleted (409, naming what is left).

A project's ``PUT`` may rename it or move it to another department (``name``, ``parentId``: extensions of
Run:ai's ``ProjectUpdateRequest``); every composition reads the org tree of the database, so a moved project
composes with its new department's defaults at once.  A rename or move that would leave a stored template or
policy unloadable (a project policy ruling a field its new department's policy already rules...) is refused
with a 409 naming them: the org is built after the change in the same transaction and compared with before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar, get_args

from fastapi import APIRouter, Body, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response
from pydantic import WithJsonSchema

from template_engine.cluster.settings import ClusterSettings
from template_engine.errors import Problem
from template_engine.loader.policies import org_policy_problems
from template_engine.models.orgunit import ResourcesList
from template_engine.service.auth import ScopeRef, require
from template_engine.service.composer import audit_fields
from template_engine.service.context import Ctx
from template_engine.service.errors import ApiError, field_error
from template_engine.service.ids import parse_id
from template_engine.service.impact import StoredOrg, stored_org
from template_engine.service.listing import Listing
from template_engine.service.orgunit_shapes import (
    DEPARTMENT_UPDATED,
    NO_CLUSTER,
    PROJECT_UPDATED,
    DepartmentCreate,
    DepartmentListOut,
    DepartmentOut,
    DepartmentUpdate,
    ProjectCreate,
    ProjectListOut,
    ProjectOut,
    ProjectUpdate,
    ResourcesOut,
    effective,
    finite_quotas,
    merge_resources,
    project_status,
    resources_out,
    total_resources,
    updated_runai,
    without_nulls,
)
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    JsonValueRoute,
    StoreDep,
    check_if_match,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import ID_PATTERN, CountOut
from template_engine.service.storage.repository import DepartmentRow, ProjectRow, scope_key

router = APIRouter(prefix="/api/v1/org-unit", tags=["Departments and projects"], route_class=JsonRoute)

_Row = TypeVar("_Row", DepartmentRow, ProjectRow)
UnitId = Annotated[str, PathParam(pattern=ID_PATTERN)]
ResourcesBody = Annotated[ResourcesList, Body(max_length=1000)]

#: Run:ai's ``DepartmentFilterSortFields`` and ``ProjectFilterSortFields``.
DepartmentField = Literal[
    "name",
    "clusterId",
    "totalGpuQuota",
    "gpuAllocated",
    "createdAt",
    "avgGpuAllocation24h",
    "avgGpuUtilization24h",
    "avgGpuMemoryUtilization24h",
    "avgGpuAllocation7d",
    "avgGpuUtilization7d",
    "avgGpuMemoryUtilization7d",
    "avgGpuAllocation30d",
    "avgGpuUtilization30d",
    "avgGpuMemoryUtilization30d",
]
ProjectField = Literal[
    "name",
    "clusterId",
    "departmentId",
    "parentId",
    "parentName",
    "phase",
    "totalGpuQuota",
    "gpuAllocated",
    "createdAt",
    "avgGpuAllocation24h",
    "avgGpuUtilization24h",
    "avgGpuMemoryUtilization24h",
    "avgGpuAllocation7d",
    "avgGpuUtilization7d",
    "avgGpuMemoryUtilization7d",
    "avgGpuAllocation30d",
    "avgGpuUtilization30d",
    "avgGpuMemoryUtilization30d",
]
#: Usage this service does not measure: read as empty, so a filter on them matches nothing.
_MEASURED = frozenset(f for f in get_args(ProjectField) if f.startswith("avg") or f == "gpuAllocated")


def _unit_text(entry: Mapping[str, Any], name: str) -> str:
    """What a filter or sort of a unit compares: the body's field, ``totalGpuQuota`` from
    ``totalResources``, ``phase`` from ``status``, ``departmentId`` and ``parentName`` from the department."""
    found: Any
    if name == "totalGpuQuota":
        found = entry["totalResources"]["gpuQuota"]
    elif name == "phase":
        found = entry.get("status", {}).get("phase")
    elif name == "departmentId":
        found = entry.get("parentId")
    else:
        found = entry.get("_parentName" if name == "parentName" else name)
    return "" if found is None else str(found)


DEPARTMENTS = Listing(
    get_args(DepartmentField),
    _unit_text,
    dates=frozenset({"createdAt"}),
    numbers=frozenset({"totalGpuQuota"}) | (_MEASURED & set(get_args(DepartmentField))),
)
PROJECTS = Listing(
    get_args(ProjectField),
    _unit_text,
    dates=frozenset({"createdAt"}),
    ids=frozenset({"departmentId", "parentId"}),
    numbers=frozenset({"totalGpuQuota"}) | _MEASURED,
)


DepartmentFilterBy = Annotated[
    list[Annotated[str, WithJsonSchema({"type": "string", "pattern": DEPARTMENTS.pattern})]] | None,
    Query(description=DEPARTMENTS.syntax()),
]
ProjectFilterBy = Annotated[
    list[Annotated[str, WithJsonSchema({"type": "string", "pattern": PROJECTS.pattern})]] | None,
    Query(description=PROJECTS.syntax()),
]
Offset = Annotated[int, Query(ge=0, le=10**9)]
Limit = Annotated[int, Query(ge=1, le=500)]
Search = Annotated[str | None, Query(max_length=253, description="Only units whose name contains this.")]
SortOrder = Literal["asc", "desc"]


def _array_body(
    method: str, path: str
) -> Callable[[Callable[..., JSONResponse]], Callable[..., JSONResponse]]:
    """A route whose body is Run:ai's ``ResourcesUpdateRequest``, a JSON array (:class:`JsonValueRoute`),
    answering a list of Run:ai's ``Resources``."""

    def add(endpoint: Callable[..., JSONResponse]) -> Callable[..., JSONResponse]:
        router.add_api_route(
            path,
            endpoint,
            methods=[method],
            response_model=list[ResourcesOut],
            responses=errors(403, 404, 412),
            route_class_override=JsonValueRoute,
        )
        return endpoint

    return add


# -- bodies -------------------------------------------------------------------------------------------------


def _unit_body(row: DepartmentRow | ProjectRow) -> dict[str, Any]:
    """The fields a department and a project share: the stored Run:ai fields as stored (a ``null`` given
    in a request, Run:ai's "not set", left out: :func:`without_nulls`), then Run:ai's required ones
    (``clusterId`` :data:`NO_CLUSTER` if none given, ``resources``, ``totalResources``)."""
    runai = dict(row.runai or {})
    body: dict[str, Any] = {"id": str(row.id), "name": row.name, "description": row.description or ""}
    body |= without_nulls({k: v for k, v in runai.items() if k != "resources"})
    body["clusterId"] = runai.get("clusterId") or NO_CLUSTER
    body["resources"] = resources_out(runai.get("resources"))
    body["totalResources"] = total_resources(runai.get("resources"))
    return body | audit_fields(row.audit)


def department_body(row: DepartmentRow) -> dict[str, Any]:
    """Run:ai's ``Department`` of a stored department."""
    return _unit_body(row)


def project_body(row: ProjectRow, department: DepartmentRow, namespace: str) -> dict[str, Any]:
    """Run:ai's ``Project`` of a stored project: its department's id as ``parentId``, its ``status``
    (:func:`..orgunit_shapes.project_status`) and ``effective`` (:func:`..orgunit_shapes.effective`)."""
    body = _unit_body(row)
    body["parentId"] = str(department.id)
    body.setdefault("enforceRunaiScheduler", True)  # Run:ai's default
    if body["enforceRunaiScheduler"] is None:
        body["enforceRunaiScheduler"] = True
    body["status"] = project_status(row.runai, namespace)
    body["effective"] = effective(row.runai, department.runai)
    return body


def _namespaces(ctx: Ctx) -> Callable[[str], str]:
    """The namespace of a project as the cluster settings render it (``namespacePattern``)."""
    stored = ctx.repo.cluster_settings()
    try:
        settings = ClusterSettings.model_validate(stored.document if stored is not None else {})
    except ValueError:
        settings = ClusterSettings()
    return settings.namespace


def _fresh(row: _Row | None) -> _Row:
    """A row just written, read again (the context's rows are those of before the write)."""
    assert row is not None
    return row


def _name_taken(what: str, name: str) -> ApiError:
    return ApiError(409, problems=[Problem(f"a {what} named {name!r} already exists", ("name",))])


def _in_use(what: str, left: list[str]) -> ApiError:
    return ApiError(409, f"The {what} is not empty.", [Problem(item) for item in left])


def _page(
    entries: list[dict[str, Any]],
    listing: Listing,
    sort_by: str | None,
    sort_order: str,
    offset: int,
    limit: int,
    key: str,
) -> dict[str, Any]:
    """Sorted (by id when no ``sortBy``; numbers as numbers, an empty field first) and paged; Run:ai's
    ``next`` is the offset of the next page, absent on the last."""
    if sort_by is not None:

        def order(entry: Mapping[str, Any]) -> tuple[Any, ...]:
            text = listing.text_of(entry, sort_by)
            if sort_by in listing.numbers:
                return (text != "", float(text) if text else 0.0, int(entry["id"]))
            return (text.lower(), text, int(entry["id"]))

        entries.sort(key=order, reverse=sort_order == "desc")
    elif sort_order == "desc":
        entries.reverse()
    page = entries[offset : offset + limit]
    out: dict[str, Any] = {key: [{k: v for k, v in e.items() if not k.startswith("_")} for e in page]}
    if offset + len(page) < len(entries):
        out["next"] = offset + len(page)
    return out


def _unloadable(stored: StoredOrg) -> set[str]:
    """The stored documents the org cannot load: broken alone, or by the checks of policies that need the
    whole org (:func:`~template_engine.loader.policies.org_policy_problems`: one scope of a branch rules a
    field, imposed assets are data sources), as ``load_org`` runs them on a folder."""
    org = stored.org
    policies = org_policy_problems(org.policies, org.departments, org.assets, set())
    return set(org.broken) | set(policies)


def _newly_broken(before: StoredOrg, after: StoredOrg) -> list[str]:
    """The stored documents the change leaves unloadable that were loadable before, by name."""
    was = _unloadable(before)
    return [after.labels.get(file, file) for file in sorted(_unloadable(after) - was)]


def _refuse_breaking(ctx: Ctx, before: StoredOrg | None, what: str) -> None:
    if before is None:
        return
    broken = _newly_broken(before, stored_org(ctx))
    if broken:
        raise ApiError(
            409,
            f"The {what} would leave stored documents that can no longer be loaded.",
            [Problem(f"{label} could no longer be loaded") for label in broken],
        )


# -- departments --------------------------------------------------------------------------------------------


@router.post("/departments", status_code=201, response_model=DepartmentOut, responses=errors(403, 409))
def create_department(body: DepartmentCreate, principal: Auth, store: StoreDep) -> JSONResponse:
    """Create a department (system admins); Run:ai's fields are stored as given."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        if ctx.repo.department_named(body.name) is not None:
            raise _name_taken("department", body.name)
        runai = body.model_dump(mode="json", exclude_unset=True, exclude={"name", "description"})
        department_id = ctx.repo.add_department(body.name, body.description, ctx.subject, runai)
        row = ctx.department(department_id)
    return json_response(department_body(row), 201, row.audit.version)


def _departments(ctx: Ctx, filter_by: list[str] | None) -> list[dict[str, Any]]:
    filters = DEPARTMENTS.parse(filter_by)
    rows = [r for r in ctx.repo.departments() if ctx.access.can_read(ScopeRef("department", r.name))]
    entries = [department_body(r) for r in rows]
    return [e for e in entries if all(f(e) for f in filters)]


@router.get("/departments", response_model=DepartmentListOut, responses=errors())
def list_departments(
    principal: Auth,
    store: StoreDep,
    filterBy: DepartmentFilterBy = None,
    sortBy: DepartmentField | None = None,
    sortOrder: SortOrder = "asc",
    offset: Offset = 0,
    limit: Limit = 50,
) -> JSONResponse:
    """The departments the caller may read, filtered, sorted and paged as Run:ai's ``get_departments``."""
    with store.read(principal) as ctx:
        entries = _departments(ctx, filterBy)
    return json_response(_page(entries, DEPARTMENTS, sortBy, sortOrder, offset, limit, "departments"))


@router.get("/departments/count", response_model=CountOut, responses=errors())
def count_departments(principal: Auth, store: StoreDep, filterBy: DepartmentFilterBy = None) -> JSONResponse:
    """How many departments the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_departments(ctx, filterBy))})


@router.get("/departments/{departmentId}", response_model=DepartmentOut, responses=errors(403, 404))
def get_department(departmentId: UnitId, principal: Auth, store: StoreDep) -> JSONResponse:
    with store.read(principal) as ctx:
        row = ctx.department(parse_id(departmentId, "departmentId"))
        ctx.access.require_read(ScopeRef("department", row.name))
    return json_response(department_body(row), version=row.audit.version)


@router.put("/departments/{departmentId}", response_model=DepartmentOut, responses=errors(403, 404, 409, 412))
def update_department(
    departmentId: UnitId, body: DepartmentUpdate, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Replace a department's description and Run:ai fields, or rename it (``name``, an extension); a
    rename that leaves stored documents unloadable is a 409 naming them (system admins)."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = ctx.department(parse_id(departmentId, "departmentId"), lock=True)
        check_if_match(if_match, row.audit.version)
        name = body.name if body.name is not None else row.name
        other = ctx.repo.department_named(name)
        if other is not None and other.id != row.id:
            raise _name_taken("department", name)
        before = stored_org(ctx) if name != row.name else None
        runai = updated_runai(row.runai, body, DEPARTMENT_UPDATED)
        ctx.repo.update_department(row.id, row.audit.version, name, body.description, ctx.subject, runai)
        _refuse_breaking(ctx, before, "rename")
        updated = _fresh(ctx.repo.department(row.id))
    return json_response(department_body(updated), version=updated.audit.version)


def _department_resources(
    departmentId: str,
    principal: Auth,
    store: StoreDep,
    if_match: str | None,
    given: list[dict[str, Any]],
    change: Callable[[list[Any] | None], list[Any]],
) -> JSONResponse:
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = ctx.department(parse_id(departmentId, "departmentId"), lock=True)
        check_if_match(if_match, row.audit.version)
        runai = dict(row.runai or {})
        runai["resources"] = finite_quotas(change(runai.get("resources")), given)
        ctx.repo.update_department(row.id, row.audit.version, row.name, row.description, ctx.subject, runai)
        updated = _fresh(ctx.repo.department(row.id))
    return json_response(resources_out(runai["resources"]), version=updated.audit.version)


@_array_body("PUT", "/departments/{departmentId}/resources")
def update_department_resources(
    departmentId: UnitId, body: ResourcesBody, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Replace a department's quotas per node pool (system admins)."""
    given = [r.model_dump(mode="json", exclude_unset=True) for r in body]
    return _department_resources(departmentId, principal, store, if_match, given, lambda _old: given)


@_array_body("PATCH", "/departments/{departmentId}/resources")
def patch_department_resources(
    departmentId: UnitId, body: ResourcesBody, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Change a department's quotas of the node pools given (each merged into that node pool's entry)."""
    given = [r.model_dump(mode="json", exclude_unset=True) for r in body]
    return _department_resources(
        departmentId, principal, store, if_match, given, lambda old: merge_resources(old, given)
    )


@router.delete(
    "/departments/{departmentId}",
    status_code=204,
    response_class=Response,
    responses=errors(403, 404, 409, 412),
)
def delete_department(
    departmentId: UnitId, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> Response:
    """Delete an empty department (system admins); its defaults go with it."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = ctx.department(parse_id(departmentId, "departmentId"), lock=True)
        check_if_match(if_match, row.audit.version)
        left = [f"project {p.name!r} ({p.id})" for p in ctx.repo.projects(row.id)]
        left += [
            f"template {t.name!r} ({t.id})" for t in ctx.repo.templates([scope_key("department", row.id)])
        ]
        left += [f"{a.kind} asset {a.name!r} ({a.id})" for a in ctx.repo.assets_of_unit("department", row.id)]
        if left:
            raise _in_use("department", left)
        _drop_defaults(ctx, scope_key("department", row.id))
        ctx.repo.delete_department(row.id, row.audit.version)
    return no_content()


def _drop_defaults(ctx: Ctx, key: str) -> None:
    found = ctx.repo.defaults([key]).get(key)
    if found is not None:
        ctx.repo.delete_defaults(key, found.audit.version, ctx.subject)


# -- projects -----------------------------------------------------------------------------------------------


def _parent(ctx: Ctx, given: str) -> DepartmentRow:
    """The department ``parentId`` names, or a 400 on ``parentId``."""
    try:
        return ctx.department(parse_id(given, "parentId"), lock=True)
    except ApiError as exc:
        if exc.status == 404:
            raise field_error(("parentId",), f"unknown department {given!r}") from None
        raise


@router.post("/projects", status_code=201, response_model=ProjectOut, responses=errors(403, 409))
def create_project(body: ProjectCreate, principal: Auth, store: StoreDep) -> JSONResponse:
    """Create a project in a department (system admins, and that department's admins); Run:ai's fields are
    stored as given."""
    with store.write(principal) as ctx:
        department = _parent(ctx, body.parentId)
        require(ctx.access.can_manage_projects(department.name))
        if ctx.repo.project_named(body.name) is not None:
            raise _name_taken("project", body.name)
        runai = body.model_dump(mode="json", exclude_unset=True, exclude={"name", "description", "parentId"})
        project_id = ctx.repo.add_project(body.name, body.description, department.id, ctx.subject, runai)
        row = ctx.project(project_id)
        answer = project_body(row, department, _namespaces(ctx)(row.name))
    return json_response(answer, 201, row.audit.version)


def _projects(ctx: Ctx, filter_by: list[str] | None, search: str | None) -> list[dict[str, Any]]:
    filters = PROJECTS.parse(filter_by)
    namespace = _namespaces(ctx)
    departments = {d.id: d for d in ctx.repo.departments()}
    out = []
    for row in ctx.repo.projects():
        department = departments[row.department_id]
        if search and search.lower() not in row.name.lower():
            continue
        if ctx.access.can_read(ScopeRef("project", department.name, row.name)):
            entry = project_body(row, department, namespace(row.name)) | {"_parentName": department.name}
            if all(f(entry) for f in filters):
                out.append(entry)
    return out


@router.get("/projects", response_model=ProjectListOut, responses=errors())
def list_projects(
    principal: Auth,
    store: StoreDep,
    filterBy: ProjectFilterBy = None,
    sortBy: ProjectField | None = None,
    sortOrder: SortOrder = "asc",
    offset: Offset = 0,
    limit: Limit = 50,
    search: Search = None,
) -> JSONResponse:
    """The projects the caller may read, filtered, sorted and paged as Run:ai's ``get_projects``."""
    with store.read(principal) as ctx:
        entries = _projects(ctx, filterBy, search)
    return json_response(_page(entries, PROJECTS, sortBy, sortOrder, offset, limit, "projects"))


@router.get("/projects/count", response_model=CountOut, responses=errors())
def count_projects(
    principal: Auth, store: StoreDep, filterBy: ProjectFilterBy = None, search: Search = None
) -> JSONResponse:
    """How many projects the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_projects(ctx, filterBy, search))})


@router.get("/projects/{projectId}", response_model=ProjectOut, responses=errors(403, 404))
def get_project(projectId: UnitId, principal: Auth, store: StoreDep) -> JSONResponse:
    with store.read(principal) as ctx:
        place = ctx.placement("project", parse_id(projectId, "projectId"))
        ctx.access.require_read(place.ref)
        assert place.project is not None and place.department is not None
        body = project_body(place.project, place.department, _namespaces(ctx)(place.project.name))
    return json_response(body, version=place.project.audit.version)


@router.put("/projects/{projectId}", response_model=ProjectOut, responses=errors(403, 404, 409, 412))
def update_project(
    projectId: UnitId, body: ProjectUpdate, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Replace a project's description and Run:ai fields; rename it (``name``) or move it to another
    department (``parentId``), both extensions.  A move needs the right to manage projects in both
    departments; a rename or move that leaves stored documents unloadable is a 409 naming them."""
    with store.write(principal) as ctx:
        row = ctx.project(parse_id(projectId, "projectId"), lock=True)
        department = ctx.department(row.department_id)
        require(ctx.access.can_manage_projects(department.name))
        check_if_match(if_match, row.audit.version)
        target = department
        if body.parentId is not None and body.parentId != str(department.id):
            target = _parent(ctx, body.parentId)
            require(ctx.access.can_manage_projects(target.name))
        name = body.name if body.name is not None else row.name
        other = ctx.repo.project_named(name)
        if other is not None and other.id != row.id:
            raise _name_taken("project", name)
        moved = target.id != department.id
        before = stored_org(ctx) if moved or name != row.name else None
        runai = updated_runai(row.runai, body, PROJECT_UPDATED)
        ctx.repo.update_project(
            row.id,
            row.audit.version,
            name,
            body.description,
            ctx.subject,
            runai,
            department_id=target.id if moved else None,
        )
        _refuse_breaking(ctx, before, "move" if moved else "rename")
        updated = _fresh(ctx.repo.project(row.id))
        answer = project_body(updated, target, _namespaces(ctx)(updated.name))
    return json_response(answer, version=updated.audit.version)


def _project_resources(
    projectId: str,
    principal: Auth,
    store: StoreDep,
    if_match: str | None,
    given: list[dict[str, Any]],
    change: Callable[[list[Any] | None], list[Any]],
) -> JSONResponse:
    with store.write(principal) as ctx:
        row = ctx.project(parse_id(projectId, "projectId"), lock=True)
        department = ctx.department(row.department_id)
        require(ctx.access.can_manage_projects(department.name))
        check_if_match(if_match, row.audit.version)
        runai = dict(row.runai or {})
        runai["resources"] = finite_quotas(change(runai.get("resources")), given)
        ctx.repo.update_project(row.id, row.audit.version, row.name, row.description, ctx.subject, runai)
        updated = _fresh(ctx.repo.project(row.id))
    return json_response(resources_out(runai["resources"]), version=updated.audit.version)


@_array_body("PUT", "/projects/{projectId}/resources")
def update_project_resources(
    projectId: UnitId, body: ResourcesBody, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Replace a project's quotas per node pool."""
    given = [r.model_dump(mode="json", exclude_unset=True) for r in body]
    return _project_resources(projectId, principal, store, if_match, given, lambda _old: given)


@_array_body("PATCH", "/projects/{projectId}/resources")
def patch_project_resources(
    projectId: UnitId, body: ResourcesBody, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Change a project's quotas of the node pools given (each merged into that node pool's entry)."""
    given = [r.model_dump(mode="json", exclude_unset=True) for r in body]
    return _project_resources(
        projectId, principal, store, if_match, given, lambda old: merge_resources(old, given)
    )


@router.delete(
    "/projects/{projectId}", status_code=204, response_class=Response, responses=errors(403, 404, 409, 412)
)
def delete_project(projectId: UnitId, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
    """Delete a project without templates or live workloads; its defaults go with it (at once: 204, of the
    202 and 204 Run:ai declares)."""
    with store.write(principal) as ctx:
        row = ctx.project(parse_id(projectId, "projectId"), lock=True)
        department = ctx.department(row.department_id)
        require(ctx.access.can_manage_projects(department.name))
        check_if_match(if_match, row.audit.version)
        left = [f"template {t.name!r} ({t.id})" for t in ctx.repo.templates([scope_key("project", row.id)])]
        left += [f"{a.kind} asset {a.name!r} ({a.id})" for a in ctx.repo.assets_of_unit("project", row.id)]
        live = ctx.repo.live_workloads_of(row.id)
        if live:
            left.append(f"{live} workload(s) not deleted")
        if left:
            raise _in_use("project", left)
        _drop_defaults(ctx, scope_key("project", row.id))
        ctx.repo.delete_project(row.id, row.audit.version)
    return no_content()
