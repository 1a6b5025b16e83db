"""Departments and projects in Run:ai's shapes: the bodies the service takes, and the fields it derives.

Run:ai's OpenAPI document (``runapy`` 1.224.0) names the requests ``DepartmentCreationRequest``,
``DepartmentUpdateRequest``, ``ProjectCreationRequest``, ``ProjectUpdateRequest``, ``ResourcesUpdateRequest``
(a list of ``ResourcesNullable``), and the answers ``Department`` / ``DepartmentForList``, ``Project``,
``Resources``, ``TotalResources``, ``ProjectEffective``, ``ProjectStatus`` and ``CountResponse``.

What a body gives beyond a unit's name, description and department composes nothing here
(:mod:`template_engine.models.orgunit`): it is stored as given (the ``runai`` column) and answered as stored.
The rest of an answer is derived by the pure functions below, each saying how.  This service schedules
nothing and measures nothing: a project's phase is ``Unknown``, and no allocation, usage or quota status is
answered (Run:ai's fields for them are optional).

Where the service differs from Run:ai's requests, it takes more, never less: ``clusterId`` and ``resources``
may be left out (``clusterId`` in an org without clusters, where :data:`NO_CLUSTER` answers it; an org with
clusters needs a department's; ``[]`` answers ``resources``), a ``PUT`` may rename (``name``) and a
project's ``PUT`` may move it to another department (``parentId``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from template_engine.errors import Problem
from template_engine.models.orgunit import (
    MB_PER_UNIT,
    UUID_PATTERN,
    DepartmentRunaiFields,
    NodeTypesPerWorkload,
    ProjectRunaiFields,
    QuotaList,
    SchedulingRules,
    quota_overflows,
)
from template_engine.service.documents import strip_nulls
from template_engine.service.errors import bad_request
from template_engine.service.schemas import Name, OrgUnitId

__all__ = [
    "NO_CLUSTER",
    "DepartmentCreate",
    "DepartmentListOut",
    "DepartmentOut",
    "DepartmentUpdate",
    "ProjectCreate",
    "ProjectListOut",
    "ProjectOut",
    "ProjectUpdate",
    "ResourcesOut",
    "effective",
    "finite_quotas",
    "merge_resources",
    "project_status",
    "resources_out",
    "total_resources",
]

#: The ``clusterId`` of a unit created without one in an org without clusters: the nil UUID.
NO_CLUSTER = "00000000-0000-0000-0000-000000000000"
#: What Run:ai's ``ProjectStatus.phaseMessage`` says here.
PHASE_MESSAGE = "this service schedules nothing: no cluster reports the project's phase or quota usage"
_Description = Field(default=None, max_length=250)

# -- requests -----------------------------------------------------------------------------------------------


class DepartmentCreate(DepartmentRunaiFields):
    """Run:ai's ``DepartmentCreationRequest`` (``clusterId`` and ``resources`` optional here)."""

    name: Name
    description: str | None = _Description


class _UpdatableFields(BaseModel):
    """Run:ai's ``DataUpdatableFields``: what an update replaces (``resources`` optional here: absent, the
    stored quotas stay, since they have their own ``/resources`` route)."""

    model_config = DepartmentRunaiFields.model_config
    resources: QuotaList | None = None
    schedulingRules: SchedulingRules | None = None
    defaultNodePools: list[Annotated[str, Field(max_length=253)]] | None = Field(
        default=None, max_length=1000
    )
    nodeTypes: NodeTypesPerWorkload | None = None


class DepartmentUpdate(_UpdatableFields):
    """Run:ai's ``DepartmentUpdateRequest``, and ``name`` (a rename) and ``clusterId`` (a move to another
    cluster of the org), both extensions."""

    name: Name | None = None
    description: str | None = _Description
    clusterId: str | None = Field(default=None, pattern=UUID_PATTERN, json_schema_extra={"format": "uuid"})


class ProjectCreate(ProjectRunaiFields):
    """Run:ai's ``ProjectCreationRequest``: ``parentId`` (the department) required here, ``clusterId`` and
    ``resources`` optional."""

    name: Name
    parentId: OrgUnitId
    description: str | None = _Description


class ProjectUpdate(_UpdatableFields):
    """Run:ai's ``ProjectUpdateRequest``, and ``name`` (a rename) and ``parentId`` (a move to another
    department), both extensions."""

    name: Name | None = None
    parentId: OrgUnitId | None = None
    description: str | None = _Description
    enforceRunaiScheduler: bool | None = None


#: The Run:ai fields an update replaces; the others (``clusterId``, ``requestedNamespace``,
#: ``overtimeData``) are kept as created.
DEPARTMENT_UPDATED = ("resources", "schedulingRules", "defaultNodePools", "nodeTypes")
PROJECT_UPDATED = (*DEPARTMENT_UPDATED, "enforceRunaiScheduler")


def updated_runai(stored: Mapping[str, Any] | None, body: BaseModel, fields: Sequence[str]) -> dict[str, Any]:
    """The Run:ai fields after an update: the stored ones the update does not replace, then the ``fields``
    the body gives, as given; ``resources`` left out keeps the stored quotas."""
    given = body.model_dump(mode="json", exclude_unset=True, include=set(fields))
    kept = {
        k: v for k, v in (stored or {}).items() if k not in fields or (k == "resources" and k not in given)
    }
    return kept | given


# -- derived fields -----------------------------------------------------------------------------------------


def resources_out(stored: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Run:ai's ``Resources`` of stored ``ResourcesNullable``: each entry as stored, with ``gpu`` and its
    ``deserved`` defaulted to 0 where not given (the default Run:ai's schema states for both), and an
    attribute given as ``null`` (``ResourcesNullable``'s "not set") left out: ``Resources`` declares
    ``nodePool``, ``cpu`` and ``memory`` nullable beside an ``allOf``, which OpenAPI 3.0 validators read as
    not nullable, so an answer never holds a ``null`` there."""
    out = []
    for entry in stored or ():
        gpu = dict(entry.get("gpu") or {})
        gpu.setdefault("deserved", 0)
        out.append({**strip_nulls(entry), "gpu": strip_nulls(gpu)})
    return out


def _sum(values: list[float]) -> float | None:
    return sum(values) if values else None


def total_resources(stored: Sequence[Mapping[str, Any]] | None) -> dict[str, float | None]:
    """Run:ai's ``TotalResources`` of a unit: the ``deserved`` quotas of all its node pools, summed
    (``gpuQuota`` in GPUs, ``cpuQuota`` in millicores, ``memoryQuota`` in MB, from each entry's ``units``);
    ``None`` for a resource no node pool gives a quota of."""
    gpu, cpu, memory = [], [], []
    for entry in resources_out(stored):
        gpu.append(float(entry["gpu"]["deserved"]))
        if (entry.get("cpu") or {}).get("deserved") is not None:
            cpu.append(float(entry["cpu"]["deserved"]))
        mem = entry.get("memory") or {}
        if mem.get("deserved") is not None:
            memory.append(float(mem["deserved"]) * MB_PER_UNIT[mem["units"]])
    return {"gpuQuota": _sum(gpu), "cpuQuota": _sum(cpu), "memoryQuota": _sum(memory)}


def merge_resources(
    stored: Sequence[Mapping[str, Any]] | None, patch: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``PATCH .../resources``: Run:ai's "partial updates to specific items in the list ... one or more
    attributes of an item without modifying the entire resource".  Each entry of ``patch`` is merged into the
    stored entry of the same node pool (by ``nodePool.id``; an entry without a node pool is the one without):
    an attribute it gives replaces the stored one, an object (``gpu``, ``cpu``, ``memory``) is merged key by
    key, and what it does not give is kept.  An entry of a node pool not stored yet is added after them."""

    def merged(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(old)
        for key, value in new.items():
            before = out.get(key)
            both = isinstance(before, Mapping) and isinstance(value, Mapping)
            out[key] = {**before, **value} if both else value  # type: ignore[dict-item]
        return out

    out = [dict(entry) for entry in stored or ()]
    for entry in patch:
        at = next((i for i, old in enumerate(out) if _pool(old) == _pool(entry)), None)
        if at is None:
            out.append(dict(entry))
        else:
            out[at] = merged(out[at], entry)
    return out


def _pool(entry: Mapping[str, Any]) -> str | None:
    """The node pool an entry is for (``nodePool.id``); ``None`` for the entry without one."""
    found = entry.get("nodePool")
    return str(found["id"]) if isinstance(found, Mapping) else None


def finite_quotas(
    resources: list[dict[str, Any]], given: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """A unit's node pools after a write of ``.../resources``, when every total fits Run:ai's types
    (:func:`~template_engine.models.orgunit.quota_overflows`); otherwise a 400 on the quota of the request
    body ``given`` that overflows (the body's entry of the same node pool), before anything is stored."""
    overflows = quota_overflows(resources)
    if not overflows:
        return resources
    problems = []
    for overflow in overflows:
        pool = _pool(resources[overflow.index])
        at = next((i for i, entry in enumerate(given) if _pool(entry) == pool), None)
        if at is None:  # quotas stored before totals were checked
            problems.append(Problem(f"{overflow.message}, with the stored quotas", overflow.path))
        else:
            problems.append(Problem(overflow.message, (at, *overflow.path[1:])))
    raise bad_request(problems)


def effective(project: Mapping[str, Any] | None, department: Mapping[str, Any] | None) -> dict[str, Any]:
    """Run:ai's ``ProjectEffective``: what applies to the project's workloads.  Each scheduling rule is the
    project's where it sets one, else its department's; ``defaultNodePools`` and ``nodeTypes`` are the
    project's where given, else the department's (``None`` when neither gives them), a ``null`` inside them
    (``NodeTypesPerWorkload``'s "not set") left out as in the unit's own fields (``strip_nulls``)."""
    own, parent = project or {}, department or {}
    rules = {**(parent.get("schedulingRules") or {})}
    rules |= {k: v for k, v in (own.get("schedulingRules") or {}).items() if v is not None}
    out: dict[str, Any] = {"schedulingRules": rules or None}  # absent values are left out
    for key in ("defaultNodePools", "nodeTypes"):
        out[key] = strip_nulls(own.get(key) if own.get(key) is not None else parent.get(key))
    return {k: v for k, v in out.items() if v is not None}


def project_status(runai: Mapping[str, Any] | None, namespace: str) -> dict[str, Any]:
    """Run:ai's ``ProjectStatus`` here: phase ``Unknown`` (a ``ProjectPhase``: no cluster reports one) with
    :data:`PHASE_MESSAGE`, and the namespace the project's workloads are rendered in (``requestedNamespace``
    when given, else the cluster settings' ``namespacePattern``).  No quota status: nothing is allocated."""
    requested = (runai or {}).get("requestedNamespace")
    return {
        "namespace": requested if requested is not None else namespace,
        "phase": "Unknown",
        "phaseMessage": PHASE_MESSAGE,
    }


# -- responses (documentation: the handlers answer plain JSON) ----------------------------------------------


class _Audited(BaseModel):
    createdBy: str
    createdAt: str = Field(json_schema_extra={"format": "date-time"})
    updatedBy: str
    updatedAt: str = Field(json_schema_extra={"format": "date-time"})


class _Quota(BaseModel):
    deserved: float | None = None
    limit: float | None = None
    overQuotaWeight: float | None = None


class _MemoryQuota(_Quota):
    units: Literal["Mib", "MB", "GB"]


class _NodePool(BaseModel):
    id: str
    name: str | None = None


class ResourcesOut(BaseModel):
    """Run:ai's ``Resources``."""

    nodePool: _NodePool | None = None
    gpu: _Quota
    cpu: _Quota | None = None
    memory: _MemoryQuota | None = None
    priority: str | None = None


class TotalResourcesOut(BaseModel):
    gpuQuota: float | None = None
    cpuQuota: float | None = None
    memoryQuota: float | None = None


class _UnitOut(_Audited):
    id: str
    name: str
    description: str
    clusterId: str = Field(json_schema_extra={"format": "uuid"})
    resources: list[ResourcesOut]
    totalResources: TotalResourcesOut
    schedulingRules: SchedulingRules | None = None
    defaultNodePools: list[str] | None = None
    nodeTypes: NodeTypesPerWorkload | None = None


class DepartmentOut(_UnitOut):
    """Run:ai's ``Department`` (``children`` left out: Run:ai's ids there are UUIDs, here they are not)."""


class ProjectEffectiveOut(BaseModel):
    schedulingRules: SchedulingRules | None = None
    defaultNodePools: list[str] | None = None
    nodeTypes: NodeTypesPerWorkload | None = None


class ProjectStatusOut(BaseModel):
    namespace: str | None = None
    phase: Literal["Unknown"]
    phaseMessage: str | None = None


class ProjectOut(_UnitOut):
    """Run:ai's ``Project`` (``parent`` left out: Run:ai's ids there are UUIDs, this service's are not)."""

    parentId: str
    requestedNamespace: str | None = None
    enforceRunaiScheduler: bool
    status: ProjectStatusOut
    effective: ProjectEffectiveOut


class DepartmentListOut(BaseModel):
    departments: list[DepartmentOut]
    next: int | None = Field(default=None, description="The offset of the next page; absent on the last.")


class ProjectListOut(BaseModel):
    projects: list[ProjectOut]
    next: int | None = Field(default=None, description="The offset of the next page; absent on the last.")
