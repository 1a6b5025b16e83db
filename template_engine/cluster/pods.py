"""The pod of a Kubernetes object, built from a combined spec field by field, with the source of each value.

One pod template (:class:`_Pod`) per replica of a Kubeflow job (:mod:`~template_engine.cluster.mapping`) and
per object of the kinds of one role (:mod:`~template_engine.cluster.workloads`): containers, environment,
ports, probes, security, compute, storage, scheduling and KAI's fields are written here once for every kind.
Also here: where each value comes from (:class:`SpecSource`, :class:`SettingSource`, :class:`Derived`), the
objects with their origins (:class:`Manifests`), the object's metadata (name, namespace, labels with KAI's
queue and node pool), and what no object holds (:data:`NOT_REPRESENTABLE`).
"""

from __future__ import annotations

import hashlib
import math
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from template_engine.cluster.problems import ObjectPath, ObjectProblem
from template_engine.cluster.settings import ClusterSettings
from template_engine.errors import CompositionWarning, Replica, WarningKind
from template_engine.merge.plan import SPEC_PLAN
from template_engine.paths import Path, Segment, value_at
from template_engine.quantity import parse_quantity
from template_engine.walk import items_at

# --- where each value comes from ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SpecSource:
    """A field of ``combinedSpec`` (``worker``) or ``combinedMasterSpec`` (``master``)."""

    replica: Replica
    path: Path


@dataclass(frozen=True, slots=True)
class SettingSource:
    """A cluster setting (``cluster.yaml``) or its default."""

    key: str


@dataclass(frozen=True, slots=True)
class Derived:
    """A value the mapping itself decides (an operator's default written out, a generated name)."""

    reason: str


Source = SpecSource | SettingSource | Derived


@dataclass(frozen=True)
class Manifests:
    """The objects of one composition, in order, with the source of each value they hold.

    ``origins[i]`` maps a path inside ``objects[i]`` to the source of the value there (a leaf or a whole
    item); a path with no entry takes the source of its nearest parent that has one.
    """

    objects: tuple[dict[str, Any], ...]
    origins: tuple[Mapping[ObjectPath, Source], ...]
    warnings: tuple[CompositionWarning, ...] = ()
    problems: tuple[ObjectProblem, ...] = ()

    def source_of(self, index: int, path: ObjectPath) -> Source | None:
        table = self.origins[index]
        probe = path
        while True:
            found = table.get(probe)
            if found is not None or not probe:
                return found
            probe = probe[:-1]


# --- the frameworks -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Framework:
    kind: str
    api_version: str
    #: The key of the replica specs in the job's ``spec``.
    replicas_key: str
    #: The container the operator injects its settings into (the webhooks' default container name).
    container: str
    #: The replica a master becomes; ``None``: the operator knows only workers.
    lead: str | None
    #: Whether the operator needs the lead replica even when the template runs workers only.
    lead_required: bool
    #: The label its controller puts on every pod of the workload (a pod affinity term selects by it).
    pod_label: str = "training.kubeflow.org/job-name"
    #: Why the container has its name (the origin ``manifests --annotate`` shows); ``None``: the operator's
    #: default container.
    container_reason: str | None = None


#: The label the operators put on every pod of a job (``training.kubeflow.org/job-name``): the pod affinity
#: term selects the job's own pods by it.
JOB_NAME_LABEL = "training.kubeflow.org/job-name"
SHM_VOLUME = "dshm"
NVIDIA_GPU = "nvidia.com/gpu"

# --- what the objects cannot hold ---------------------------------------------------------------------------

#: Every field of the spec models that no object holds, and why (a test walks the models against this table
#: and the mapping; docs/cluster.md repeats it).  A path names a field of both replicas unless it is worker
#: only; ``[]`` stands for every item of a list.
NOT_REPRESENTABLE: Mapping[str, str] = {
    "createHomeDir": "Run:ai's controller creates the home folder for the user it runs as; no operator does",
    "category": "a Run:ai workload category for its dashboards; Kubernetes and KAI know no such field",
    "terminateAfterPreemption": "Run:ai's controller ends a preempted workload; KAI requeues it instead",
    "segmentSize": "Run:ai's own segmenting of distributed workers; no operator or KAI field holds it",
    "exposedUrls": "Run:ai's ingress and tool links, made by its controller; no operator makes them",
    "relatedUrls": "links shown by Run:ai's UI; nothing in the cluster reads them",
    "ports[].serviceType": "Run:ai's controller creates a Service per port; a job here gets none (a "
    "Kubeflow operator makes only its own headless service, a batch Job none), so only the container port "
    "is in the pod",
    "ports[].external": "the external port of Run:ai's Service (see serviceType)",
    "ports[].toolType": "a Run:ai UI tool link",
    "ports[].toolName": "a Run:ai UI tool link",
    "environmentVariables[].description": "documentation shown by Run:ai; a container's variable has none",
    "environmentVariables[].userCredential": "a Run:ai user credential, resolved by Run:ai's control plane",
    "security.uidGidSource": "says where Run:ai takes the uid and gid from; only custom values are written",
    "compute.gpuPortionLimit": "KAI shares a GPU by request only (gpu-fraction); it enforces no limit",
    "compute.gpuMemoryLimit": "KAI shares a GPU by request only (gpu-memory); it enforces no limit",
    "storage.pvc[].dataSharing": "Run:ai's sharing of one claim across projects",
    "storage.pvc[].claimInfo.addedAttrValues": "attributes Run:ai's controller adds to the claim it creates",
    "storage.s3": "an S3 bucket is mounted by the CSI driver Run:ai installs; the open-source stack has none",
    "storage.dataVolume": "Run:ai data volumes are shared claims managed by Run:ai's control plane",
    "imagePullSecrets[].userCredential": "a Run:ai user credential, resolved by Run:ai's control plane",
    "nodePools": "KAI reads one node pool per job (the label); the first of the list is written",
    "tolerations[].name": "Run:ai's identity of the item (its merge key); a toleration has no name",
    "storage.git[].secretRef.authenticationMethod": "git-sync is given the secret's user and password "
    "keys; an ssh-key secret needs a known-hosts setup Run:ai's controller does",
}

#: Fields that hold no value of the objects but choose how other fields are written (the model walk of
#: ``tests/cluster/test_model_walk.py`` accepts them; docs/cluster.md, "The mapping").
CHOOSERS: Mapping[str, str] = {
    "compute.gpuRequestType": "chooses which GPU request is written: gpu-fraction (portion) or gpu-memory",
    "storage.pvc[].existingPvc": "chooses a reference to an existing claim over a new PersistentVolumeClaim",
    "storage.pvc[].ephemeral": "chooses an ephemeral volume (a volumeClaimTemplate) over a claim object",
    "preemptibility": "chooses the settings' preemptibleClass or nonPreemptibleClass when no priorityClass "
    "is given (the pod's priorityClassName then comes from the settings)",
}

# --- the mapping ----------------------------------------------------------------------------------------


@dataclass
class _Out:
    """The origins of one object being built, and the warnings and problems met on the way."""

    kind: str
    origins: dict[ObjectPath, Source] = field(default_factory=dict)
    warnings: list[CompositionWarning] = field(default_factory=list)
    problems: list[ObjectProblem] = field(default_factory=list)

    def note(self, path: ObjectPath, source: Source) -> None:
        self.origins[path] = source

    def warn(self, replica: Replica, spec_path: Path, reason: str) -> None:
        self.warnings.append(
            CompositionWarning(
                WarningKind.NOT_REPRESENTABLE, replica, spec_path, f"not in the objects: {reason}"
            )
        )

    def refuse(self, path: ObjectPath, rule: str, message: str) -> None:
        self.problems.append(ObjectProblem(self.kind, path, f"mapping.{rule}", message))


@dataclass(frozen=True, slots=True)
class _Job:
    """What every replica of one job is built with."""

    framework: Framework
    name: str
    project: str | None
    settings: ClusterSettings
    out: _Out
    #: The other objects the replicas ask for (claims), with their origins.
    extra: list[tuple[dict[str, Any], dict[ObjectPath, Source]]]
    #: The workers' combined spec: its workload-level fields (imagePullSecrets) hold for every pod.
    workload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class _Replica:
    """One replica type to build: its spec, which combined spec it comes from, and how many."""

    type: str
    spec: Mapping[str, Any]
    source: Replica
    count: int
    #: Workers only, and the operator needs a lead: this lead is one of the ``numWorkers`` pods.
    one_of_workers: bool = False


def job_name(text: str) -> str:
    """``text`` made into a DNS-1035 label (a template's name stands for the workload's in a preview).

    Lowercased, every other character turned into ``-``, a leading non-letter prefixed with ``x-``; a name
    that had to change, or is longer than 40 characters (the pods' names add suffixes), ends with 6 hex
    digits of the original's SHA-1 so that two templates never share a name.
    """
    low = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    clean = low if low[:1].isalpha() else f"x-{low}".rstrip("-")
    if clean == text and len(clean) <= 40:
        return clean
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:6]
    return f"{clean[:33].rstrip('-')}-{digest}"


def volume_name(prefix: str, name: object) -> str:
    """A pod volume's name: ``<prefix>-<name>`` as a DNS-1123 label (the kind prefix keeps a pvc and an nfs
    of the same Run:ai name apart); a name that had to change ends with 6 hex digits of its SHA-1."""
    text = f"{prefix}-{name}"
    clean = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-") or prefix
    if clean == text and len(clean) <= 63:
        return clean
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()[:6]
    return f"{clean[:56].rstrip('-')}-{digest}"


def _job_metadata(
    spec: Mapping[str, Any],
    name: str,
    project: str | None,
    settings: ClusterSettings,
    out: _Out,
    name_source: Source | None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    out.note(("metadata", "name"), name_source or Derived("the workload's name"))
    if project is not None:
        meta["namespace"] = settings.namespace(project)
        out.note(("metadata", "namespace"), SettingSource("namespacePattern"))
    labels = _pairs(spec, "labels", ("metadata", "labels"), "worker", out)
    if project is not None:
        labels[settings.queueLabel] = settings.queue(project)
        key = "queues" if project in settings.queues else "defaultQueue"
        out.note(("metadata", "labels", settings.queueLabel), SettingSource(key))
    pools = spec.get("nodePools")
    if isinstance(pools, list) and pools:
        labels[settings.nodePoolLabel] = str(pools[0])
        out.note(("metadata", "labels", settings.nodePoolLabel), SpecSource("worker", ("nodePools", 0)))
        if len(pools) > 1:
            out.warn("worker", ("nodePools",), NOT_REPRESENTABLE["nodePools"])
    if labels:
        meta["labels"] = labels
    annotations = _pairs(spec, "annotations", ("metadata", "annotations"), "worker", out)
    if annotations:
        meta["annotations"] = annotations
    return meta


def _pairs(
    spec: Mapping[str, Any], field_name: str, at: ObjectPath, replica: Replica, out: _Out
) -> dict[str, Any]:
    """``labels`` or ``annotations`` (items ``{name, value}``) as a Kubernetes string map."""
    found: dict[str, Any] = {}
    origins = out.origins  # origins[...] = ...: out.note
    for path, item in _keyed_items(spec, (field_name,)):
        name = item.get("name")
        if name is None:
            continue
        value = item.get("value")
        found[str(name)] = "" if value is None else str(value)
        origins[(*at, str(name))] = SpecSource(replica, (*path, "value") if value is not None else path)
    return found


def _keyed_items(spec: Mapping[str, Any], names: tuple[str, ...]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """``(path, item)`` of each mapping item of the keyed list at ``names`` (:func:`~.walk.items_at`)."""
    return items_at(spec, names, SPEC_PLAN)


def _priority_class(spec: Mapping[str, Any], settings: ClusterSettings) -> str | None:
    """The ``priorityClassName`` a spec's pods get: its ``priorityClass``, else its ``preemptibility``'s."""
    klass = spec.get("priorityClass")
    if klass is not None:
        return str(klass)
    preemptibility = spec.get("preemptibility")
    if preemptibility is None:
        return None
    return settings.preemptibleClass if preemptibility == "preemptible" else settings.nonPreemptibleClass


class _Pod:
    """One replica's pod template, built field by field."""

    def __init__(self, job: _Job, replica: _Replica, at: ObjectPath) -> None:
        self.fw, self.spec, self.replica = job.framework, replica.spec, replica.source
        self.at, self.name, self.project, self.settings = at, job.name, job.project, job.settings
        self.out, self.extra, self.workload = job.out, job.extra, job.workload
        self.pod: dict[str, Any] = {}
        self.container: dict[str, Any] = {"name": job.framework.container}
        self.volumes: list[dict[str, Any]] = []
        self.mounts: list[dict[str, Any]] = []
        self.init: list[dict[str, Any]] = []
        self.annotations: dict[str, Any] = {}

    # paths and sources
    def src(self, *path: Segment) -> SpecSource:
        return SpecSource(self.replica, tuple(path))

    def pod_at(self, *path: str | int) -> ObjectPath:
        return (*self.at, "spec", *path)

    def c_at(self, *path: str | int) -> ObjectPath:
        return (*self.at, "spec", "containers", 0, *path)  # pod_at("containers", 0, *path)

    def warn(self, path: Path, key: str) -> None:
        self.out.warn(self.replica, path, NOT_REPRESENTABLE[key])

    def build(self) -> dict[str, Any]:
        reason = self.fw.container_reason or f"the {self.fw.kind} operator's default container"
        self.out.note(self.c_at("name"), Derived(reason))
        self.out.note(self.c_at("image"), self.src("image"))  # also where an image that is missing belongs
        self._container()
        self._environment()
        self._ports()
        self._probes()
        self._security()
        self._compute()
        self._storage()
        self._scheduling()
        self._unrepresented()
        if self.mounts:
            self.container["volumeMounts"] = self.mounts
        if self.init:
            self.pod["initContainers"] = self.init
        self.pod["containers"] = [self.container]
        if self.volumes:
            self.pod["volumes"] = self.volumes
        template: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        labels = _pairs(self.spec, "labels", (*self.at, "metadata", "labels"), self.replica, self.out)
        if labels:
            meta["labels"] = labels
        annotations = _pairs(
            self.spec, "annotations", (*self.at, "metadata", "annotations"), self.replica, self.out
        )
        annotations.update(self.annotations)
        if annotations:
            meta["annotations"] = annotations
        if meta:
            template["metadata"] = meta
        template["spec"] = dict(sorted(self.pod.items()))
        return template

    def _copy(self, target: dict[str, Any], at: ObjectPath, key: str, spec_path: Path, value: Any) -> None:
        if value is not None:
            target[key] = value
            self.out.note((*at, key), SpecSource(self.replica, spec_path))

    def _container(self) -> None:
        c, spec = self.container, self.spec
        for key in ("image", "imagePullPolicy", "workingDir", "stdin", "tty"):
            self._copy(c, self.c_at(), key, (key,), spec.get(key))
        for key in ("command", "args"):
            text = spec.get(key)
            if not isinstance(text, str):
                continue
            try:
                words = shlex.split(text)
            except ValueError as error:
                self.out.refuse(
                    self.c_at(key), "shellWords", f"{key} {text!r} cannot be split into words: {error}"
                )
                continue
            c[key] = words
            self.out.note(self.c_at(key), self.src(key))

    def _environment(self) -> None:
        env: list[dict[str, Any]] = []
        env_at, origins, replica = self.c_at("env"), self.out.origins, self.replica  # origins[...]: note()
        for path, item in _keyed_items(self.spec, ("environmentVariables",)):
            name = item.get("name")
            if name is None:
                continue
            entry: dict[str, Any] = {"name": name}
            value_path = path
            if item.get("value") is not None:
                entry["value"] = str(item["value"])
                value_path = (*path, "value")
            elif isinstance(item.get("secret"), Mapping):
                entry["valueFrom"] = {"secretKeyRef": _ref(item["secret"])}
                value_path = (*path, "secret")
            elif isinstance(item.get("configMap"), Mapping):
                entry["valueFrom"] = {"configMapKeyRef": _ref(item["configMap"])}
                value_path = (*path, "configMap")
            elif isinstance(item.get("podFieldRef"), Mapping):
                entry["valueFrom"] = {"fieldRef": {"fieldPath": item["podFieldRef"].get("path")}}
                value_path = (*path, "podFieldRef")
            elif item.get("userCredential") is not None:
                self.warn((*path, "userCredential"), "environmentVariables[].userCredential")
                continue
            if item.get("description") is not None:
                self.warn((*path, "description"), "environmentVariables[].description")
            origins[(*env_at, len(env))] = SpecSource(replica, value_path)
            origins[(*env_at, len(env), "name")] = SpecSource(replica, path)
            env.append(entry)
        if env:
            self.container["env"] = env

    def _ports(self) -> None:
        """One ``containerPort`` per container port: several items of ``ports`` may expose one (each is a
        Service in Run:ai, keyed by its name), but a container lists a port once (the CRD's list-map keys
        ``containerPort`` and ``protocol``).  The first valid name among them names it."""
        from template_engine.cluster.kube import port_name

        ports: list[dict[str, Any]] = []
        by_number: dict[Any, int] = {}
        for path, item in _keyed_items(self.spec, ("ports",)):
            number = item.get("container")
            if number is None:
                continue
            index = by_number.get(number)
            if index is None:
                index = by_number[number] = len(ports)
                ports.append({"containerPort": number, "protocol": "TCP"})
                self.out.note(self.c_at("ports", index), SpecSource(self.replica, path))
                self.out.note(self.c_at("ports", index, "containerPort"), self.src(*path, "container"))
            entry = ports[index]
            name = item.get("name")
            if isinstance(name, str) and port_name(name) is None:
                if "name" not in entry:
                    entry["name"] = name
                    self.out.note(self.c_at("ports", index, "name"), self.src(*path, "name"))
                else:
                    self.out.warn(
                        self.replica,
                        (*path, "name"),
                        f"container port {number} is named {entry['name']!r} already (several services "
                        f"may expose one container port, which has one name); {name!r} is not written",
                    )
            elif name is not None:
                self.out.warn(
                    self.replica,
                    (*path, "name"),
                    f"{name!r} is not a Kubernetes port name (at most 15 lowercase "
                    "letters, digits and '-', with a letter); the port is written without a name",
                )
            for key in ("serviceType", "external", "toolType", "toolName"):
                if item.get(key) is not None:
                    self.warn((*path, key), f"ports[].{key}")
        if ports:
            self.container["ports"] = ports

    def _probes(self) -> None:
        probe = value_at(self.spec, "probes", "readiness")
        if not isinstance(probe, Mapping):
            return
        out: dict[str, Any] = {}
        for key in (
            "initialDelaySeconds",
            "periodSeconds",
            "timeoutSeconds",
            "successThreshold",
            "failureThreshold",
        ):
            if probe.get(key) is not None:
                out[key] = probe[key]
        http = value_at(probe, "handler", "httpGet")
        if isinstance(http, Mapping):
            get = {k: http[k] for k in ("path", "port", "host", "scheme") if http.get(k) is not None}
            out["httpGet"] = get
        self.container["readinessProbe"] = out
        self.out.note(self.c_at("readinessProbe"), self.src("probes", "readiness"))

    def _security(self) -> None:
        sec = self.spec.get("security")
        if not isinstance(sec, Mapping):
            return
        ctx: dict[str, Any] = {}
        at = self.c_at("securityContext")
        source = sec.get("uidGidSource")
        if source in (None, "custom"):
            self._copy(ctx, at, "runAsUser", ("security", "runAsUid"), sec.get("runAsUid"))
            self._copy(ctx, at, "runAsGroup", ("security", "runAsGid"), sec.get("runAsGid"))
        else:
            if source == "fromIdpToken":
                self.warn(("security", "uidGidSource"), "security.uidGidSource")
            for key in ("runAsUid", "runAsGid"):
                if sec.get(key) is not None:
                    self.warn(("security", key), "security.uidGidSource")
        for key in ("runAsNonRoot", "readOnlyRootFilesystem", "allowPrivilegeEscalation"):
            self._copy(ctx, at, key, ("security", key), sec.get(key))
        caps = sec.get("capabilities")
        if isinstance(caps, list) and caps:
            ctx["capabilities"] = {"add": list(caps)}
            self.out.note((*at, "capabilities"), self.src("security", "capabilities"))
        seccomp = sec.get("seccompProfileType")
        if seccomp is not None:
            ctx["seccompProfile"] = {"type": seccomp}
            self.out.note((*at, "seccompProfile"), self.src("security", "seccompProfileType"))
        if ctx:
            self.container["securityContext"] = ctx
        self._copy(self.pod, self.pod_at(), "hostIPC", ("security", "hostIpc"), sec.get("hostIpc"))
        self._copy(
            self.pod, self.pod_at(), "hostNetwork", ("security", "hostNetwork"), sec.get("hostNetwork")
        )
        groups = sec.get("supplementalGroups")
        if isinstance(groups, str) and groups.strip():
            words = [w.strip() for w in groups.split(",")]
            if all(w.isdigit() for w in words):
                self.pod["securityContext"] = {"supplementalGroups": [int(w) for w in words]}
                self.out.note(self.pod_at("securityContext"), self.src("security", "supplementalGroups"))
            else:
                self.out.refuse(
                    self.pod_at("securityContext", "supplementalGroups"),
                    "supplementalGroups",
                    f"supplementalGroups {groups!r}: expected group ids separated by commas (1000,2000)",
                )

    def _too_big(
        self, res_at: ObjectPath, which: str, resource: str, key: str, value: Any, unit: str
    ) -> None:
        """A CPU or memory amount Kubernetes cannot hold (beyond an int64 of millicores or bytes, or not
        finite): a problem of the object, never an exception."""
        self.out.note((*res_at, which, resource), self.src("compute", key))
        self.out.refuse(
            (*res_at, which, resource),
            "quantity",
            f"compute.{key} is {value}: more {unit} than a Kubernetes quantity holds "
            f"(at most {_KUBE_MAX_CORES:.4g} cores, {_KUBE_MAX:.4g} bytes)",
        )

    def _compute(self) -> None:
        compute = self.spec.get("compute")
        if not isinstance(compute, Mapping):
            return
        requests: dict[str, Any] = {}
        limits: dict[str, Any] = {}
        res_at = self.c_at("resources")

        def put(target: dict[str, Any], which: str, resource: str, value: Any, key: str) -> None:
            target[resource] = value
            self.out.note((*res_at, which, resource), self.src("compute", key))

        for key, which, target in (
            ("cpuCoreRequest", "requests", requests),
            ("cpuCoreLimit", "limits", limits),
        ):
            if isinstance(compute.get(key), int | float) and not isinstance(compute.get(key), bool):
                cores = _cpu(compute[key])
                if cores is None:
                    self._too_big(res_at, which, "cpu", key, compute[key], "cores")
                else:
                    put(target, which, "cpu", cores, key)
        for key, which, target in (
            ("cpuMemoryRequest", "requests", requests),
            ("cpuMemoryLimit", "limits", limits),
        ):
            if compute.get(key) is not None:
                if _held(compute[key]):
                    put(target, which, "memory", compute[key], key)
                else:
                    self._too_big(res_at, which, "memory", key, compute[key], "bytes")
        self._gpu(compute, limits, put)
        for path, item in _keyed_items(self.spec, ("compute", "extendedResources")):
            resource, quantity = item.get("resource"), item.get("quantity")
            if resource is not None and quantity is not None:
                limits[str(resource)] = quantity
                self.out.note((*res_at, "limits", str(resource)), self.src(*path, "quantity"))
        if compute.get("largeShmRequest") is True:
            self.volumes.append({"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}})
            self.out.note(
                self.pod_at("volumes", len(self.volumes) - 1), self.src("compute", "largeShmRequest")
            )
            self.mounts.append({"name": SHM_VOLUME, "mountPath": "/dev/shm"})
            self.out.note(
                self.c_at("volumeMounts", len(self.mounts) - 1), self.src("compute", "largeShmRequest")
            )
        resources: dict[str, Any] = {}
        if limits:
            resources["limits"] = limits
        if requests:
            resources["requests"] = requests
        if resources:
            self.container["resources"] = resources

    def _gpu(self, compute: Mapping[str, Any], limits: dict[str, Any], put: Any) -> None:
        devices = compute.get("gpuDevicesRequest")
        kind = compute.get("gpuRequestType")
        portion = compute.get("gpuPortionRequest")
        memory = compute.get("gpuMemoryRequest")
        if kind == "portion" or (kind is None and portion is not None):
            if portion is not None:
                self.annotations["gpu-fraction"] = _number_text(portion)
                self.out.note(self._ann_at("gpu-fraction"), self.src("compute", "gpuPortionRequest"))
                if isinstance(devices, int) and devices > 1:
                    self.annotations["gpu-fraction-num-devices"] = str(devices)
                    self.out.note(
                        self._ann_at("gpu-fraction-num-devices"), self.src("compute", "gpuDevicesRequest")
                    )
        elif kind == "memory" or (kind is None and memory is not None):
            mib = _mib(memory)
            if mib is not None:
                self.annotations["gpu-memory"] = str(mib)
                self.out.note(self._ann_at("gpu-memory"), self.src("compute", "gpuMemoryRequest"))
                if isinstance(devices, int) and devices > 1:
                    self.annotations["gpu-fraction-num-devices"] = str(devices)
                    self.out.note(
                        self._ann_at("gpu-fraction-num-devices"), self.src("compute", "gpuDevicesRequest")
                    )
        elif isinstance(devices, int) and devices > 0:
            put(limits, "limits", NVIDIA_GPU, devices, "gpuDevicesRequest")
        mig = compute.get("migProfile")
        if isinstance(mig, str) and mig:
            resource = f"nvidia.com/{mig if mig.startswith('mig-') else 'mig-' + mig}"
            put(limits, "limits", resource, 1, "migProfile")
        if compute.get("gpuPortionLimit") is not None:
            self.warn(("compute", "gpuPortionLimit"), "compute.gpuPortionLimit")
        if compute.get("gpuMemoryLimit") is not None:
            self.warn(("compute", "gpuMemoryLimit"), "compute.gpuMemoryLimit")

    def _ann_at(self, key: str) -> ObjectPath:
        return (*self.at, "metadata", "annotations", key)

    def _volume(self, volume: dict[str, Any], mount: dict[str, Any] | None, source: Path) -> None:
        self.volumes.append(volume)
        self.out.note(self.pod_at("volumes", len(self.volumes) - 1), SpecSource(self.replica, source))
        if mount is not None:
            self.mounts.append({k: v for k, v in mount.items() if v is not None})
            self.out.note(self.c_at("volumeMounts", len(self.mounts) - 1), SpecSource(self.replica, source))

    def _storage(self) -> None:
        for path, item in _keyed_items(self.spec, ("storage", "pvc")):
            self._pvc(path, item)
        for path, item in _keyed_items(self.spec, ("storage", "nfs")):
            name = volume_name("nfs", item.get("name"))
            nfs = {k: item.get(k) for k in ("server", "path", "readOnly") if item.get(k) is not None}
            mount = {"name": name, "mountPath": item.get("mountPath"), "readOnly": item.get("readOnly")}
            self._volume({"name": name, "nfs": nfs}, mount, path)
        for path, item in _keyed_items(self.spec, ("storage", "hostPath")):
            name = volume_name("host", item.get("name"))
            mount = {
                "name": name,
                "mountPath": item.get("mountPath"),
                "readOnly": item.get("readOnly"),
                "mountPropagation": item.get("mountPropagation"),
            }
            self._volume({"name": name, "hostPath": {"path": item.get("path")}}, mount, path)
        for path, item in _keyed_items(self.spec, ("storage", "configMapVolume")):
            name = volume_name("cm", item.get("name"))
            volume: dict[str, Any] = {"name": item.get("configMap")}
            if item.get("defaultMode") is not None:
                volume["defaultMode"] = int(str(item["defaultMode"]), 8)
            mount = {"name": name, "mountPath": item.get("mountPath"), "subPath": item.get("subPath")}
            self._volume({"name": name, "configMap": volume}, mount, path)
        for path, item in _keyed_items(self.spec, ("storage", "secretVolume")):
            name = volume_name("secret", item.get("name"))
            secret: dict[str, Any] = {"secretName": item.get("secret")}
            if item.get("defaultMode") is not None:
                secret["defaultMode"] = int(str(item["defaultMode"]), 8)
            self._volume(
                {"name": name, "secret": secret}, {"name": name, "mountPath": item.get("mountPath")}, path
            )
        for path, item in _keyed_items(self.spec, ("storage", "emptyDirVolume")):
            name = volume_name("empty", item.get("name"))
            empty = {k: item.get(k) for k in ("medium", "sizeLimit") if item.get(k) is not None}
            self._volume(
                {"name": name, "emptyDir": empty}, {"name": name, "mountPath": item.get("path")}, path
            )
        for path, item in _keyed_items(self.spec, ("storage", "git")):
            self._git(path, item)
        for path, _item in _keyed_items(self.spec, ("storage", "s3")):
            self.warn(path, "storage.s3")
        for path, _item in _keyed_items(self.spec, ("storage", "dataVolume")):
            self.warn(path, "storage.dataVolume")

    def _pvc(self, path: Path, item: Mapping[str, Any]) -> None:
        name = volume_name("pvc", item.get("name"))
        mount = {"name": name, "mountPath": item.get("path"), "readOnly": item.get("readOnly")}
        info = item.get("claimInfo") if isinstance(item.get("claimInfo"), Mapping) else None
        if item.get("dataSharing") is True:
            self.warn((*path, "dataSharing"), "storage.pvc[].dataSharing")
        if info is not None and info.get("addedAttrValues"):
            self.warn((*path, "claimInfo", "addedAttrValues"), "storage.pvc[].claimInfo.addedAttrValues")
        if item.get("ephemeral") is True and info is not None:
            template = {"spec": _claim_spec(info)}
            self._volume({"name": name, "ephemeral": {"volumeClaimTemplate": template}}, mount, path)
            return
        claim = item.get("claimName")
        if item.get("existingPvc") is True or info is None:
            ref: dict[str, Any] = {"claimName": claim if claim is not None else item.get("name")}
            if item.get("readOnly") is not None:
                ref["readOnly"] = item["readOnly"]
            self._volume({"name": name, "persistentVolumeClaim": ref}, mount, path)
            return
        claim_name = claim if isinstance(claim, str) else volume_name(self.name, item.get("name"))
        meta: dict[str, Any] = {"name": claim_name}
        if self.project is not None:
            meta["namespace"] = self.settings.namespace(self.project)
        pvc = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": meta,
            "spec": _claim_spec(info),
        }
        if any(made == pvc for made, _ in self.extra):  # the other replica's claim, the same: one object
            self._volume({"name": name, "persistentVolumeClaim": {"claimName": claim_name}}, mount, path)
            return
        origins: dict[ObjectPath, Source] = {(): SpecSource(self.replica, (*path, "claimInfo"))}
        if claim is not None:
            origins[("metadata", "name")] = SpecSource(self.replica, (*path, "claimName"))
        if self.project is not None:
            origins[("metadata", "namespace")] = SettingSource("namespacePattern")
        self.extra.append((pvc, origins))
        self._volume({"name": name, "persistentVolumeClaim": {"claimName": claim_name}}, mount, path)

    def _git(self, path: Path, item: Mapping[str, Any]) -> None:
        name = volume_name("git", item.get("name"))
        ref = item.get("branch") or item.get("revision") or "HEAD"
        root = item.get("path")
        args = [
            f"--repo={item.get('repository')}",
            f"--ref={ref}",
            f"--root={root}",
            "--link=current",
            "--one-time",
        ]
        init: dict[str, Any] = {
            "name": volume_name("clone", item.get("name"))[:63],
            "image": self.settings.gitSyncImage,
            "args": args,
            "volumeMounts": [{"name": name, "mountPath": root}],
        }
        ref_given = item.get("secretRef")
        if isinstance(ref_given, Mapping) and ref_given.get("authenticationMethod") == "ssh-key":
            self.warn(
                (*path, "secretRef", "authenticationMethod"), "storage.git[].secretRef.authenticationMethod"
            )
        secret = _git_secret(item)
        if secret is not None:
            init["env"] = secret
        self.init.append(init)
        self.out.note(self.pod_at("initContainers", len(self.init) - 1), SpecSource(self.replica, path))
        self.out.note(
            self.pod_at("initContainers", len(self.init) - 1, "image"), SettingSource("gitSyncImage")
        )
        self._volume({"name": name, "emptyDir": {}}, {"name": name, "mountPath": root}, path)
        self.out.warnings.append(
            CompositionWarning(
                WarningKind.NOT_REPRESENTABLE,
                self.replica,
                path,
                f"a git-sync init container clones it: the clone appears at {root}/current (git-sync's "
                "link), where Run:ai's controller places it at the path itself",
            )
        )

    def _scheduling(self) -> None:
        pod, spec = self.pod, self.spec
        pod["schedulerName"] = self.settings.schedulerName
        self.out.note(self.pod_at("schedulerName"), SettingSource("schedulerName"))
        tolerations: list[dict[str, Any]] = []
        for path, item in _keyed_items(spec, ("tolerations",)):
            entry: dict[str, Any] = {}
            for key, target in (("key", "key"), ("operator", "operator"), ("value", "value")):
                if item.get(key) is not None:
                    entry[target] = item[key]
            if item.get("effect") not in (None, "Any"):
                entry["effect"] = item["effect"]
            if item.get("seconds") is not None:
                entry["tolerationSeconds"] = item["seconds"]
            self.out.note(self.pod_at("tolerations", len(tolerations)), SpecSource(self.replica, path))
            tolerations.append(entry)
        if tolerations:
            pod["tolerations"] = tolerations
        node_type = spec.get("nodeType")
        if node_type is not None:
            pod["nodeSelector"] = {self.settings.nodeTypeLabel: node_type}
            self.out.note(self.pod_at("nodeSelector", self.settings.nodeTypeLabel), self.src("nodeType"))
        affinity: dict[str, Any] = {}
        required = spec.get("nodeAffinityRequired")
        if isinstance(required, Mapping) and required.get("nodeSelectorTerms"):
            terms = [_term(t) for t in required["nodeSelectorTerms"] if isinstance(t, Mapping)]
            affinity["nodeAffinity"] = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
            self.out.note(self.pod_at("affinity", "nodeAffinity"), self.src("nodeAffinityRequired"))
        pod_affinity = spec.get("podAffinity")
        if isinstance(pod_affinity, Mapping) and pod_affinity.get("type") is not None:
            term: dict[str, Any] = {"labelSelector": {"matchLabels": {self.fw.pod_label: self.name}}}
            if pod_affinity.get("key") is not None:
                term["topologyKey"] = pod_affinity["key"]
            if pod_affinity["type"] == "Required":
                affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
            else:
                weighted = {"weight": 100, "podAffinityTerm": term}
                affinity["podAffinity"] = {"preferredDuringSchedulingIgnoredDuringExecution": [weighted]}
            self.out.note(self.pod_at("affinity", "podAffinity"), self.src("podAffinity"))
        if affinity:
            pod["affinity"] = affinity
        self._priority()
        grace = spec.get("terminationGracePeriodSeconds")
        self._copy(
            pod, self.pod_at(), "terminationGracePeriodSeconds", ("terminationGracePeriodSeconds",), grace
        )
        secrets: list[dict[str, Any]] = []
        # a worker-only field of the job as a whole: every replica's pods pull with it
        for path, item in _keyed_items(self.workload, ("imagePullSecrets",)):
            if item.get("userCredential") is True:
                self.out.warn(
                    "worker",
                    (*path, "userCredential"),
                    NOT_REPRESENTABLE["imagePullSecrets[].userCredential"],
                )
                continue
            if item.get("name") is not None:
                self.out.note(self.pod_at("imagePullSecrets", len(secrets)), SpecSource("worker", path))
                secrets.append({"name": item["name"]})
        if secrets:
            pod["imagePullSecrets"] = secrets

    def _priority(self) -> None:
        """The pods' ``priorityClassName``: the spec's ``priorityClass``, else the settings' class of its
        ``preemptibility``.  A separate master that says neither runs at the workers' priority (one gang,
        one priority: KAI takes a workload's priority from any one of its pods); one that names another
        class than the workers' is a warning."""
        spec, settings, replica = self.spec, self.settings, self.replica
        own = spec.get("priorityClass") is not None or spec.get("preemptibility") is not None
        if replica == "master" and not own:
            spec, replica = self.workload, "worker"
        elif replica == "master":
            mine, theirs = _priority_class(spec, settings), _priority_class(self.workload, settings)
            if mine != theirs:
                field = "priorityClass" if spec.get("priorityClass") is not None else "preemptibility"
                self.out.warn(
                    "master",
                    (field,),
                    f"the master's priority class {mine!r} is not the workers' "
                    f"({repr(theirs) if theirs is not None else 'none'}): KAI gives a workload (one gang) "
                    "the priority of any one of its pods",
                )
        klass = spec.get("priorityClass")
        preemptibility = spec.get("preemptibility")
        if klass is None and preemptibility is not None:
            key = "preemptibleClass" if preemptibility == "preemptible" else "nonPreemptibleClass"
            self.pod["priorityClassName"] = getattr(settings, key)
            self.out.note(self.pod_at("priorityClassName"), SettingSource(key))
            return
        if klass is None:
            return
        self.pod["priorityClassName"] = klass
        self.out.note(self.pod_at("priorityClassName"), SpecSource(replica, ("priorityClass",)))
        value = settings.priority(str(klass))
        if value is None:
            known = ", ".join(c.name for c in settings.priorityClasses)
            self.out.refuse(
                self.pod_at("priorityClassName"),
                "priorityClass",
                f"the cluster has no priority class {klass!r} (its classes: {known}); "
                "the API server refuses the pods",
            )
        elif preemptibility is not None and (value >= 100) != (preemptibility == "non-preemptible"):
            self.out.warn(
                replica,
                ("preemptibility",),
                f"preemptibility {preemptibility} disagrees with priority class {klass!r} (value {value}; "
                "KAI takes 100 or more as not preemptible): KAI follows the class",
            )

    def _unrepresented(self) -> None:
        spec = self.spec
        if spec.get("createHomeDir") is True:
            self.warn(("createHomeDir",), "createHomeDir")
        for key in ("category", "segmentSize"):
            if spec.get(key) is not None:
                self.warn((key,), key)
        if spec.get("terminateAfterPreemption") is True:
            self.warn(("terminateAfterPreemption",), "terminateAfterPreemption")
        for key in ("exposedUrls", "relatedUrls"):
            if spec.get(key):
                self.warn((key,), key)


# --- small conversions --------------------------------------------------------------------------------


def _ref(ref: Mapping[str, Any]) -> dict[str, Any]:
    return {k: ref[k] for k in ("name", "key") if ref.get(k) is not None}


def _term(term: Mapping[str, Any]) -> dict[str, Any]:
    found = []
    for expression in term.get("matchExpressions") or ():
        if isinstance(expression, Mapping):
            found.append(
                {k: expression[k] for k in ("key", "operator", "values") if expression.get(k) is not None}
            )
    return {"matchExpressions": found}


def _claim_spec(info: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    given = info.get("accessModes")
    modes: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    names = {
        "readWriteOnce": "ReadWriteOnce",
        "readOnlyMany": "ReadOnlyMany",
        "readWriteMany": "ReadWriteMany",
    }
    chosen = [mode for key, mode in names.items() if modes.get(key) is True]
    spec["accessModes"] = chosen or ["ReadWriteOnce"]
    if info.get("size") is not None:
        spec["resources"] = {"requests": {"storage": info["size"]}}
    if info.get("storageClass") is not None:
        spec["storageClassName"] = info["storageClass"]
    if info.get("volumeMode") is not None:
        spec["volumeMode"] = info["volumeMode"]
    return spec


def _git_secret(item: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    ref = item.get("secretRef") if isinstance(item.get("secretRef"), Mapping) else None
    secret = ref.get("name") if ref is not None else item.get("passwordSecret")
    if secret is None:
        return None
    holder = ref if ref is not None else item
    user = holder.get("secretKeyOfUser") or "username"
    password = holder.get("secretKeyOfPassword") or "password"
    return [
        {"name": "GITSYNC_USERNAME", "valueFrom": {"secretKeyRef": {"name": secret, "key": user}}},
        {"name": "GITSYNC_PASSWORD", "valueFrom": {"secretKeyRef": {"name": secret, "key": password}}},
    ]


#: The largest amount a Kubernetes quantity's value holds: an int64 (``Quantity.Value``/``MilliValue``), so
#: at most this many bytes of memory and this many millicores of CPU.
_KUBE_MAX = 2**63 - 1
_KUBE_MAX_CORES = _KUBE_MAX / 1000


def _cpu(cores: float) -> int | str | None:
    """CPU cores as a Kubernetes quantity: whole cores as an integer, else millicores (0.5 -> ``500m``);
    ``None`` for an amount no quantity holds (not finite, or beyond an int64 of millicores)."""
    if not -_KUBE_MAX_CORES <= cores <= _KUBE_MAX_CORES:  # compares an int of any size, and is False for nan
        return None
    if float(cores).is_integer():
        return int(cores)
    return f"{round(cores * 1000)}m"


def _held(memory: Any) -> bool:
    """Whether a memory amount (a quantity's text or a number of bytes) is within what Kubernetes holds; text
    that is no quantity is the validity check's to report."""
    if isinstance(memory, bool):
        return True
    if isinstance(memory, int | float):
        return -_KUBE_MAX <= memory <= _KUBE_MAX
    amount = parse_quantity(str(memory))
    return amount is None or abs(amount) <= _KUBE_MAX


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _mib(quantity: Any) -> int | None:
    """A GPU memory quantity in whole MiB, rounded up (KAI's ``gpu-memory`` annotation is in MiB)."""
    parsed = parse_quantity(str(quantity)) if quantity is not None else None
    if parsed is None:
        return None
    return math.ceil(parsed / (1024 * 1024))


def _dedupe(warnings: list[CompositionWarning]) -> tuple[CompositionWarning, ...]:
    seen: dict[tuple[str, Path, str], CompositionWarning] = {}
    for warning in warnings:
        seen.setdefault((warning.replica, warning.field, warning.message), warning)
    return tuple(seen.values())


__all__ = [
    "CHOOSERS",
    "JOB_NAME_LABEL",
    "NOT_REPRESENTABLE",
    "Derived",
    "Framework",
    "Manifests",
    "SettingSource",
    "Source",
    "SpecSource",
    "job_name",
    "volume_name",
]
