"""Distributed workloads: ``/api/v1/workloads/distributed`` (seeds 000 and 003; runai-facts 7.3).

A submission composes the project's defaults (system, department, project), the template named by
``templateId`` (which must be visible from the project) and the submitted ``spec``/``masterSpec`` (the highest
layer).  A result that is not runnable is refused with 400 and every issue in ``complianceIssues``; otherwise
the workload is stored with the effective spec (``combinedSpec``; ``masterSpec`` is the separately composed
master, ``null`` when the master is the worker or there is none).  There is no cluster behind the service:
``actualPhase`` stays what the service set.
"""

from __future__ import annotations

import secrets
import string
import uuid
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from template_engine.compose import SPEC_PLAN, Composition, Submission
from template_engine.errors import Problem, TemplateEngineError
from template_engine.loader.validate import key_problems
from template_engine.paths import format_path
from template_engine.service.auth import Principal
from template_engine.service.composer import compose_submission, timestamp
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.documents import strip_nulls
from template_engine.service.errors import ApiError, bad_request, not_found
from template_engine.service.routes.common import (
    Auth,
    JsonRoute,
    Raw,
    StoreDep,
    errors,
    json_response,
    template_scope,
)
from template_engine.service.schemas import AcceptedOut, SubmissionErrorOut, WorkloadCreate, WorkloadOut
from template_engine.service.storage.repository import TemplateRow, WorkloadRow
from template_engine.service.storage.tables import now

router = APIRouter(prefix="/api/v1/workloads", tags=["Distributed workloads"], route_class=JsonRoute)

_ACCEPTED = {"code": 202, "message": "Request has been accepted."}
_SUFFIX = string.ascii_lowercase + string.digits
NOT_RUNNABLE = "The workload request is not runnable: it does not comply with the composed defaults."


def workload_body(row: WorkloadRow) -> dict[str, Any]:
    return {
        "name": row.name,
        "requestedName": row.requested_name,
        "workloadId": row.id,
        "projectId": str(row.project_id),
        "departmentId": str(row.department_id) if row.department_id is not None else None,
        "clusterId": row.cluster_id,
        "createdBy": row.audit.created_by,
        "createdAt": timestamp(row.audit.created_at),
        "desiredPhase": row.desired_phase,
        "actualPhase": row.actual_phase,
        "deletedAt": timestamp(row.deleted_at) if row.deleted_at is not None else None,
        "spec": row.spec,
        "masterSpecSameAsWorker": row.master_same_as_worker,
        "masterSpec": row.master_spec,
    }


def _refused(issues: list[dict[str, Any]], message: str = NOT_RUNNABLE) -> ApiError:
    text = "\n".join(f"{i['field']}: {i['details']}" if i["field"] else i["details"] for i in issues)
    return ApiError(400, message, extra={"details": text, "complianceIssues": issues})


def _problem_issues(problems: tuple[Problem, ...] | list[Problem]) -> list[dict[str, Any]]:
    return [{"field": format_path(p.path), "details": p.message} for p in problems]


def _runnable_issues(composition: Composition) -> list[dict[str, Any]]:
    out = []
    for issue in composition.runnable.issues:
        issue_field = issue.field if issue.replica == "worker" else f"masterSpec.{issue.field}"
        entry: dict[str, Any] = {"field": issue_field, "details": issue.message}
        if issue.message.startswith("mandatory "):
            entry["rule"] = "required"
        out.append(entry)
    return out


def _template(
    ctx: Ctx, template_id: uuid.UUID | None, view: Placement
) -> tuple[TemplateRow | None, Placement | None]:
    if template_id is None:
        return None, None
    row = ctx.repo.template(str(template_id))
    if row is None:
        raise bad_request([Problem(f"unknown template {template_id}", ("templateId",))])
    own = template_scope(ctx, row.scope_type, row.department_id, row.project_id)
    if not own.contains(view):
        raise bad_request(
            [Problem(f"template {row.name!r} ({row.id}) is not visible from this project", ("templateId",))]
        )
    return row, own


def _submission(raw: Any, body: WorkloadCreate) -> Submission:
    data = raw if isinstance(raw, dict) else {}
    spec = strip_nulls(data.get("spec") or {})
    master = strip_nulls(data.get("masterSpec") or {})
    problems = key_problems(SPEC_PLAN, spec, ("spec",), "request body", {})
    problems += key_problems(SPEC_PLAN, master, ("masterSpec",), "request body", {})
    if body.masterSpecSameAsWorker is True and body.masterSpec is not None:
        problems.append(
            Problem(
                "masterSpecSameAsWorker is true and a masterSpec is given",
                ("masterSpec",),
                None,
                "masterSpecSameAsWorker: false, or no masterSpec",
            )
        )
    if problems:
        raise bad_request(problems)
    return Submission(spec or None, body.masterSpecSameAsWorker, master or None)


@router.post(
    "/distributed",
    status_code=202,
    response_model=WorkloadOut,
    responses={**errors(403, 409), 400: {"model": SubmissionErrorOut, "description": "Bad or not runnable."}},
)
def submit_workload(body: WorkloadCreate, raw: Raw, principal: Auth, store: StoreDep) -> JSONResponse:
    """Submit a distributed training: compose, refuse what is not runnable, store the effective spec."""
    submission = _submission(raw, body)
    with store.write(principal) as ctx:
        view = ctx.project_placement(body.projectId, "projectId")
        ctx.access.require_write(view.ref)
        row, own = _template(ctx, body.templateId, view)
        try:
            composition = compose_submission(ctx, view, row, own, submission)
        except TemplateEngineError as exc:
            raise _refused(
                _problem_issues(exc.problems), "The workload request cannot be composed."
            ) from None
        if not composition.runnable.is_runnable:
            raise _refused(_runnable_issues(composition))
        assert view.project is not None and view.department is not None
        name = body.name
        if body.useGivenNameAsPrefix:
            name = f"{body.name[:57]}-{''.join(secrets.choice(_SUFFIX) for _ in range(5))}"
        if ctx.repo.live_workload_named(view.project.id, name) is not None:
            raise ApiError(
                409, problems=[Problem(f"a workload named {name!r} exists in this project", ("name",))]
            )
        workload_id = str(uuid.uuid4())
        same = composition.master_same_as_worker
        values = {
            "id": workload_id,
            "name": name,
            "requested_name": body.name,
            "project_id": view.project.id,
            "department_id": view.department.id,
            "cluster_id": str(body.clusterId),
            "template_id": row.id if row is not None else None,
            "desired_phase": "Running",
            "actual_phase": "Creating",
            "master_same_as_worker": same,
            "spec": composition.combined_spec,
            "master_spec": None if same else composition.combined_master_spec,
        }
        ctx.repo.add_workload(values, ctx.subject)
        stored = ctx.repo.workload(workload_id)
    assert stored is not None
    return json_response(workload_body(stored), 202)


def _load(ctx: Ctx, workload_id: uuid.UUID, write: bool) -> WorkloadRow:
    row = ctx.repo.workload(str(workload_id), lock=write)
    if row is None:
        raise not_found(f"workload {workload_id}")
    place = ctx.placement("project", row.project_id) if ctx.repo.project(row.project_id) else None
    if place is None:  # the project is gone: only system admins (and viewers, to read) reach the record
        if write:
            ctx.access.require_admin()
        elif not (ctx.access.is_admin or ctx.access.principal.role == "viewer"):
            raise ApiError(403)
        return row
    if write:
        ctx.access.require_write(place.ref)
    else:
        ctx.access.require_read(place.ref)
    return row


@router.get("/distributed/{workloadId}", response_model=WorkloadOut, responses=errors(403, 404))
def get_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """A workload as submitted, with its effective spec."""
    with store.read(principal) as ctx:
        row = _load(ctx, workloadId, write=False)
    return json_response(workload_body(row))


def _set_phase(
    workload_id: uuid.UUID, principal: Principal, store: Store, changes: dict[str, Any]
) -> JSONResponse:
    with store.write(principal) as ctx:
        row = _load(ctx, workload_id, write=True)
        if row.deleted_at is None:
            if "deleted_at" not in changes and row.desired_phase == changes["desired_phase"]:
                return json_response(_ACCEPTED, 202)
            ctx.repo.update_workload(row.id, row.audit.version, changes, ctx.subject)
        elif "deleted_at" not in changes:
            raise ApiError(409, "The workload is deleted.")
    return json_response(_ACCEPTED, 202)


@router.delete(
    "/distributed/{workloadId}", status_code=202, response_model=AcceptedOut, responses=errors(403, 404)
)
def delete_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """Mark a workload deleted (``deletedAt``, ``desiredPhase: Deleted``); deleting again changes nothing."""
    changes = {"deleted_at": now(), "desired_phase": "Deleted", "actual_phase": "Deleting"}
    return _set_phase(workloadId, principal, store, changes)


@router.post(
    "/distributed/{workloadId}/suspend",
    status_code=202,
    response_model=AcceptedOut,
    responses=errors(403, 404, 409),
)
def suspend_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """Ask for the workload to stop (``desiredPhase: Stopped``)."""
    return _set_phase(workloadId, principal, store, {"desired_phase": "Stopped", "actual_phase": "Stopping"})


@router.post(
    "/distributed/{workloadId}/resume",
    status_code=202,
    response_model=AcceptedOut,
    responses=errors(403, 404, 409),
)
def resume_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """Ask for the workload to run again (``desiredPhase: Running``)."""
    return _set_phase(workloadId, principal, store, {"desired_phase": "Running", "actual_phase": "Resuming"})
