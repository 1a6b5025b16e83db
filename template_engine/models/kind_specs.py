"""The specs of the other Run:ai workload kinds: training, workspace, inference, and distributed inference's
leader and worker.

Each is read from Run:ai's OpenAPI document (1.224.0) against the distributed spec of
:mod:`template_engine.models.spec`, field by field at the top level, where the kinds differ:

- ``TrainingTemplateSpec``: the master spec's fields, and ``completions``, ``parallelism``;
- ``WorkspaceTemplateSpec``: exactly the master spec's fields;
- ``InferenceTemplateSpec``: the master spec's fields without :data:`INFERENCE_LACKS`, and ``servingPort``,
  ``autoscaling``, ``servingConfiguration``;
- ``DistributedInferenceLeaderWorkerTemplateSpec`` (a distributed inference's ``leader`` and ``worker``):
  the inference spec's fields without :data:`LEADER_WORKER_LACKS`.

Nested models are shared with the distributed spec, so the merge plan (keyed lists, whole values) of a field
is the same in every kind that has it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model

from template_engine.models.spec import MasterSpec
from template_engine.models.spec_items import Int32, SpecModel

__all__ = [
    "INFERENCE_LACKS",
    "LEADER_WORKER_LACKS",
    "Autoscaling",
    "InferenceSpec",
    "LeaderWorkerSpec",
    "ServingConfiguration",
    "ServingPort",
    "TrainingSpec",
    "WorkspaceSpec",
]

#: The master spec's fields an inference spec does not have (Run:ai's ``InferenceTemplateSpec``).
INFERENCE_LACKS: tuple[str, ...] = (
    "autoDeletionTimeAfterCompletionSeconds",
    "backoffLimit",
    "restartPolicy",
    "stdin",
    "terminateAfterPreemption",
    "terminationGracePeriodSeconds",
    "tty",
)
#: The inference spec's fields a distributed inference's leader or worker does not have
#: (``DistributedInferenceLeaderWorkerTemplateSpec``).
LEADER_WORKER_LACKS: tuple[str, ...] = (
    "category",
    "exposedUrls",
    "nodePools",
    "ports",
    "preemptibility",
    "priorityClass",
    "relatedUrls",
    "servingPort",
    "autoscaling",
    "servingConfiguration",
)


#: The kinds' models are built when first used, not at import: a distributed-only org never pays for them
#: (``check``'s start-up, docs/performance.md).
_DEFERRED = ConfigDict(defer_build=True)


class _DeferredSpec(SpecModel):
    model_config = _DEFERRED


class TrainingSpec(MasterSpec):
    """A standard training's spec (``TrainingTemplateSpec``): one pod spec, run to completion."""

    model_config = _DEFERRED

    #: The successful pods the job must reach (Hyperparameter Optimization).
    completions: Int32 | None = Field(default=None, ge=1)
    #: The most pods running at once (standard training only).
    parallelism: Int32 | None = Field(default=None, ge=1)


class WorkspaceSpec(MasterSpec):
    """A workspace's spec (``WorkspaceTemplateSpec``): exactly the master spec's fields."""

    model_config = _DEFERRED


#: Who may send requests to an inference's serving endpoint (Run:ai's ``servingPort.authorizationType``).
ServingAuthorization = Literal[
    "public", "authenticatedUsers", "authorizedUsers", "authorizedGroups", "authorizedUsersOrGroups"
]


class ServingPort(_DeferredSpec):
    """Where an inference serves (``servingPort``); ``container`` is mandatory to run."""

    container: Int32 | None = Field(default=None, ge=1, le=65535)
    protocol: Literal["http", "grpc"] | None = None
    authorizationType: (
        Literal[
            "public", "authenticatedUsers", "authorizedUsers", "authorizedGroups", "authorizedUsersOrGroups"
        ]
        | None
    ) = None
    authorizedUsers: list[str] | None = None
    authorizedGroups: list[str] | None = None
    clusterLocalAccessOnly: bool | None = None


class Autoscaling(_DeferredSpec):
    """An inference's autoscaling (``autoscaling``), Knative Serving's settings once on the cluster."""

    minReplicas: Int32 | None = Field(default=None, ge=0)
    maxReplicas: Int32 | None = Field(default=None, ge=1)
    initialReplicas: Int32 | None = Field(default=None, ge=0)
    activationReplicas: Int32 | None = Field(default=None, ge=1)
    concurrencyHardLimit: Int32 | None = Field(default=None, ge=0)
    scaleToZeroRetentionSeconds: Int32 | None = Field(default=None, ge=0, le=3600)
    scaleDownDelaySeconds: Int32 | None = Field(default=None, ge=0, le=3600)
    initializationTimeoutSeconds: Int32 | None = Field(default=None, ge=1)
    metric: str | None = None
    metricThreshold: Int32 | None = None
    metricThresholdPercentage: float | None = Field(default=None, ge=1, le=100)


class ServingConfiguration(_DeferredSpec):
    """How an inference's requests are served (``servingConfiguration``)."""

    initializationTimeoutSeconds: Int32 | None = Field(default=None, ge=1)
    requestTimeoutSeconds: Int32 | None = Field(default=None, ge=1)


def _without(base: type[SpecModel], name: str, doc: str, lacks: tuple[str, ...], **added: Any) -> Any:
    """A spec model of ``base``'s fields but ``lacks``, and ``added`` (``name: (annotation, FieldInfo)``)."""
    fields: dict[str, Any] = {
        field: (info.rebuild_annotation(), info)
        for field, info in base.model_fields.items()
        if field not in lacks
    }
    fields.update(added)
    model = create_model(name, __base__=_DeferredSpec, __doc__=doc, __module__=__name__, **fields)
    return model


#: An inference's spec (``InferenceTemplateSpec``).
InferenceSpec: type[SpecModel] = _without(
    MasterSpec,
    "InferenceSpec",
    "An inference's spec (``InferenceTemplateSpec``): served, autoscaled, never run to completion.",
    INFERENCE_LACKS,
    servingPort=(ServingPort | None, Field(default=None)),
    autoscaling=(Autoscaling | None, Field(default=None)),
    servingConfiguration=(ServingConfiguration | None, Field(default=None)),
)

#: A distributed inference's leader or worker (``DistributedInferenceLeaderWorkerTemplateSpec``).
LeaderWorkerSpec: type[SpecModel] = _without(
    InferenceSpec,
    "LeaderWorkerSpec",
    "A distributed inference's leader or worker spec (``DistributedInferenceLeaderWorkerTemplateSpec``).",
    LEADER_WORKER_LACKS,
)
