"""Run:ai's fields of departments and projects that compose nothing here, as typed models.

Run:ai's OpenAPI document (``runapy`` 1.224.0) gives a department and a project quotas per node pool
(``ResourcesNullable``), scheduling rules (``SchedulingRules``), a default order of node pools, node types
(``NodeTypesPerWorkload``), a cluster (``ClusterId``) and, for a project, a requested namespace and
``enforceRunaiScheduler``.  This engine schedules nothing, so none of them changes a composition: they are
checked against Run:ai's schema, kept as given (the service's ``runai`` column, the entries of ``org.yaml``)
and answered as kept.  The service's request bodies (``service/orgunit_shapes.py``) and ``org.yaml``
(:class:`~template_engine.models.documents.OrgDepartment`) are built from the same classes here, so the two
doors hold these fields to one rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictStr

from template_engine.errors import InvalidAt

__all__ = [
    "DEPARTMENT_RUNAI_FIELDS",
    "ID_PATTERN",
    "MB_PER_UNIT",
    "PROJECT_RUNAI_FIELDS",
    "UUID_PATTERN",
    "ClusterId",
    "DepartmentRunaiFields",
    "GpuResource",
    "MemoryResource",
    "NodePoolRef",
    "NodePoolResources",
    "NodeTypesPerWorkload",
    "OvertimeData",
    "ProjectRunaiFields",
    "Quota",
    "QuotaList",
    "QuotaOverflow",
    "Resource",
    "ResourcesList",
    "SchedulingRules",
    "quota_overflows",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


#: A number of Run:ai's quotas (``type: number, format: double``): a JSON number, never text, and finite.
Quota = Annotated[float, Field(allow_inf_nan=False)]
#: Seconds of ``SchedulingRules`` (``type: integer, minimum: 1``).
_Seconds = Annotated[int, Field(ge=1, le=10**12)]
_Text = Annotated[StrictStr, Field(max_length=253)]
#: Run:ai's ``ClusterId`` (``format: uuid``), as text: org.yaml gives it as text, and it is stored as given.
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
ClusterId = Annotated[StrictStr, Field(pattern=UUID_PATTERN)]
#: RFC 3339's ``date-time`` (JSON Schema's ``format: date-time``, which Run:ai's
#: ``OvertimeRangeData.updatedAt`` declares): ``2021-08-01T00:00:00Z``, a fraction of a second and an
#: offset allowed.
DATE_TIME_PATTERN = (
    r"^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])[Tt]([01][0-9]|2[0-3]):[0-5][0-9]:([0-5][0-9]|60)"
    r"(\.[0-9]{1,9})?([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$"
)


def _a_calendar_day(text: str) -> str:
    """``text`` (matching :data:`DATE_TIME_PATTERN`) when its day exists (not 2021-02-30)."""
    try:
        date.fromisoformat(text[:10])
    except ValueError:
        raise ValueError(f"{text[:10]} is not a day of the calendar") from None
    return text


#: A ``date-time`` as text, stored as given: what a stored one answers always is one (a later read conforms).
_DateTime = Annotated[
    StrictStr,
    Field(pattern=DATE_TIME_PATTERN, json_schema_extra={"format": "date-time"}),
    AfterValidator(_a_calendar_day),
]


#: An id: 1 to 18 ASCII digits (departments, projects and node pools; the service reads its own ids by it).
ID_PATTERN = r"^[0-9]{1,18}$"


class NodePoolRef(_Strict):
    """The node pool a ``ResourcesNullable`` entry is for: ``id`` required, ``name`` optional.  Run:ai's
    ``ResourcesNullable.nodePool.id`` is a string whose example is ``22``, and a node pool's own ``id``
    (``NodePool``, ``NodePoolResources``) is a number: so the id is text of ASCII digits."""

    id: Annotated[StrictStr, Field(pattern=ID_PATTERN)]
    name: _Text | None = None


class Resource(_Strict):
    """Run:ai's ``Resource`` (CPU in millicores): deserved quota, limit and over-quota weight, nullable."""

    deserved: Quota | None = None
    limit: Quota | None = None
    overQuotaWeight: Quota | None = None


class GpuResource(Resource):
    """Run:ai's ``NonNullResource`` (GPUs): ``deserved`` is not nullable and defaults to 0."""

    deserved: Quota = 0


class MemoryResource(Resource):
    """Run:ai's memory ``Resource`` with its ``units`` (required): ``Mib``, ``MB`` or ``GB``."""

    units: Literal["Mib", "MB", "GB"]


class NodePoolResources(_Strict):
    """Run:ai's ``ResourcesNullable``: one node pool's quotas (every field optional in a request)."""

    nodePool: NodePoolRef | None = None
    gpu: GpuResource | None = None
    cpu: Resource | None = None
    memory: MemoryResource | None = None
    priority: _Text | None = None


#: Megabytes per memory ``units`` (Run:ai's ``TotalResources.memoryQuota`` is in MB).
MB_PER_UNIT: Mapping[str, float] = {"MB": 1.0, "Mib": 1.048576, "GB": 1000.0}
_TOTALS = {"gpu": "gpuQuota", "cpu": "cpuQuota", "memory": "memoryQuota"}


@dataclass(frozen=True, slots=True)
class QuotaOverflow:
    """The ``deserved`` quota of ``kind`` in the node pool at ``index`` makes a total overflow."""

    index: int
    kind: str
    message: str

    @property
    def path(self) -> tuple[int | str, ...]:
        return (self.index, self.kind, "deserved")


def quota_overflows(entries: Sequence[Mapping[str, Any]]) -> list[QuotaOverflow]:
    """Where the quotas of a unit's node pools (``ResourcesNullable``, dumped to JSON) stop fitting Run:ai's
    ``TotalResources``: each ``deserved`` quota (memory in MB) and each running sum over the node pools must
    be a finite double (``format: double``: at most about 1.8e308 either way).  One record per quota at
    which a total overflows (its path into ``entries``: ``(1, "memory", "deserved")``); none when every
    total is finite.  The service sums the totals in the same order (``total_resources``)."""
    totals = dict.fromkeys(_TOTALS, 0.0)
    found: list[QuotaOverflow] = []
    for index, entry in enumerate(entries):
        for kind, total in _TOTALS.items():
            given = entry.get(kind)
            if not isinstance(given, Mapping):
                continue
            value = given.get("deserved")
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            factor = MB_PER_UNIT.get(str(given.get("units")), 1.0) if kind == "memory" else 1.0
            try:
                amount = float(value) * factor
            except OverflowError:
                amount = math.inf
            if math.isfinite(amount) and math.isfinite(totals[kind] + amount):
                totals[kind] += amount
                continue
            unit = " in MB" if kind == "memory" else ""
            message = (
                f"the node pools' {kind} quotas{unit} would add up to more than a double holds "
                f"(TotalResources.{total}, at most 1.8e308)"
            )
            found.append(QuotaOverflow(index, kind, message))
    return found


def one_entry_per_pool(resources: list[NodePoolResources]) -> list[NodePoolResources]:
    """A unit's node pools when each is given once (and at most one entry gives none): a second entry of
    the same node pool would be summed twice in ``totalResources`` and a ``PATCH`` would merge into the
    first only.  Otherwise an :class:`~template_engine.errors.InvalidAt` on the second entry."""
    seen: dict[str | None, int] = {}
    for index, entry in enumerate(resources):
        pool = entry.nodePool.id if entry.nodePool is not None else None
        if pool in seen:
            where: tuple[int | str, ...] = (index, "nodePool", "id") if pool is not None else (index,)
            what = f"node pool {pool!r}" if pool is not None else "no node pool"
            raise InvalidAt(where, f"entry [{seen[pool]}] already gives the quotas of {what}: give each once")
        seen[pool] = index
    return resources


def _finite_totals(resources: list[NodePoolResources] | None) -> list[NodePoolResources] | None:
    """A unit's node pools whose totals fit Run:ai's types (:func:`quota_overflows`), or a ``ValueError``
    naming the first quota that overflows."""
    if resources is None:
        return None
    overflows = quota_overflows([r.model_dump(mode="json", exclude_none=True) for r in resources])
    if overflows:
        first = overflows[0]
        raise InvalidAt(first.path, first.message)
    return resources


#: The body of a unit's ``PUT``/``PATCH .../resources``: at most 1,000 node pools, each once.
ResourcesList = Annotated[list[NodePoolResources], Field(max_length=1000), AfterValidator(one_entry_per_pool)]
#: A unit's quotas per node pool: at most 1,000 node pools, each once, whose totals are finite doubles.
QuotaList = Annotated[ResourcesList, AfterValidator(_finite_totals)]


class SchedulingRules(_Strict):
    """Run:ai's ``SchedulingRules``: time limits of interactive and training workloads, in seconds."""

    interactiveJobTimeLimitSeconds: _Seconds | None = None
    interactiveJobMaxIdleDurationSeconds: _Seconds | None = None
    interactiveJobPreemptIdleDurationSeconds: _Seconds | None = None
    trainingJobMaxIdleDurationSeconds: _Seconds | None = None
    trainingJobTimeLimitSeconds: _Seconds | None = None


class NodeTypesPerWorkload(_Strict):
    """Run:ai's ``NodeTypesPerWorkload``: node type ids for training and workspace workloads."""

    training: list[_Text] | None = Field(default=None, max_length=1000)
    workspace: list[_Text] | None = Field(default=None, max_length=1000)
    names: dict[_Text, _Text] | None = Field(default=None, max_length=1000)


class _Range(_Strict):
    averageGpuAllocation: Quota | None = None
    averageGpuUtilization: Quota | None = None
    averageGpuMemoryUtilization: Quota | None = None
    updatedAt: _DateTime | None = None


class OvertimeData(_Strict):
    """Run:ai's ``OvertimeData`` (``DepartmentCreationRequest`` has it): GPU usage averages, as given."""

    range24hData: _Range | None = None
    range7dData: _Range | None = None
    range30dData: _Range | None = None


class _Shared(_Strict):
    """Run:ai's ``DataUpdatableFields`` and ``clusterId``: what a department and a project both have."""

    resources: QuotaList | None = None
    schedulingRules: SchedulingRules | None = None
    defaultNodePools: list[_Text] | None = Field(default=None, max_length=1000)
    nodeTypes: NodeTypesPerWorkload | None = None
    clusterId: ClusterId | None = None


class DepartmentRunaiFields(_Shared):
    """A department's Run:ai fields beyond its name and description (``DepartmentCreationRequest``)."""

    overtimeData: OvertimeData | None = None


class ProjectRunaiFields(_Shared):
    """A project's Run:ai fields beyond its name, department and description (``ProjectCreationRequest``)."""

    requestedNamespace: _Text | None = None
    enforceRunaiScheduler: StrictBool | None = None


#: The fields stored in the ``runai`` column and written beside a unit's name in ``org.yaml``.
DEPARTMENT_RUNAI_FIELDS: tuple[str, ...] = tuple(DepartmentRunaiFields.model_fields)
PROJECT_RUNAI_FIELDS: tuple[str, ...] = tuple(ProjectRunaiFields.model_fields)
