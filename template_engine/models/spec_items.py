"""Enumerations, the shared model base and the list-item models of the distributed training spec.

Field names are the Run:ai API's camelCase names.  Every field is optional: a layer document may give a
partial item (an exclusion gives only its key and ``exclude: true``), and mandatory attributes are checked on
the combined spec by the runnable check, not here.  Models are strict (``"2"`` is not an integer) and forbid
unknown fields.  Free strings carry no patterns so that they may hold Jinja2 expressions
(``/home/{{ user }}``); quantity strings (``20M``, ``1Gi``) are checked later as well.

Keyed lists and the whole-replaced values are annotated with the markers of
:mod:`template_engine.models.markers`, which the merge plan reads.  The spec models themselves are in
:mod:`template_engine.models.spec`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from template_engine.models.markers import MergeKey, ReplaceWhole

# --- integers within Run:ai's bounds -----------------------------------------------------------------------

#: Run:ai's ``format: int32`` and ``format: int64`` (runai-openapi-1.224.0.json).  An integer Run:ai gives no
#: format (``numWorkers``, ``minReplicas``, ``maxReplicas``, ``slotsPerWorker``) is an int32: the Kubernetes
#: field it becomes is one (docs/decisions.md).  A field's own minimum or maximum (``Field(ge=1)``) narrows
#: these further.  The model is every door's schema: a template file, ``db import``, the CLI and the API.
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
Int32 = Annotated[int, Field(ge=INT32_MIN, le=INT32_MAX)]
Int64 = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]

# --- enumerations (reference/runai-facts.md, section 6) -------------------------------------------------

ImagePullPolicy = Literal["Always", "Never", "IfNotPresent"]
DistributedFramework = Literal["MPI", "PyTorch", "TF", "XGBoost", "JAX"]
GpuRequestType = Literal["portion", "memory"]
ServiceType = Literal["LoadBalancer", "NodePort", "ClusterIP"]
TolerationOperator = Literal["Equal", "Exists"]
TolerationEffect = Literal["NoSchedule", "NoExecute", "PreferNoSchedule", "Any"]
Preemptibility = Literal["preemptible", "non-preemptible"]
RestartPolicy = Literal["Always", "Never", "OnFailure"]
CleanPodPolicy = Literal["None", "All", "Running"]
MpiLauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
UidGidSource = Literal["fromTheImage", "fromIdpToken", "custom"]
SeccompProfileType = Literal["RuntimeDefault", "Unconfined", "Localhost"]
AuthorizationType = Literal["authenticatedUsers", "authorizedUsers", "authorizedGroups"]
MountPropagation = Literal["None", "HostToContainer"]
GitAuthenticationMethod = Literal["password", "ssh-key"]
VolumeMode = Literal["Filesystem", "Block"]
PodAffinityType = Literal["Required", "Preferred"]
NodeSelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]
ProbeScheme = Literal["HTTP", "HTTPS"]
Capability = Literal[
    "AUDIT_CONTROL",
    "AUDIT_READ",
    "AUDIT_WRITE",
    "BLOCK_SUSPEND",
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "IPC_LOCK",
    "IPC_OWNER",
    "KILL",
    "LEASE",
    "LINUX_IMMUTABLE",
    "MAC_ADMIN",
    "MAC_OVERRIDE",
    "MKNOD",
    "NET_ADMIN",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_RAW",
    "SETGID",
    "SETFCAP",
    "SETPCAP",
    "SETUID",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_CHROOT",
    "SYS_MODULE",
    "SYS_NICE",
    "SYS_PACCT",
    "SYS_PTRACE",
    "SYS_RAWIO",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "SYSLOG",
    "WAKE_ALARM",
]

#: ``defaultMode`` of config-map and secret volumes: a 4-character octal string such as ``0644``.
DEFAULT_MODE_PATTERN = r"^0[0-7]{3}$"


class SpecModel(BaseModel):
    """Base of every spec model: immutable, strict, and unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# --- environment variables, annotations, labels -----------------------------------------------------------


class EnvironmentVariableSecret(SpecModel):
    """An environment variable's value taken from a key of a Kubernetes secret."""

    name: str | None = None
    key: str | None = None


class EnvironmentVariableConfigMap(SpecModel):
    """An environment variable's value taken from a key of a config map."""

    name: str | None = None
    key: str | None = None


class EnvironmentVariablePodFieldRef(SpecModel):
    """An environment variable's value taken from a field of the pod (``metadata.name``)."""

    path: str | None = None


class EnvironmentVariableUserCredential(SpecModel):
    """An environment variable's value taken from a key of a user credential."""

    name: str | None = None
    key: str | None = None


class EnvironmentVariable(SpecModel):
    """An item of ``environmentVariables`` (key: ``name``)."""

    name: str | None = None
    value: str | None = None
    secret: EnvironmentVariableSecret | None = None
    configMap: EnvironmentVariableConfigMap | None = None
    podFieldRef: EnvironmentVariablePodFieldRef | None = None
    userCredential: EnvironmentVariableUserCredential | None = None
    description: str | None = None
    exclude: bool | None = None


class Annotation(SpecModel):
    """An item of ``annotations`` (key: ``name``)."""

    name: str | None = Field(default=None, min_length=1, max_length=63)
    value: str | None = None
    exclude: bool | None = None


class Label(SpecModel):
    """An item of ``labels`` (key: ``name``)."""

    name: str | None = Field(default=None, min_length=1, max_length=63)
    value: str | None = None
    exclude: bool | None = None


# --- scheduling, ports and URLs, pull secrets --------------------------------------------------------------


class Toleration(SpecModel):
    """An item of ``tolerations`` (key: ``name``); ``seconds`` applies to ``NoExecute`` only."""

    name: str | None = None
    operator: TolerationOperator | None = None
    key: str | None = None
    value: str | None = None
    effect: TolerationEffect | None = None
    seconds: Int64 | None = Field(default=None, ge=1)
    exclude: bool | None = None


class Port(SpecModel):
    """An item of ``ports`` (key: ``name``, else ``container``)."""

    container: Int32 | None = Field(default=None, ge=1, le=65535)
    serviceType: ServiceType | None = None
    external: Int32 | None = None
    toolType: str | None = None
    toolName: str | None = None
    name: str | None = None
    exclude: bool | None = None


class ExposedUrl(SpecModel):
    """An item of ``exposedUrls`` (key: ``name``, else ``container``).

    ``authorizedUsers`` and ``authorizedGroups`` are scalar lists, replaced whole by the highest layer.
    """

    container: Int32 | None = Field(default=None, ge=1, le=65535)
    url: str | None = None
    authorizationType: AuthorizationType | None = None
    authorizedUsers: Annotated[list[str] | None, ReplaceWhole()] = None
    authorizedGroups: Annotated[list[str] | None, ReplaceWhole()] = None
    toolType: str | None = None
    toolName: str | None = None
    name: str | None = None
    exclude: bool | None = None


class RelatedUrl(SpecModel):
    """An item of ``relatedUrls`` (key: ``name``, else ``url``)."""

    url: str | None = None
    type: str | None = None
    name: str | None = None
    exclude: bool | None = None


class ImagePullSecret(SpecModel):
    """An item of ``imagePullSecrets`` (key: ``name``); a worker-only, workload-level field."""

    name: str | None = None
    userCredential: bool | None = None
    exclude: bool | None = None


class ExtendedResource(SpecModel):
    """An item of ``compute.extendedResources`` (key: ``resource``).

    ``quantity`` is a string in the API; a plain integer is accepted as well.
    """

    resource: str | None = None
    quantity: str | Int64 | None = None
    exclude: bool | None = None


# --- storage items -----------------------------------------------------------------------------------------


class AccessModes(SpecModel):
    """The access modes of a PVC created for the workload."""

    readWriteOnce: bool | None = None
    readOnlyMany: bool | None = None
    readWriteMany: bool | None = None


class AddedAttrValue(SpecModel):
    """An item of ``storage.pvc[].claimInfo.addedAttrValues`` (key: ``key``)."""

    key: str | None = None
    value: str | None = None
    exclude: bool | None = None


class ClaimInfo(SpecModel):
    """How to create the PVC when it does not exist yet."""

    size: str | None = None
    storageClass: str | None = None
    accessModes: AccessModes | None = None
    volumeMode: VolumeMode | None = None
    addedAttrValues: Annotated[list[AddedAttrValue] | None, MergeKey("key")] = None


class PvcItem(SpecModel):
    """An item of ``storage.pvc`` (key: ``name``); ``path`` is where it appears in the container."""

    name: str | None = None
    existingPvc: bool | None = None
    claimName: str | None = Field(default=None, max_length=63)
    path: str | None = None
    readOnly: bool | None = None
    ephemeral: bool | None = None
    dataSharing: bool | None = None
    claimInfo: ClaimInfo | None = None
    exclude: bool | None = None


class NfsItem(SpecModel):
    """An item of ``storage.nfs`` (key: ``name``); ``path`` is the server's, ``mountPath`` the container's."""

    name: str | None = None
    server: str | None = None
    path: str | None = None
    mountPath: str | None = None
    readOnly: bool | None = None
    exclude: bool | None = None


class S3Item(SpecModel):
    """An item of ``storage.s3`` (key: ``name``); ``path`` is where the bucket appears in the container."""

    name: str | None = None
    bucket: str | None = None
    path: str | None = None
    url: str | None = None
    accessKeySecret: str | None = None
    secretKeyOfAccessKeyId: str | None = None
    secretKeyOfSecretKey: str | None = None
    exclude: bool | None = None


class GitSecretRef(SpecModel):
    """The secret holding a git repository's credentials."""

    name: str | None = None
    authenticationMethod: GitAuthenticationMethod | None = None
    secretKeyOfUser: str | None = None
    secretKeyOfPassword: str | None = None


class GitItem(SpecModel):
    """An item of ``storage.git`` (key: ``name``); ``path`` is where the clone appears in the container."""

    name: str | None = None
    repository: str | None = None
    branch: str | None = None
    revision: str | None = None
    path: str | None = None
    passwordSecret: str | None = None
    secretKeyOfUser: str | None = None
    secretKeyOfPassword: str | None = None
    secretRef: GitSecretRef | None = None
    exclude: bool | None = None


class HostPathItem(SpecModel):
    """An item of ``storage.hostPath`` (key: ``name``); ``path`` on the host, ``mountPath`` in the pod."""

    name: str | None = None
    path: str | None = None
    mountPath: str | None = None
    readOnly: bool | None = None
    mountPropagation: MountPropagation | None = None
    exclude: bool | None = None


class ConfigMapVolumeItem(SpecModel):
    """An item of ``storage.configMapVolume`` (key: ``name``)."""

    name: str | None = None
    configMap: str | None = None
    mountPath: str | None = None
    subPath: str | None = None
    defaultMode: str | None = Field(default=None, pattern=DEFAULT_MODE_PATTERN)
    exclude: bool | None = None


class SecretVolumeItem(SpecModel):
    """An item of ``storage.secretVolume`` (key: ``name``)."""

    name: str | None = None
    secret: str | None = None
    mountPath: str | None = None
    defaultMode: str | None = Field(default=None, pattern=DEFAULT_MODE_PATTERN)
    exclude: bool | None = None


class EmptyDirVolumeItem(SpecModel):
    """An item of ``storage.emptyDirVolume`` (key: ``name``); ``path`` is where it appears in the container.

    It has no asset kind: it is only given inline.
    """

    name: str | None = None
    path: str | None = None
    medium: str | None = None
    sizeLimit: str | None = None
    exclude: bool | None = None


class DataVolumeItem(SpecModel):
    """An item of ``storage.dataVolume`` (key: ``id``, the data volume's UUID)."""

    id: str | None = None
    mountPath: str | None = None
    exclude: bool | None = None
