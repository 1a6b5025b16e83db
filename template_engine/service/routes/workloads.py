"""Workloads: ``/api/v1/workloads/<segment>`` of every kind with one (``distributed``, seeds 000 and 003;
runai-facts 7.3; ``trainings``, ``workspaces``, ``inferences``: :data:`..workload_shapes.WORKLOAD_KINDS`), and
the any-type ``/api/v1/workloads`` list, count and read (the only way Run:ai's SDK lists workloads).

Each kind's routes are made once, by :func:`_kind_routes`, from the kind table: submit, read and delete
(Run:ai has them for every kind), suspend and resume for the kinds Run:ai suspends
(:attr:`~template_engine.kinds.WorkloadKind.workload_suspends`); the cluster objects for distributed
workloads, as before.  A submission of a kind composes that kind (:func:`~template_engine.compose.compose`
with ``kind=``): the template it names must be of the kind (else a 400 naming both kinds), and a bare
submission's ``spec`` is held to the kind's spec model.  A workload is read, deleted, suspended and resumed
at its own kind's path only (another kind's path answers 404, as for an unknown id).  A spec's
``imagePullSecrets`` of a kind whose template spec has none (Run:ai's ``<Kind>SpecSpec`` has them, its
``<Kind>TemplateSpec`` not) are set aside while composing and added to the composed spec, as a distributed
master's own are.

A submission is :func:`..submissions.submit`'s: these routes parse, authorize and answer.  There is no
cluster behind the service: ``actualPhase`` stays what the service set.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from enum import Enum
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from template_engine.kinds import DISTRIBUTED, WorkloadKind, kind_named
from template_engine.service.auth import Principal
from template_engine.service.bodies import documented
from template_engine.service.cluster_api import (
    ManifestsOut,
    manifests_body,
    workload_manifests,
    workload_resolver,
)
from template_engine.service.composer import timestamp
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.errors import ApiError, not_found
from template_engine.service.listing import WORKLOADS, WorkloadFilterBy
from template_engine.service.routes.common import (
    AnnotateQuery,
    Auth,
    JsonObject,
    JsonRoute,
    StoreDep,
    errors,
    json_response,
)
from template_engine.service.schemas import (
    TENANT_ID,
    AcceptedOut,
    CountOut,
    SubmissionErrorOut,
    WorkloadDetailedOut,
    WorkloadListOut,
    WorkloadSortBy,
)
from template_engine.service.storage.repository import DEPARTMENTS, PROJECTS, WorkloadRow
from template_engine.service.storage.tables import now
from template_engine.service.submissions import submit
from template_engine.service.workload_shapes import WORKLOAD_KINDS, WorkloadShapes, workload_body

router = APIRouter(prefix="/api/v1/workloads", route_class=JsonRoute)
_DISTRIBUTED_TAGS: list[str | Enum] = [f"{DISTRIBUTED.workload_type} workloads"]

_ACCEPTED = {"code": 202, "message": "Request has been accepted."}


# -- one workload -------------------------------------------------------------------------------------------


def _readable(ctx: Ctx, row: WorkloadRow) -> Placement | None:
    """The workload's project, when it still exists; ``None`` when it is gone."""
    return ctx.placement("project", row.project_id) if ctx.repo.unit(PROJECTS, row.project_id) else None


def _may_read_orphans(ctx: Ctx) -> bool:
    return ctx.access.is_admin or ctx.access.principal.role == "viewer"


def _load(ctx: Ctx, workload_id: uuid.UUID, write: bool, kind: WorkloadKind | None = None) -> WorkloadRow:
    """The workload of ``workload_id`` the caller may read (``write``: change); with ``kind``, only one of
    that kind: another kind's workload is not found at this kind's path, as Run:ai's are not."""
    row = ctx.repo.workload(str(workload_id), lock=write)
    if row is None or (kind is not None and row.kind != kind.name):
        noun = f"{kind.noun} workload" if kind is not None else "workload"
        raise not_found(f"{noun} {workload_id}")
    place = _readable(ctx, row)
    if place is None:  # the project is gone: only system admins (and viewers, to read) reach the record
        if write:
            ctx.access.require_admin()
        elif not _may_read_orphans(ctx):
            raise ApiError(403)
        return row
    if write:
        ctx.access.require_write(place.ref)
    else:
        ctx.access.require_read(place.ref)
    return row


@router.get(
    "/distributed/{workloadId}/manifests",
    tags=_DISTRIBUTED_TAGS,
    response_model=ManifestsOut,
    responses=errors(404),
    description="An extension of Run:ai's API: the objects the cluster would run (docs/cluster.md).",
    openapi_extra={"x-template-engine-extension": True},
)
def workload_manifests_of(
    workloadId: uuid.UUID,
    principal: Auth,
    store: StoreDep,
    annotate: AnnotateQuery = None,
) -> JSONResponse:
    """The objects of a workload: its stored effective spec, named after the workload, in its project's
    namespace and queue, rendered with the org's cluster settings as they are now."""
    with store.read(principal) as ctx:
        row = _load(ctx, workloadId, write=False, kind=DISTRIBUTED)
        place = _readable(ctx, row)
        project = place.project.name if place is not None and place.project is not None else None
        cluster = ctx.repo.cluster_settings()
    manifests, runnable = workload_manifests(row, project, cluster)
    body = manifests_body(manifests, runnable, bool(annotate), workload_resolver(row, cluster))
    return json_response(body)


def _set_phase(
    workload_id: uuid.UUID,
    principal: Principal,
    store: Store,
    changes: dict[str, Any],
    kind: WorkloadKind,
) -> JSONResponse:
    with store.write(principal) as ctx:
        row = _load(ctx, workload_id, write=True, kind=kind)
        if row.deleted_at is None:
            if "deleted_at" not in changes and row.desired_phase == changes["desired_phase"]:
                return json_response(_ACCEPTED, 202)
            ctx.repo.update_workload(row.id, row.audit.version, changes, ctx.subject)
        elif "deleted_at" not in changes:
            raise ApiError(409, "The workload is deleted.")
    return json_response(_ACCEPTED, 202)


def _kind_routes(shapes: WorkloadShapes) -> None:
    """Submit, read and delete of one kind: ``/api/v1/workloads/<segment>``, ``/<segment>/{workloadId}``."""
    kind = shapes.kind
    path = f"/{kind.workload_segment}"
    tags: list[str | Enum] = [f"{kind.workload_type} workloads"]

    @router.post(
        path,
        status_code=202,
        response_model=shapes.out,
        responses={
            **errors(403, 409),
            400: {"model": SubmissionErrorOut, "description": "Bad or not runnable."},
        },
        openapi_extra=documented(shapes.create),
        name=f"submit_{kind.name}_workload",
        summary=f"Submit a {kind.noun} (Run:ai's {kind.workload_type} workload)",
        tags=tags,
    )
    def create(principal: Auth, raw: JsonObject, store: StoreDep) -> JSONResponse:
        return json_response(workload_body(submit(kind, principal, raw, store), kind), 202)

    @router.get(
        path + "/{workloadId}",
        response_model=shapes.out,
        responses=errors(403, 404),
        name=f"get_{kind.name}_workload",
        summary=f"A {kind.noun} as submitted, with its effective spec",
        tags=tags,
    )
    def get(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        with store.read(principal) as ctx:
            row = _load(ctx, workloadId, write=False, kind=kind)
        return json_response(workload_body(row, kind))

    @router.delete(
        path + "/{workloadId}",
        status_code=202,
        response_model=AcceptedOut,
        responses=errors(403, 404),
        name=f"delete_{kind.name}_workload",
        summary=f"Mark a {kind.noun} deleted (deletedAt, desiredPhase: Deleted); again changes nothing",
        tags=tags,
    )
    def delete(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        changes = {"deleted_at": now(), "desired_phase": "Deleted", "actual_phase": "Deleting"}
        return _set_phase(workloadId, principal, store, changes, kind)

    if kind.workload_suspends:
        _phase_routes(kind, path, tags)


#: Suspend and resume: the desired phase each asks for, and the phase the service sets meanwhile.
_PHASES = {"suspend": ("Stopped", "Stopping"), "resume": ("Running", "Resuming")}


def _phase_change(kind: WorkloadKind, changes: dict[str, Any]) -> Callable[..., JSONResponse]:
    def change(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        return _set_phase(workloadId, principal, store, dict(changes), kind)

    return change


def _phase_routes(kind: WorkloadKind, path: str, tags: list[str | Enum]) -> None:
    """``/<segment>/{workloadId}/suspend`` and ``/resume`` of a kind Run:ai suspends: ask for the workload to
    stop (``desiredPhase: Stopped``) or run again (``Running``); a deleted workload is a 409."""
    for action, (desired, actual) in _PHASES.items():
        change = _phase_change(kind, {"desired_phase": desired, "actual_phase": actual})
        router.add_api_route(
            f"{path}/{{workloadId}}/{action}",
            change,
            methods=["POST"],
            status_code=202,
            response_model=AcceptedOut,
            responses=errors(403, 404, 409),
            name=f"{action}_{kind.name}_workload",
            summary=f"Ask for a {kind.noun} to {'stop' if action == 'suspend' else 'run again'} "
            f"(desiredPhase: {desired})",
            tags=tags,
        )


for _shapes in WORKLOAD_KINDS:
    _kind_routes(_shapes)


# -- any type: GET /api/v1/workloads, /count, /{workloadId} -------------------------------------------------
# Declared last: ``/{workloadId}`` would otherwise take ``/count``.


def workload_summary(ctx: Ctx, row: WorkloadRow) -> dict[str, Any]:
    """Run:ai's ``Workload``: every key its schema requires (``deletedAt`` and ``priority`` even when null).
    No pods run here: the phase is the one the service set, ``runningPods`` is 0, ``conditions`` empty."""
    project = ctx.repo.unit(PROJECTS, row.project_id)
    department = ctx.repo.unit(DEPARTMENTS, row.department_id) if row.department_id is not None else None
    phase = row.actual_phase or "Unknown"
    changed = timestamp(row.audit.updated_at)
    images = {s.get("image") for s in (row.spec, row.master_spec or {})} - {None}
    summary: dict[str, Any] = {
        "tenantId": TENANT_ID,
        "id": row.id,
        "name": row.name,
        "type": kind_named(row.kind).workload_type,
        "category": row.spec.get("category") or "Train",
        "source": "Control-plane",
        "clusterId": row.cluster_id,
        "projectId": str(row.project_id),
        "projectName": project.name if project is not None else "",
        "departmentId": str(row.department_id) if row.department_id is not None else "",
        "departmentName": department.name if department is not None else "",
        "namespace": f"runai-{project.name}" if project is not None else "",
        "createdAt": timestamp(row.audit.created_at),
        "updatedAt": changed,
        "deletedAt": timestamp(row.deleted_at) if row.deleted_at is not None else None,
        "submittedBy": row.audit.created_by,
        "phase": phase,
        "phaseUpdatedAt": changed,
        "k8sPhase": phase,
        "k8sPhaseUpdatedAt": changed,
        "runningPods": 0,
        "priority": None,
        "priorityClassName": row.spec.get("priorityClass") or "train",
        "conditions": [],
        "images": sorted(images),
    }
    framework = row.spec.get("distributedFramework")
    if framework is not None:  # a string in Run:ai's Workload, not nullable: absent for the other kinds
        summary["distributedFramework"] = framework
    return summary


Deleted = Annotated[
    bool | None, Query(description="true: only the deleted workloads; false or absent: only the live ones.")
]


def _matching(
    ctx: Ctx, deleted: bool | None, filter_by: list[str] | None, search: str | None
) -> list[dict[str, Any]]:
    filters = WORKLOADS.parse(filter_by)
    out = []
    for row in ctx.repo.workloads(deleted=deleted is True):
        place = _readable(ctx, row)
        if not (ctx.access.can_read(place.ref) if place is not None else _may_read_orphans(ctx)):
            continue
        if search and search.lower() not in row.name.lower():
            continue
        entry = workload_summary(ctx, row)
        if all(f(entry) for f in filters):
            out.append(entry)
    return out


@router.get("", response_model=WorkloadListOut, responses=errors(), tags=["Workloads"])
def list_workloads(
    principal: Auth,
    store: StoreDep,
    deleted: Deleted = None,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    sortOrder: Literal["asc", "desc"] = "asc",
    sortBy: WorkloadSortBy | None = None,
    filterBy: WorkloadFilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """The workloads the caller may read, as Run:ai's ``Workload`` (oldest first unless ``sortBy``)."""
    with store.read(principal) as ctx:
        entries = _matching(ctx, deleted, filterBy, search)
    if sortBy is not None:
        entries.sort(key=WORKLOADS.sort_key(sortBy, "id"), reverse=sortOrder == "desc")
    elif sortOrder == "desc":
        entries.reverse()
    body: dict[str, Any] = {"workloads": entries[offset : offset + limit]}
    if offset + limit < len(entries):
        body["next"] = offset + limit
    return json_response(body)


@router.get("/count", response_model=CountOut, responses=errors(), tags=["Workloads"])
def count_workloads(
    principal: Auth,
    store: StoreDep,
    deleted: Deleted = None,
    filterBy: WorkloadFilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """How many workloads the caller may read match the filters."""
    with store.read(principal) as ctx:
        return json_response({"count": len(_matching(ctx, deleted, filterBy, search))})


@router.get(
    "/{workloadId}", response_model=WorkloadDetailedOut, responses=errors(403, 404), tags=["Workloads"]
)
def get_any_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """A workload of any type by id, as Run:ai's ``WorkloadDetailed``."""
    with store.read(principal) as ctx:
        row = _load(ctx, workloadId, write=False)
        return json_response(workload_summary(ctx, row))
