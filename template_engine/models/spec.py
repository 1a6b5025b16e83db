"""Pydantic models of the Run:ai distributed training spec: worker spec, master spec, asset fragments.

``WorkerSpec`` is the full worker spec (``spec``, ``combinedSpec``, a workload's ``spec``); ``MasterSpec``
is the same without :data:`WORKER_ONLY_FIELDS` (``master.spec``, ``combinedMasterSpec``, a workload's
``masterSpec``).  Both extend :class:`CommonSpec`, which extends :class:`EnvironmentFields`, the fields an
environment asset may set.  Field names are the API's camelCase names; every field is optional, because a
layer may give any part of a spec and mandatory fields are checked on the combined spec, not here.

Keyed lists carry :class:`~template_engine.models.markers.MergeKey` and whole-replaced values
:class:`~template_engine.models.markers.ReplaceWhole` in their ``Annotated`` metadata; the merge plan reads
them from ``model_fields``.  The list-item models and enumerations live in
:mod:`template_engine.models.spec_items` and are re-exported here.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from template_engine.models.markers import MergeKey, ReplaceWhole
from template_engine.models.spec_items import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    AccessModes,
    AddedAttrValue,
    Annotation,
    AuthorizationType,
    Capability,
    ClaimInfo,
    CleanPodPolicy,
    ConfigMapVolumeItem,
    DataVolumeItem,
    DistributedFramework,
    EmptyDirVolumeItem,
    EnvironmentVariable,
    EnvironmentVariableConfigMap,
    EnvironmentVariablePodFieldRef,
    EnvironmentVariableSecret,
    EnvironmentVariableUserCredential,
    ExposedUrl,
    ExtendedResource,
    GitAuthenticationMethod,
    GitItem,
    GitSecretRef,
    GpuRequestType,
    HostPathItem,
    ImagePullPolicy,
    ImagePullSecret,
    Int32,
    Int64,
    Label,
    MountPropagation,
    MpiLauncherCreationPolicy,
    NfsItem,
    NodeSelectorOperator,
    PodAffinityType,
    Port,
    Preemptibility,
    ProbeScheme,
    PvcItem,
    RelatedUrl,
    RestartPolicy,
    S3Item,
    SeccompProfileType,
    SecretVolumeItem,
    ServiceType,
    SpecModel,
    Toleration,
    TolerationEffect,
    TolerationOperator,
    UidGidSource,
    VolumeMode,
)

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "WORKER_ONLY_FIELDS",
    "AccessModes",
    "AddedAttrValue",
    "Annotation",
    "AuthorizationType",
    "Capability",
    "ClaimInfo",
    "CleanPodPolicy",
    "CommonSpec",
    "Compute",
    "ComputeAssetSpec",
    "ConfigMapVolumeItem",
    "DataVolumeItem",
    "DatasourceAssetSpec",
    "DistributedFramework",
    "EmptyDirVolumeItem",
    "EnvironmentAssetSpec",
    "EnvironmentFields",
    "EnvironmentVariable",
    "EnvironmentVariableConfigMap",
    "EnvironmentVariablePodFieldRef",
    "EnvironmentVariableSecret",
    "EnvironmentVariableUserCredential",
    "ExposedUrl",
    "ExtendedResource",
    "GitAuthenticationMethod",
    "GitItem",
    "GitSecretRef",
    "GpuRequestType",
    "HostPathItem",
    "HttpGetAction",
    "ImagePullPolicy",
    "ImagePullSecret",
    "Int32",
    "Int64",
    "Label",
    "MasterSpec",
    "MatchExpression",
    "MountPropagation",
    "MpiLauncherCreationPolicy",
    "NfsItem",
    "NodeAffinityRequired",
    "NodeSelectorOperator",
    "NodeSelectorTerm",
    "PodAffinity",
    "PodAffinityType",
    "Port",
    "Preemptibility",
    "Probe",
    "ProbeHandler",
    "ProbeScheme",
    "Probes",
    "PvcItem",
    "RelatedUrl",
    "RestartPolicy",
    "S3Item",
    "SeccompProfileType",
    "SecretVolumeItem",
    "Security",
    "ServiceType",
    "SpecModel",
    "Storage",
    "Toleration",
    "TolerationEffect",
    "TolerationOperator",
    "UidGidSource",
    "VolumeMode",
    "WorkerSpec",
]

#: Fields that only the worker spec has; a master spec that sets one is an error (DESIGN.md).
WORKER_ONLY_FIELDS: tuple[str, ...] = (
    "numWorkers",
    "distributedFramework",
    "minReplicas",
    "maxReplicas",
    "slotsPerWorker",
    "sshAuthMountPath",
    "mpiLauncherCreationPolicy",
    "cleanPodPolicy",
    "segmentSize",
    "imagePullSecrets",
)


# --- nested objects ----------------------------------------------------------------------------------------


class Compute(SpecModel):
    """``compute``: CPU, memory, GPU and extended resources.

    Memory values (``cpuMemoryRequest``, ``gpuMemoryLimit``...) are Kubernetes quantity strings, checked
    later.
    ``migProfile`` appears only in workload submissions.
    """

    cpuCoreRequest: float | None = Field(default=None, ge=0)
    cpuCoreLimit: float | None = Field(default=None, ge=0)
    cpuMemoryRequest: str | None = None
    cpuMemoryLimit: str | None = None
    gpuDevicesRequest: Int32 | None = Field(default=None, ge=0)
    gpuRequestType: GpuRequestType | None = None
    gpuPortionRequest: float | None = Field(default=None, ge=0, le=1)
    gpuPortionLimit: float | None = Field(default=None, ge=0, le=1)
    gpuMemoryRequest: str | None = None
    gpuMemoryLimit: str | None = None
    migProfile: str | None = None
    largeShmRequest: bool | None = None
    extendedResources: Annotated[list[ExtendedResource] | None, MergeKey("resource")] = None


class Storage(SpecModel):
    """``storage``: the data sources, one keyed list per kind."""

    pvc: Annotated[list[PvcItem] | None, MergeKey("name")] = None
    nfs: Annotated[list[NfsItem] | None, MergeKey("name")] = None
    s3: Annotated[list[S3Item] | None, MergeKey("name")] = None
    git: Annotated[list[GitItem] | None, MergeKey("name")] = None
    hostPath: Annotated[list[HostPathItem] | None, MergeKey("name")] = None
    configMapVolume: Annotated[list[ConfigMapVolumeItem] | None, MergeKey("name")] = None
    secretVolume: Annotated[list[SecretVolumeItem] | None, MergeKey("name")] = None
    emptyDirVolume: Annotated[list[EmptyDirVolumeItem] | None, MergeKey("name")] = None
    dataVolume: Annotated[list[DataVolumeItem] | None, MergeKey("id")] = None


class Security(SpecModel):
    """``security``: the container's security context; ``capabilities`` is replaced whole."""

    uidGidSource: UidGidSource | None = None
    capabilities: Annotated[list[Capability] | None, ReplaceWhole()] = None
    seccompProfileType: SeccompProfileType | None = None
    runAsNonRoot: bool | None = None
    readOnlyRootFilesystem: bool | None = None
    runAsUid: Int64 | None = None
    runAsGid: Int64 | None = None
    supplementalGroups: str | None = None
    allowPrivilegeEscalation: bool | None = None
    hostIpc: bool | None = None
    hostNetwork: bool | None = None


class HttpGetAction(SpecModel):
    """The HTTP GET request a probe sends."""

    path: str | None = None
    port: Int32 | None = Field(default=None, ge=1, le=65535)
    host: str | None = None
    scheme: ProbeScheme | None = None


class ProbeHandler(SpecModel):
    """How a probe checks the container."""

    httpGet: HttpGetAction | None = None


class Probe(SpecModel):
    """A container probe and its timing."""

    initialDelaySeconds: Int32 | None = Field(default=None, ge=0)
    periodSeconds: Int32 | None = Field(default=None, ge=1)
    timeoutSeconds: Int32 | None = Field(default=None, ge=1)
    successThreshold: Int32 | None = Field(default=None, ge=1)
    failureThreshold: Int32 | None = Field(default=None, ge=1)
    handler: ProbeHandler | None = None


class Probes(SpecModel):
    """``probes``: the container's health probes."""

    readiness: Probe | None = None


class PodAffinity(SpecModel):
    """``podAffinity``: schedule the pods near each other by a topology key."""

    type: PodAffinityType | None = None
    key: str | None = None


class MatchExpression(SpecModel):
    """A node selector requirement; ``values`` is replaced whole.

    ``key`` and ``operator`` are required, as in Run:ai's ``MatchExpression`` (``nodeAffinityRequired`` is
    replaced whole, so no layer ever gives half an expression).
    """

    key: str
    operator: NodeSelectorOperator
    values: Annotated[list[str] | None, ReplaceWhole()] = None


class NodeSelectorTerm(SpecModel):
    """A node selector term: all of its expressions must match."""

    matchExpressions: list[MatchExpression] | None = None


class NodeAffinityRequired(SpecModel):
    """``nodeAffinityRequired``: the node must match one of the terms (the whole object is replaced)."""

    nodeSelectorTerms: list[NodeSelectorTerm] | None = None


# --- specs -------------------------------------------------------------------------------------------------


class EnvironmentFields(SpecModel):
    """The fields an environment asset may set; the base of every spec."""

    image: str | None = None
    imagePullPolicy: ImagePullPolicy | None = None
    workingDir: str | None = None
    createHomeDir: bool | None = None
    command: str | None = None
    args: str | None = None
    environmentVariables: Annotated[list[EnvironmentVariable] | None, MergeKey("name")] = None
    ports: Annotated[list[Port] | None, MergeKey("name", fallback="container")] = None
    exposedUrls: Annotated[list[ExposedUrl] | None, MergeKey("name", fallback="container")] = None
    relatedUrls: Annotated[list[RelatedUrl] | None, MergeKey("name", fallback="url")] = None
    probes: Probes | None = None
    stdin: bool | None = None
    tty: bool | None = None
    security: Security | None = None


class CommonSpec(EnvironmentFields):
    """The fields shared by the worker and the master spec."""

    annotations: Annotated[list[Annotation] | None, MergeKey("name")] = None
    labels: Annotated[list[Label] | None, MergeKey("name")] = None
    tolerations: Annotated[list[Toleration] | None, MergeKey("name")] = None
    compute: Compute | None = None
    storage: Storage | None = None
    nodeType: str | None = None
    nodePools: Annotated[list[str] | None, ReplaceWhole()] = None
    nodeAffinityRequired: Annotated[NodeAffinityRequired | None, ReplaceWhole()] = None
    podAffinity: PodAffinity | None = None
    category: str | None = None
    priorityClass: str | None = None
    preemptibility: Preemptibility | None = None
    restartPolicy: RestartPolicy | None = None
    terminateAfterPreemption: bool | None = None
    terminationGracePeriodSeconds: Int64 | None = Field(default=None, ge=0)
    autoDeletionTimeAfterCompletionSeconds: Int64 | None = None
    backoffLimit: Int64 | None = None


class MasterSpec(CommonSpec):
    """The master's spec: ``master.spec``, ``combinedMasterSpec`` and a workload's ``masterSpec``."""


class WorkerSpec(CommonSpec):
    """The workers' spec: ``spec``, ``combinedSpec`` and a workload's ``spec``.

    It adds :data:`WORKER_ONLY_FIELDS` to the common fields.  ``slotsPerWorker``, ``sshAuthMountPath``
    and ``mpiLauncherCreationPolicy`` mean something only for MPI; ``minReplicas``/``maxReplicas`` only
    for PyTorch.
    """

    numWorkers: Int32 | None = Field(default=None, ge=1)
    distributedFramework: DistributedFramework | None = None
    minReplicas: Int32 | None = None
    maxReplicas: Int32 | None = None
    slotsPerWorker: Int32 | None = Field(default=None, ge=1)
    sshAuthMountPath: str | None = None
    mpiLauncherCreationPolicy: MpiLauncherCreationPolicy | None = None
    cleanPodPolicy: CleanPodPolicy | None = None
    segmentSize: Int32 | None = None
    imagePullSecrets: Annotated[list[ImagePullSecret] | None, MergeKey("name")] = None


# --- asset fragments ---------------------------------------------------------------------------------------


class EnvironmentAssetSpec(EnvironmentFields):
    """The ``spec`` of an environment asset: only :class:`EnvironmentFields`."""


class ComputeAssetSpec(SpecModel):
    """The ``spec`` of a compute asset: only ``compute``."""

    compute: Compute | None = None


class DatasourceAssetSpec(SpecModel):
    """The ``spec`` of a data source asset: only ``storage`` (one item of one kind, checked by the loader)."""

    storage: Storage | None = None
