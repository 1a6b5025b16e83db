"""Workloads of every kind in Run:ai's shapes: the creation request and the answer of each kind that has
workload routes (:attr:`~template_engine.kinds.WorkloadKind.workload_segment`), read from the kind table.

Run:ai's ``<Kind>CreationRequest`` is ``WorkloadCreationMeta`` (``name``, ``useGivenNameAsPrefix``,
``projectId``, ``clusterId``), ``SubmitWithTemplateId`` (``templateId``) and the kind's ``spec``
(``TrainingSpecSpec``...: the kind's template spec and ``imagePullSecrets``, which a workload's spec has and
a template's does not); a distributed one adds ``masterSpecSameAsWorker`` and ``masterSpec``.  Its answer
(``Training1``, ``Workspace1``, ``Inference1``; ``DistributedWorkload``) is ``WorkloadMeta1`` and the same
specs.  The distributed models are :mod:`..schemas`' ``WorkloadCreate`` and ``WorkloadOut``, as they were
before the other kinds; the others are made here from them, one per kind, so a field of the meta is
declared once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any

from pydantic import BaseModel, create_model

from template_engine.kinds import KINDS, WorkloadKind
from template_engine.merge.plan import PlanNode, build_plan
from template_engine.models.markers import MergeKey
from template_engine.models.spec import ImagePullSecret
from template_engine.service.composer import timestamp
from template_engine.service.schemas import WorkloadCreate, WorkloadOut
from template_engine.service.storage.repository import WorkloadRow

__all__ = ["WORKLOAD_KINDS", "WorkloadShapes", "shapes_of", "workload_body"]

#: The fields of a creation request every kind has (``WorkloadCreationMeta``, ``SubmitWithTemplateId``).
_CREATION_META = ("name", "useGivenNameAsPrefix", "projectId", "clusterId", "templateId")
#: The fields of an answer every kind has (``WorkloadMeta1``).
_ANSWER_META = tuple(
    name for name in WorkloadOut.model_fields if name not in ("spec", "masterSpecSameAsWorker", "masterSpec")
)


@dataclass(frozen=True, eq=False)
class WorkloadShapes:
    """The models of one kind's workload routes."""

    kind: WorkloadKind
    #: The spec of a workload of the kind (Run:ai's ``<Kind>SpecSpec``).
    spec: type[BaseModel]
    #: The creation request (``<Kind>CreationRequest``).
    create: type[BaseModel]
    #: The answer of a create and a read (``<Kind>1``, ``DistributedWorkload``).
    out: type[BaseModel]

    @cached_property
    def plan(self) -> PlanNode:
        """The merge plan of :attr:`spec` (keyed lists), which a submission's keyed lists are checked by."""
        return build_plan(self.spec)


def _workload_spec(kind: WorkloadKind) -> type[BaseModel]:
    """The kind's spec with ``imagePullSecrets``, as Run:ai's ``<Kind>SpecSpec`` has them (the distributed
    worker spec has them already)."""
    if "imagePullSecrets" in kind.spec_model.model_fields:
        return kind.spec_model
    pulls: Any = (Annotated[list[ImagePullSecret] | None, MergeKey("name")], None)
    model: type[BaseModel] = create_model(
        f"{kind.workload_type}WorkloadSpec",
        __base__=kind.spec_model,
        __doc__=f"A {kind.noun} workload's spec: the {kind.noun} spec and its image pull secrets.",
        imagePullSecrets=pulls,
    )
    return model


def _fields(model: type[BaseModel], names: tuple[str, ...]) -> dict[str, Any]:
    return {name: (model.model_fields[name].annotation, model.model_fields[name]) for name in names}


def _shapes(kind: WorkloadKind) -> WorkloadShapes:
    if kind.is_distributed:
        return WorkloadShapes(kind, kind.spec_model, WorkloadCreate, WorkloadOut)  # WorkerSpec, as before
    spec = _workload_spec(kind)
    optional: Any = (spec | None, None)
    name = kind.workload_type
    create: type[BaseModel] = create_model(
        f"{name}WorkloadCreate",
        __base__=None,
        __config__=WorkloadCreate.model_config,
        __doc__=f"Run:ai's {name}CreationRequest: a {kind.noun} to submit.",
        **_fields(WorkloadCreate, _CREATION_META),
        spec=optional,
    )
    out: type[BaseModel] = create_model(
        f"{name}WorkloadOut",
        __doc__=f"Run:ai's {name}1: a {kind.noun} as submitted, with its effective spec.",
        **_fields(WorkloadOut, _ANSWER_META),
        spec=(spec, ...),
    )
    return WorkloadShapes(kind, spec, create, out)


#: The kinds that have workload routes, with their models, in the table's order.
WORKLOAD_KINDS: tuple[WorkloadShapes, ...] = tuple(
    _shapes(k) for k in KINDS if k.workload_segment is not None
)
_BY_NAME = {shapes.kind.name: shapes for shapes in WORKLOAD_KINDS}


def shapes_of(kind: WorkloadKind) -> WorkloadShapes:
    """The models of ``kind``'s workload routes."""
    return _BY_NAME[kind.name]


def workload_body(row: WorkloadRow, kind: WorkloadKind) -> dict[str, Any]:
    """Run:ai's answer of a stored workload of ``kind``: ``WorkloadMeta1`` and its specs (a distributed
    workload's ``masterSpecSameAsWorker`` and ``masterSpec``, ``null`` when the master is the worker)."""
    body: dict[str, Any] = {
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
    }
    if kind.is_distributed:
        body |= {"masterSpecSameAsWorker": row.master_same_as_worker, "masterSpec": row.master_spec}
    return body
