"""Stored workloads, read and changed: a workload the caller may read (or change) at its kind's path, Run:ai's
``Workload`` summary of one, the lists, its cluster objects, and the phase changes (delete, suspend,
resume).  A workload whose project is gone is reached by system admins only (and viewers, to read).  There
is no cluster behind the service: ``actualPhase`` stays what the service set.  Submissions are
:mod:`.submissions`'.
"""

from __future__ import annotations

import uuid
from typing import Any

from template_engine.kinds import DISTRIBUTED, WorkloadKind, kind_named
from template_engine.service.auth import Principal
from template_engine.service.cluster_api import (
    manifests_body,
    settings_for,
    workload_manifests,
    workload_resolver,
)
from template_engine.service.composer import timestamp
from template_engine.service.context import Ctx, Placement, Store
from template_engine.service.errors import ApiError, not_found
from template_engine.service.listing import WORKLOADS
from template_engine.service.schemas import TENANT_ID
from template_engine.service.storage.repository import DEPARTMENTS, PROJECTS, WorkloadRow

#: What a phase change answers (Run:ai's ``202``).
ACCEPTED = {"code": 202, "message": "Request has been accepted."}


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


def set_phase(
    store: Store, principal: Principal, workload_id: uuid.UUID, changes: dict[str, Any], kind: WorkloadKind
) -> None:
    """Ask for a workload of ``kind`` to change phase (``changes``: its new phases, and ``deleted_at`` for a
    delete).  Asking again changes nothing; a deleted workload is a 409 unless deleted again."""
    with store.write(principal) as ctx:
        row = _load(ctx, workload_id, write=True, kind=kind)
        if row.deleted_at is None:
            if "deleted_at" not in changes and row.desired_phase == changes["desired_phase"]:
                return
            ctx.repo.update_workload(row.id, row.audit.version, changes, ctx.subject)
        elif "deleted_at" not in changes:
            raise ApiError(409, "The workload is deleted.")


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


def matching(
    store: Store, principal: Principal, deleted: bool | None, filter_by: list[str] | None, search: str | None
) -> list[dict[str, Any]]:
    """The workloads the caller may read (the deleted ones, or the live ones) matching ``search`` (in the
    name) and the filters, as Run:ai's ``Workload``."""
    with store.read(principal) as ctx:
        return _matching(ctx, deleted, filter_by, search)


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


def read_workload(
    store: Store, principal: Principal, workload_id: uuid.UUID, kind: WorkloadKind | None
) -> WorkloadRow:
    """The workload (of ``kind``, or of any) the caller may read."""
    with store.read(principal) as ctx:
        return _load(ctx, workload_id, write=False, kind=kind)


def read_summary(store: Store, principal: Principal, workload_id: uuid.UUID) -> dict[str, Any]:
    """Run:ai's ``Workload`` of a workload of any kind the caller may read."""
    with store.read(principal) as ctx:
        return workload_summary(ctx, _load(ctx, workload_id, write=False))


def manifests_of(
    store: Store, principal: Principal, workload_id: uuid.UUID, annotate: bool
) -> dict[str, Any]:
    """The objects of a distributed workload: its stored effective spec, named after the workload, in its
    project's namespace and queue, rendered with its cluster's settings as they are now."""
    with store.read(principal) as ctx:
        row = _load(ctx, workload_id, write=False, kind=DISTRIBUTED)
        place = _readable(ctx, row)
        project = place.project.name if place is not None and place.project is not None else None
        cluster = settings_for(ctx, place)
    manifests, runnable = workload_manifests(row, project, cluster)
    return manifests_body(manifests, runnable, annotate, workload_resolver(row, cluster))


def page(
    entries: list[dict[str, Any]], sort_by: str | None, descending: bool, offset: int, limit: int
) -> dict[str, Any]:
    """A page of a list (oldest first unless ``sort_by``); Run:ai's ``next`` is the next page's offset."""
    if sort_by is not None:
        entries.sort(key=WORKLOADS.sort_key(sort_by, "id"), reverse=descending)
    elif descending:
        entries.reverse()
    body: dict[str, Any] = {"workloads": entries[offset : offset + limit]}
    if offset + limit < len(entries):
        body["next"] = offset + limit
    return body
