"""Departments and projects at Run:ai's paths: ``/api/v1/org-unit/departments`` and ``.../projects``.

Ids are assigned by the service (``"1"``, ``"2"``...).  Department names are unique; project names are unique
in the whole org, which also makes them unique within their department (a templates folder and Kubernetes
namespaces need org-wide project names).  A department with projects or templates, or a project with
templates or live workloads, is not deleted (409, naming what is left).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, Response

from template_engine.errors import Problem
from template_engine.service.auth import ScopeRef, require
from template_engine.service.composer import audit_fields
from template_engine.service.context import Ctx, parse_id
from template_engine.service.errors import ApiError, field_error
from template_engine.service.routes.common import (
    Auth,
    IfMatch,
    JsonRoute,
    StoreDep,
    check_if_match,
    errors,
    json_response,
    no_content,
)
from template_engine.service.schemas import (
    ID_PATTERN,
    DepartmentIn,
    DepartmentListOut,
    DepartmentOut,
    ProjectIn,
    ProjectListOut,
    ProjectOut,
    ProjectUpdate,
)
from template_engine.service.storage.repository import DepartmentRow, ProjectRow, scope_key

router = APIRouter(prefix="/api/v1/org-unit", tags=["Departments and projects"], route_class=JsonRoute)

UnitId = Annotated[str, PathParam(pattern=ID_PATTERN)]


def department_body(row: DepartmentRow) -> dict[str, object]:
    body: dict[str, object] = {"id": str(row.id), "name": row.name}
    if row.description is not None:
        body["description"] = row.description
    return body | audit_fields(row.audit)


def project_body(row: ProjectRow, department: DepartmentRow) -> dict[str, object]:
    body: dict[str, object] = {"id": str(row.id), "name": row.name}
    if row.description is not None:
        body["description"] = row.description
    body |= {"parentId": str(department.id), "parentName": department.name}
    return body | audit_fields(row.audit)


def _name_taken(what: str, name: str) -> ApiError:
    return ApiError(409, problems=[Problem(f"a {what} named {name!r} already exists", ("name",))])


def _in_use(what: str, left: list[str]) -> ApiError:
    return ApiError(409, f"The {what} is not empty.", [Problem(item) for item in left])


# -- departments --------------------------------------------------------------------------------------------


@router.post("/departments", status_code=201, response_model=DepartmentOut, responses=errors(403, 409))
def create_department(body: DepartmentIn, principal: Auth, store: StoreDep) -> JSONResponse:
    """Create a department (system admins)."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        if ctx.repo.department_named(body.name) is not None:
            raise _name_taken("department", body.name)
        department_id = ctx.repo.add_department(body.name, body.description, ctx.subject)
        row = ctx.department(department_id)
    return json_response(department_body(row), 201, row.audit.version)


@router.get("/departments", response_model=DepartmentListOut, responses=errors())
def list_departments(principal: Auth, store: StoreDep) -> JSONResponse:
    """The departments the caller may read."""
    with store.read(principal) as ctx:
        rows = [r for r in ctx.repo.departments() if ctx.access.can_read(ScopeRef("department", r.name))]
    return json_response({"departments": [department_body(r) for r in rows]})


@router.get("/departments/{departmentId}", response_model=DepartmentOut, responses=errors(403, 404))
def get_department(departmentId: UnitId, principal: Auth, store: StoreDep) -> JSONResponse:
    with store.read(principal) as ctx:
        row = ctx.department(parse_id(departmentId, "departmentId"))
        ctx.access.require_read(ScopeRef("department", row.name))
    return json_response(department_body(row), version=row.audit.version)


@router.put("/departments/{departmentId}", response_model=DepartmentOut, responses=errors(403, 404, 409, 412))
def update_department(
    departmentId: UnitId, body: DepartmentIn, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Rename a department or change its description (system admins)."""
    with store.write(principal) as ctx:
        ctx.access.require_admin()
        row = ctx.department(parse_id(departmentId, "departmentId"), lock=True)
        check_if_match(if_match, row.audit.version)
        other = ctx.repo.department_named(body.name)
        if other is not None and other.id != row.id:
            raise _name_taken("department", body.name)
        ctx.repo.update_department(row.id, row.audit.version, body.name, body.description, ctx.subject)
        updated = ctx.repo.department(row.id)
    assert updated is not None
    return json_response(department_body(updated), version=updated.audit.version)


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


@router.post("/projects", status_code=201, response_model=ProjectOut, responses=errors(403, 409))
def create_project(body: ProjectIn, principal: Auth, store: StoreDep) -> JSONResponse:
    """Create a project in a department (system admins, and that department's admins)."""
    with store.write(principal) as ctx:
        try:
            department = ctx.department(parse_id(body.parentId, "parentId"), lock=True)
        except ApiError as exc:
            if exc.status == 404:
                raise field_error(("parentId",), f"unknown department {body.parentId!r}") from None
            raise
        require(ctx.access.can_manage_projects(department.name))
        if ctx.repo.project_named(body.name) is not None:
            raise _name_taken("project", body.name)
        project_id = ctx.repo.add_project(body.name, body.description, department.id, ctx.subject)
        row = ctx.project(project_id)
    return json_response(project_body(row, department), 201, row.audit.version)


@router.get("/projects", response_model=ProjectListOut, responses=errors())
def list_projects(
    principal: Auth,
    store: StoreDep,
    parentId: Annotated[str | None, Query(pattern=ID_PATTERN, description="Only this department's.")] = None,
) -> JSONResponse:
    """The projects the caller may read."""
    with store.read(principal) as ctx:
        parent = parse_id(parentId, "parentId") if parentId is not None else None
        out = []
        for row in ctx.repo.projects(parent):
            department = ctx.department(row.department_id)
            if ctx.access.can_read(ScopeRef("project", department.name, row.name)):
                out.append(project_body(row, department))
    return json_response({"projects": out})


@router.get("/projects/{projectId}", response_model=ProjectOut, responses=errors(403, 404))
def get_project(projectId: UnitId, principal: Auth, store: StoreDep) -> JSONResponse:
    with store.read(principal) as ctx:
        place = ctx.placement("project", parse_id(projectId, "projectId"))
        ctx.access.require_read(place.ref)
        assert place.project is not None and place.department is not None
        body = project_body(place.project, place.department)
    return json_response(body, version=place.project.audit.version)


@router.put("/projects/{projectId}", response_model=ProjectOut, responses=errors(403, 404, 409, 412))
def update_project(
    projectId: UnitId, body: ProjectUpdate, principal: Auth, store: StoreDep, if_match: IfMatch = None
) -> JSONResponse:
    """Rename a project or change its description (its department stays)."""
    with store.write(principal) as ctx:
        row = ctx.project(parse_id(projectId, "projectId"), lock=True)
        department = ctx.department(row.department_id)
        require(ctx.access.can_manage_projects(department.name))
        check_if_match(if_match, row.audit.version)
        other = ctx.repo.project_named(body.name)
        if other is not None and other.id != row.id:
            raise _name_taken("project", body.name)
        ctx.repo.update_project(row.id, row.audit.version, body.name, body.description, ctx.subject)
        updated = ctx.repo.project(row.id)
    assert updated is not None
    return json_response(project_body(updated, department), version=updated.audit.version)


@router.delete(
    "/projects/{projectId}", status_code=204, response_class=Response, responses=errors(403, 404, 409, 412)
)
def delete_project(projectId: UnitId, principal: Auth, store: StoreDep, if_match: IfMatch = None) -> Response:
    """Delete a project without templates or live workloads; its defaults go with it."""
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
