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

from template_engine.kinds import DISTRIBUTED, WorkloadKind
from template_engine.service import workload_store as workloads
from template_engine.service.bodies import documented
from template_engine.service.cluster_api import ManifestsOut
from template_engine.service.listing import WorkloadFilterBy
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
    AcceptedOut,
    CountOut,
    SubmissionErrorOut,
    WorkloadDetailedOut,
    WorkloadListOut,
    WorkloadSortBy,
)
from template_engine.service.storage.tables import now
from template_engine.service.submissions import submit
from template_engine.service.workload_shapes import WORKLOAD_KINDS, WorkloadShapes, workload_body

router = APIRouter(prefix="/api/v1/workloads", route_class=JsonRoute)
_DISTRIBUTED_TAGS: list[str | Enum] = [f"{DISTRIBUTED.workload_type} workloads"]


# -- one workload -------------------------------------------------------------------------------------------


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
    return json_response(workloads.manifests_of(store, principal, workloadId, bool(annotate)))


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
        return json_response(workload_body(workloads.read_workload(store, principal, workloadId, kind), kind))

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
        workloads.set_phase(store, principal, workloadId, changes, kind)
        return json_response(workloads.ACCEPTED, 202)

    if kind.workload_suspends:
        _phase_routes(kind, path, tags)


#: Suspend and resume: the desired phase each asks for, and the phase the service sets meanwhile.
_PHASES = {"suspend": ("Stopped", "Stopping"), "resume": ("Running", "Resuming")}


def _phase_change(kind: WorkloadKind, changes: dict[str, Any]) -> Callable[..., JSONResponse]:
    def change(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
        workloads.set_phase(store, principal, workloadId, dict(changes), kind)
        return json_response(workloads.ACCEPTED, 202)

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


Deleted = Annotated[
    bool | None, Query(description="true: only the deleted workloads; false or absent: only the live ones.")
]


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
    entries = workloads.matching(store, principal, deleted, filterBy, search)
    return json_response(workloads.page(entries, sortBy, sortOrder == "desc", offset, limit))


@router.get("/count", response_model=CountOut, responses=errors(), tags=["Workloads"])
def count_workloads(
    principal: Auth,
    store: StoreDep,
    deleted: Deleted = None,
    filterBy: WorkloadFilterBy = None,
    search: Annotated[str | None, Query(max_length=253)] = None,
) -> JSONResponse:
    """How many workloads the caller may read match the filters."""
    return json_response({"count": len(workloads.matching(store, principal, deleted, filterBy, search))})


@router.get(
    "/{workloadId}", response_model=WorkloadDetailedOut, responses=errors(403, 404), tags=["Workloads"]
)
def get_any_workload(workloadId: uuid.UUID, principal: Auth, store: StoreDep) -> JSONResponse:
    """A workload of any type by id, as Run:ai's ``WorkloadDetailed``."""
    return json_response(workloads.read_summary(store, principal, workloadId))
