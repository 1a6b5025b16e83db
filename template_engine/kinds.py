"""The workload kinds as data: what differs between a distributed training, a training, a workspace, an
inference and a distributed inference, in one table (issue 32).

Everything that composes, checks, stores, serves or shows a template iterates over :data:`KINDS` and reads
what differs from a kind's :class:`WorkloadKind`: its template document and spec models, its replica roles,
their merge plans, the fields it lacks, its policy file and policy vocabulary section, its Run:ai names
and paths.  No other module names a kind but through this table (``docs/architecture.md``, "The kinds").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel

from template_engine.errors import Replica
from template_engine.merge.plan import PlanNode, build_plan, models_in
from template_engine.models.documents import (
    InferenceTemplateDocument,
    KindName,
    TemplateDocument,
    TrainingTemplateDocument,
    WorkspaceTemplateDocument,
)
from template_engine.models.kind_specs import InferenceSpec, LeaderWorkerSpec, TrainingSpec, WorkspaceSpec
from template_engine.models.spec import MasterSpec, WorkerSpec

__all__ = [
    "DISTRIBUTED",
    "DISTRIBUTED_INFERENCE",
    "INFERENCE",
    "KINDS",
    "KIND_BY_NAME",
    "TEMPLATE_KINDS",
    "TRAINING",
    "WORKSPACE",
    "WorkloadKind",
    "kind_named",
    "kind_note",
    "kinds_with_field",
]


@dataclass(frozen=True, eq=False)
class WorkloadKind:
    """One workload kind: everything about it that is not the same for every kind."""

    #: Its name in files (``kind: training``) and messages.
    name: KindName
    #: Run:ai's ``workloadType`` (``Training``...), as template metas, ``check -o json`` and lists say it.
    workload_type: str
    #: What a person calls one (``training``, ``distributed training``), for messages.
    noun: str
    #: Its replica roles, the first the one a template's ``spec`` (and ``combinedSpec``) holds.
    roles: tuple[Replica, ...]
    #: The spec model of each role.
    spec_models: Mapping[Replica, type[BaseModel]]
    #: Its template document model (``None``: Run:ai has no templates of the kind, only policies).
    template_model: type[BaseModel] | None
    #: The segment of its template routes (``/api/v1/workload-templates/{segment}``), if any.
    template_segment: str | None
    #: Whether a template of the kind may be replaced (PUT) or patched (PATCH): Run:ai's inference may not.
    template_updates: bool
    #: The segment of its policy routes (``/api/v2/policy/{segment}``).
    policy_segment: str
    #: The file of a scope's folder that holds its policy.
    policy_file: str
    #: The segment of its workload routes (``/api/v1/workloads/{segment}``), if any.
    workload_segment: str | None
    #: Whether its policy is written per role (``rules.worker``...) rather than flat (``rules``).
    roled_policy: bool
    #: The name of its policy in Run:ai's ``GET /api/v2/policy`` (``PolicyType``).
    policy_type: str
    #: Run:ai's ``AssetWorkloadSupportedTypes`` field that says an asset may be used by it.
    asset_support: str
    #: Whether Run:ai suspends and resumes its workloads (``/{segment}/{workloadId}/suspend``, ``/resume``).
    workload_suspends: bool = False
    #: The fields each role must have to be submitted (``runnable``), in the order they are reported.
    mandatory: Mapping[Replica, tuple[tuple[str, ...], ...]] = field(default_factory=dict)
    _plans: dict[Replica, PlanNode] = field(default_factory=dict, repr=False)
    _fields: dict[Replica, frozenset[str]] = field(default_factory=dict, repr=False)

    @property
    def primary(self) -> Replica:
        """The role a template's ``spec`` holds."""
        return self.roles[0]

    @property
    def spec_model(self) -> type[BaseModel]:
        """The spec model of :attr:`primary`."""
        return self.spec_models[self.primary]

    def plan(self, role: Replica | None = None) -> PlanNode:
        """The merge plan of ``role`` (:attr:`primary` when none), read once from its model's markers."""
        role = role or self.primary
        found = self._plans.get(role)
        if found is None:
            found = self._plans[role] = build_plan(self.spec_models[role])
        return found

    def fields(self, role: Replica | None = None) -> frozenset[str]:
        """The top-level fields of ``role``'s spec, read once (every layer of a composition asks)."""
        role = role or self.primary
        found = self._fields.get(role)
        if found is None:
            found = self._fields[role] = frozenset(self.spec_models[role].model_fields)
        return found

    @property
    def a_noun(self) -> str:
        """The noun with its article: ``a training``, ``an inference``."""
        return ("an " if self.noun[0] in "aeiou" else "a ") + self.noun

    @cached_property
    def is_distributed(self) -> bool:
        """Whether the kind has a master (``masterSpecSameAsWorker``, ``combinedMasterSpec``)."""
        return "master" in self.roles

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        """A copy (deep, pickled) of a kind is the table's own kind: kinds compare by identity."""
        return kind_named, (self.name,)


DISTRIBUTED = WorkloadKind(
    name="distributed",
    workload_type="Distributed",
    noun="distributed training",
    roles=("worker", "master"),
    spec_models={"worker": WorkerSpec, "master": MasterSpec},
    template_model=TemplateDocument,
    template_segment="distributed",
    template_updates=True,
    policy_segment="distributed",
    policy_file="policy.yaml",
    workload_segment="distributed",
    workload_suspends=True,
    roled_policy=True,
    policy_type="Distributed",
    asset_support="distributed",
    mandatory={"worker": (("image",), ("distributedFramework",)), "master": (("image",),)},
)
TRAINING = WorkloadKind(
    name="training",
    workload_type="Training",
    noun="training",
    roles=("worker",),
    spec_models={"worker": TrainingSpec},
    template_model=TrainingTemplateDocument,
    template_segment="trainings",
    template_updates=True,
    policy_segment="trainings",
    policy_file="training-policy.yaml",
    workload_segment="trainings",
    workload_suspends=True,
    roled_policy=False,
    policy_type="Training",
    asset_support="training",
    mandatory={"worker": (("image",),)},
)
WORKSPACE = WorkloadKind(
    name="workspace",
    workload_type="Workspace",
    noun="workspace",
    roles=("worker",),
    spec_models={"worker": WorkspaceSpec},
    template_model=WorkspaceTemplateDocument,
    template_segment="workspaces",
    template_updates=True,
    policy_segment="workspaces",
    policy_file="workspace-policy.yaml",
    workload_segment="workspaces",
    workload_suspends=True,
    roled_policy=False,
    policy_type="Workspace",
    asset_support="workspace",
    mandatory={"worker": (("image",),)},
)
INFERENCE = WorkloadKind(
    name="inference",
    workload_type="Inference",
    noun="inference",
    roles=("worker",),
    spec_models={"worker": InferenceSpec},
    template_model=InferenceTemplateDocument,
    template_segment="inferences",
    template_updates=False,
    policy_segment="inferences",
    policy_file="inference-policy.yaml",
    workload_segment="inferences",
    roled_policy=False,
    policy_type="Inference",
    asset_support="inference",
    mandatory={"worker": (("image",), ("servingPort", "container"))},
)
DISTRIBUTED_INFERENCE = WorkloadKind(
    name="distributed-inference",
    workload_type="DistributedInference",
    noun="distributed inference",
    roles=("leader", "worker"),
    spec_models={"leader": LeaderWorkerSpec, "worker": LeaderWorkerSpec},
    template_model=None,
    template_segment=None,
    template_updates=False,
    policy_segment="distributed-inferences",
    policy_file="distributed-inference-policy.yaml",
    workload_segment=None,
    roled_policy=True,
    policy_type="DistributedInference",
    asset_support="inference",
    mandatory={"leader": (("image",),), "worker": (("image",),)},
)

#: Every kind, distributed first (the order of lists, tables and reports).
KINDS: tuple[WorkloadKind, ...] = (DISTRIBUTED, TRAINING, WORKSPACE, INFERENCE, DISTRIBUTED_INFERENCE)
#: The kinds Run:ai has templates of.
TEMPLATE_KINDS: tuple[WorkloadKind, ...] = tuple(kind for kind in KINDS if kind.template_model is not None)
KIND_BY_NAME: Mapping[str, WorkloadKind] = {kind.name: kind for kind in KINDS}


def kind_named(name: str | None) -> WorkloadKind:
    """The kind of a name (``None``: distributed, a template file that says no ``kind``)."""
    return DISTRIBUTED if name is None else KIND_BY_NAME[name]


def _model_has(model: type[BaseModel], field_path: tuple[str, ...]) -> bool:
    current: type[BaseModel] | None = model
    for name in field_path:
        if current is None or name not in current.model_fields:
            return False
        inner = models_in(current.model_fields[name].annotation)
        current = inner[0] if inner else None
    return True


def kinds_with_field(field_path: tuple[str, ...]) -> tuple[WorkloadKind, ...]:
    """The kinds a spec of one of whose roles has the field at ``field_path``."""
    return tuple(k for k in KINDS if any(_model_has(m, field_path) for m in k.spec_models.values()))


def kind_note(
    kind: WorkloadKind,
    field_path: tuple[str, ...],
    having: Callable[[tuple[str, ...]], tuple[WorkloadKind, ...]] = kinds_with_field,
) -> str:
    """``a training has no such field (a distributed training has it)``: what a field unknown in ``kind`` is,
    and which other kinds have it (``having``: the kinds with a field path, by spec models or by a policy's
    rule vocabulary)."""
    others = [k.a_noun for k in having(field_path) if k.name != kind.name]
    note = f"{kind.a_noun} has no such field"
    if not others:
        return note
    listed = others[0] if len(others) == 1 else ", ".join(others[:-1]) + " and " + others[-1]
    return f"{note} ({listed} {'has' if len(others) == 1 else 'have'} it)"
