"""The objects of the kinds of one role: a training's ``Job``, a workspace's ``StatefulSet`` and ``Service``s,
an inference's Knative ``Service`` (issue 32; docs/cluster.md, "The other kinds").

Each pod template is built by the code that builds a Kubeflow replica's (:class:`~template_engine.cluster.
pods._Pod`): containers, environment, ports, probes, security, compute, storage, node pools, priority
and KAI's scheduling are the same field for field; what differs is the object around it:

- training: a ``batch/v1`` ``Job`` (``completions``, ``parallelism``, ``backoffLimit``,
  ``ttlSecondsAfterFinished``), its pods restarting ``Never`` or ``OnFailure`` as Kubernetes requires;
- workspace: an ``apps/v1`` ``StatefulSet`` of one replica, and a ``v1`` ``Service`` per service type its
  ``ports`` ask for, as Run:ai's open-source CLI ran an interactive job (run-ai/runai-cli,
  ``charts/runai/templates/runai-job.yaml`` and ``runai-service.yaml``);
- inference: a Knative Serving ``serving.knative.dev/v1`` ``Service``: the serving port, the autoscaling as
  Knative's annotations on the revision template, ``containerConcurrency`` and ``timeoutSeconds``.

A distributed inference (a leader and workers) has no objects here: ``workload_manifests`` gives none.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from template_engine.cluster.kube import dns1123_label
from template_engine.cluster.pods import (
    Derived,
    Framework,
    Manifests,
    SettingSource,
    Source,
    SpecSource,
    _dedupe,
    _Job,
    _job_metadata,
    _keyed_items,
    _number_text,
    _Out,
    _Pod,
    _Replica,
)
from template_engine.cluster.problems import ObjectPath
from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.errors import CompositionWarning, WarningKind
from template_engine.kinds import WorkloadKind
from template_engine.paths import Path, value_at

#: The label a workspace's pod carries and its StatefulSet and Services select it by (Kubernetes' recommended
#: label for the name of an application's instance).
INSTANCE_LABEL = "app.kubernetes.io/instance"
#: The label Kubernetes puts on a Job's pods (``batch.kubernetes.io/job-name``, Kubernetes 1.27 and later).
JOB_POD_LABEL = "batch.kubernetes.io/job-name"
#: The label Knative Serving puts on a Service's pods (``serving.knative.dev/service``).
KNATIVE_POD_LABEL = "serving.knative.dev/service"
#: Knative's label that keeps a Service's route inside the cluster (``networking.knative.dev/visibility``).
KNATIVE_VISIBILITY_LABEL = "networking.knative.dev/visibility"
#: Knative's autoscaling annotations (knative/serving ``pkg/apis/autoscaling/register.go``).
AUTOSCALING = "autoscaling.knative.dev/"
#: Knative's progress deadline annotation (``pkg/apis/serving/register.go``,
#: ``ProgressDeadlineAnnotationKey``).
PROGRESS_DEADLINE = "serving.knative.dev/progress-deadline"
#: Knative's Pod Autoscaler classes: its own (KPA, concurrency and rps) and the HPA extension's.
KPA_CLASS = "kpa.autoscaling.knative.dev"
HPA_CLASS = "hpa.autoscaling.knative.dev"
#: Run:ai's autoscaling metrics Knative's own autoscaler scales on, by Knative's name.
KNATIVE_METRICS: Mapping[str, str] = {"throughput": "rps", "concurrency": "concurrency"}

TRAINING = Framework(
    "Job",
    "batch/v1",
    "template",
    "training",
    None,
    False,
    pod_label=JOB_POD_LABEL,
    container_reason="a training's one container (docs/cluster.md, 'The other kinds')",
)
WORKSPACE = Framework(
    "StatefulSet",
    "apps/v1",
    "template",
    "workspace",
    None,
    False,
    pod_label=INSTANCE_LABEL,
    container_reason="a workspace's one container (docs/cluster.md, 'The other kinds')",
)
INFERENCE = Framework(
    "Service",
    "serving.knative.dev/v1",
    "template",
    "user-container",
    None,
    False,
    pod_label=KNATIVE_POD_LABEL,
    container_reason="Knative's default container name (config-defaults, container-name-template)",
)

#: The fields of each kind no object holds, beyond :data:`~template_engine.cluster.mapping.NOT_REPRESENTABLE`
#: (docs/cluster.md repeats them).
KIND_NOT_REPRESENTABLE: Mapping[str, Mapping[str, str]] = {
    "training": {},
    "workspace": {
        "backoffLimit": "a workspace is a StatefulSet, which never completes: it has no retry limit",
        "autoDeletionTimeAfterCompletionSeconds": "a workspace is a StatefulSet, which never completes",
        "restartPolicy": "a StatefulSet's pod restarts Always, the only policy Kubernetes allows it",
    },
    "inference": {
        "ports": "Knative serves one container port per revision, servingPort's; other ports are not exposed",
        "servingPort.authorizationType": "Run:ai's authorization proxy in front of the endpoint; Knative has "
        "no per-user authorization",
        "servingPort.authorizedUsers": "Run:ai's authorization proxy (see authorizationType)",
        "servingPort.authorizedGroups": "Run:ai's authorization proxy (see authorizationType)",
        "autoscaling.initializationTimeoutSeconds": "deprecated: Run:ai ignores it and reads "
        "servingConfiguration.initializationTimeoutSeconds",
    },
}


def workload_manifests(
    kind: WorkloadKind,
    spec: Mapping[str, Any],
    *,
    name: str,
    project: str | None,
    settings: ClusterSettings = DEFAULT_SETTINGS,
    name_source: Source | None = None,
) -> Manifests:
    """The objects of a composition of a one-role ``kind`` whose combined spec is ``spec``."""
    build = _BUILDERS.get(kind.name)
    if build is None:  # a distributed inference: not rendered (docs/cluster.md, "The other kinds")
        return Manifests((), ())
    return build(spec, name, project, settings, name_source)


# --- training -----------------------------------------------------------------------------------------------

#: The fields of a training's spec the Job itself holds, and where.
_JOB_FIELDS = (
    ("completions", "completions"),
    ("parallelism", "parallelism"),
    ("backoffLimit", "backoffLimit"),
    ("autoDeletionTimeAfterCompletionSeconds", "ttlSecondsAfterFinished"),
)


def _training(
    spec: Mapping[str, Any], name: str, project: str | None, settings: ClusterSettings, source: Source | None
) -> Manifests:
    out = _Out(TRAINING.kind)
    obj = _head(TRAINING, spec, name, project, settings, out, source)
    body: dict[str, Any] = {}
    for key, target in _JOB_FIELDS:
        if spec.get(key) is not None:
            body[target] = spec[key]
            out.note(("spec", target), SpecSource("worker", (key,)))
    extra: list[tuple[dict[str, Any], dict[ObjectPath, Source]]] = []
    job = _Job(TRAINING, name, project, settings, out, extra, spec)
    template = _Pod(job, _Replica("Job", spec, "worker", 1), ("spec", "template")).build()
    at: ObjectPath = ("spec", "template", "spec", "restartPolicy")
    restart = spec.get("restartPolicy")
    if restart in ("Never", "OnFailure"):
        template["spec"]["restartPolicy"] = restart
        out.note(at, SpecSource("worker", ("restartPolicy",)))
    elif restart == "Always":
        template["spec"]["restartPolicy"] = "OnFailure"
        out.note(at, SpecSource("worker", ("restartPolicy",)))
        out.warnings.append(
            CompositionWarning(
                WarningKind.NOT_REPRESENTABLE,
                "worker",
                ("restartPolicy",),
                "restartPolicy Always is written OnFailure: a Job's pods restart Never or OnFailure "
                "(Kubernetes refuses Always); OnFailure restarts the container after a failure as Always "
                "would, and lets the Job complete",
            )
        )
    else:
        template["spec"]["restartPolicy"] = "Never"
        out.note(at, Derived("a Job's pods restart Never or OnFailure; none given: Never, as Run:ai's CLI"))
    template["spec"] = dict(sorted(template["spec"].items()))
    body["template"] = template
    obj["spec"] = body
    return _manifests(obj, out, extra)


# --- workspace ----------------------------------------------------------------------------------------------

#: The Service of each ``serviceType``, by the suffix of its name (the ClusterIP one is the workspace's name).
_SERVICE_SUFFIX: Mapping[str, str] = {"ClusterIP": "", "NodePort": "-nodeport", "LoadBalancer": "-lb"}


class _WorkspacePod(_Pod):
    """A workspace's pod: its ports' service type and external port are the Services', not warnings."""

    def warn(self, path: Path, key: str) -> None:
        if key not in ("ports[].serviceType", "ports[].external"):
            super().warn(path, key)


def _workspace(
    spec: Mapping[str, Any], name: str, project: str | None, settings: ClusterSettings, source: Source | None
) -> Manifests:
    out = _Out(WORKSPACE.kind)
    obj = _head(WORKSPACE, spec, name, project, settings, out, source)
    extra: list[tuple[dict[str, Any], dict[ObjectPath, Source]]] = []
    job = _Job(WORKSPACE, name, project, settings, out, extra, spec)
    template = _WorkspacePod(job, _Replica("StatefulSet", spec, "worker", 1), ("spec", "template")).build()
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**meta.get("labels", {}), INSTANCE_LABEL: name}
    out.note(
        ("spec", "template", "metadata", "labels", INSTANCE_LABEL), Derived("selects the workspace's pod")
    )
    template = {"metadata": meta, "spec": template["spec"]}
    restart = spec.get("restartPolicy")
    if restart == "Always":
        template["spec"]["restartPolicy"] = restart
        template["spec"] = dict(sorted(template["spec"].items()))
        out.note(("spec", "template", "spec", "restartPolicy"), SpecSource("worker", ("restartPolicy",)))
    elif restart is not None:
        out.warn("worker", ("restartPolicy",), KIND_NOT_REPRESENTABLE["workspace"]["restartPolicy"])
    for key in ("backoffLimit", "autoDeletionTimeAfterCompletionSeconds"):
        if spec.get(key) is not None:
            out.warn("worker", (key,), KIND_NOT_REPRESENTABLE["workspace"][key])
    obj["spec"] = {
        "replicas": 1,
        "serviceName": name,
        "selector": {"matchLabels": {INSTANCE_LABEL: name}},
        "template": template,
    }
    out.note(("spec", "replicas"), Derived("a workspace runs one pod"))
    out.note(("spec", "serviceName"), Derived("the workspace's name (its ClusterIP Service, if it has one)"))
    out.note(("spec", "selector"), Derived("the workspace's pod, by its instance label"))
    extra[:0] = _services(spec, name, project, settings)  # the Services, then the claims
    return _manifests(obj, out, extra)


def _services(
    spec: Mapping[str, Any], name: str, project: str | None, settings: ClusterSettings
) -> list[tuple[dict[str, Any], dict[ObjectPath, Source]]]:
    """A ``v1`` ``Service`` per service type the ports ask for (``ClusterIP`` when a port says none), in
    the order of their first port; each selects the workspace's pod."""
    grouped: dict[str, list[tuple[Path, Mapping[str, Any]]]] = {}
    for path, item in _keyed_items(spec, ("ports",)):
        if item.get("container") is None:
            continue
        kind = str(item.get("serviceType") or "ClusterIP")
        grouped.setdefault(kind, []).append((path, item))
    found: list[tuple[dict[str, Any], dict[ObjectPath, Source]]] = []
    for kind, items in grouped.items():
        origins: dict[ObjectPath, Source] = {}
        meta: dict[str, Any] = {"name": name + _SERVICE_SUFFIX.get(kind, "-" + kind.lower())}
        origins[("metadata", "name")] = Derived(f"the workspace's name, for its {kind} ports")
        if project is not None:
            meta["namespace"] = settings.namespace(project)
            origins[("metadata", "namespace")] = SettingSource("namespacePattern")
        ports: list[dict[str, Any]] = []
        used: set[str] = set()
        for index, (path, item) in enumerate(items):
            container = item["container"]
            given = item.get("name")
            port_name = (
                given
                if isinstance(given, str) and dns1123_label(given) is None and given not in used
                else f"port-{container}" + ("" if f"port-{container}" not in used else f"-{index}")
            )
            used.add(port_name)
            entry: dict[str, Any] = {"name": port_name, "protocol": "TCP"}
            external = item.get("external")
            at: ObjectPath = ("spec", "ports", index)
            origins[at] = SpecSource("worker", path)
            if port_name == given:
                origins[(*at, "name")] = SpecSource("worker", (*path, "name"))
            else:
                origins[(*at, "name")] = Derived("the container port's number (no valid name given)")
            if kind == "NodePort":
                entry["port"] = container
                origins[(*at, "port")] = SpecSource("worker", (*path, "container"))
                if external is not None:
                    entry["nodePort"] = external
                    origins[(*at, "nodePort")] = SpecSource("worker", (*path, "external"))
            else:
                entry["port"] = external if external is not None else container
                field = "external" if external is not None else "container"
                origins[(*at, "port")] = SpecSource("worker", (*path, field))
            entry["targetPort"] = container
            origins[(*at, "targetPort")] = SpecSource("worker", (*path, "container"))
            ports.append(entry)
        origins[("spec", "type")] = SpecSource("worker", (*items[0][0], "serviceType"))
        origins[("spec", "selector")] = Derived("the workspace's pod, by its instance label")
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"type": kind, "selector": {INSTANCE_LABEL: name}, "ports": ports},
        }
        found.append((service, origins))
    return found


# --- inference ----------------------------------------------------------------------------------------------


class _ServingPod(_Pod):
    """An inference's pod: its one container port is ``servingPort``'s (Knative serves one port, named
    ``h2c`` for gRPC and ``http1`` otherwise); ``ports`` are not exposed."""

    def _ports(self) -> None:
        for path, _item in _keyed_items(self.spec, ("ports",)):
            self.out.warn(self.replica, path, KIND_NOT_REPRESENTABLE["inference"]["ports"])
        serving = self.spec.get("servingPort")
        if not isinstance(serving, Mapping):
            return
        for key in ("authorizationType", "authorizedUsers", "authorizedGroups"):
            if serving.get(key) is not None:
                reason = KIND_NOT_REPRESENTABLE["inference"][f"servingPort.{key}"]
                self.out.warn(self.replica, ("servingPort", key), reason)
        number = serving.get("container")
        if number is None:
            return
        protocol = serving.get("protocol")
        port = {"containerPort": number, "name": "h2c" if protocol == "grpc" else "http1", "protocol": "TCP"}
        self.container["ports"] = [port]
        self.out.note(self.c_at("ports", 0), self.src("servingPort"))
        self.out.note(self.c_at("ports", 0, "containerPort"), self.src("servingPort", "container"))
        if protocol is not None:
            self.out.note(self.c_at("ports", 0, "name"), self.src("servingPort", "protocol"))
        else:
            self.out.note(
                self.c_at("ports", 0, "name"), Derived("http1: servingPort.protocol defaults to http")
            )


def _inference(
    spec: Mapping[str, Any], name: str, project: str | None, settings: ClusterSettings, source: Source | None
) -> Manifests:
    out = _Out(INFERENCE.kind)
    obj = _head(INFERENCE, spec, name, project, settings, out, source)
    serving = spec.get("servingPort") if isinstance(spec.get("servingPort"), Mapping) else {}
    assert isinstance(serving, Mapping)
    if serving.get("clusterLocalAccessOnly") is True:
        obj["metadata"].setdefault("labels", {})[KNATIVE_VISIBILITY_LABEL] = "cluster-local"
        out.note(
            ("metadata", "labels", KNATIVE_VISIBILITY_LABEL),
            SpecSource("worker", ("servingPort", "clusterLocalAccessOnly")),
        )
    extra: list[tuple[dict[str, Any], dict[ObjectPath, Source]]] = []
    job = _Job(INFERENCE, name, project, settings, out, extra, spec)
    template = _ServingPod(job, _Replica("Service", spec, "worker", 1), ("spec", "template")).build()
    annotations = _autoscaling(spec, out)
    if annotations:
        meta = template.setdefault("metadata", {})
        meta["annotations"] = {**meta.get("annotations", {}), **annotations}
    pod: dict[str, Any] = dict(template["spec"])
    limit = value_at(spec, "autoscaling", "concurrencyHardLimit")
    if limit is not None:
        pod["containerConcurrency"] = limit
        out.note(
            ("spec", "template", "spec", "containerConcurrency"), _src("autoscaling", "concurrencyHardLimit")
        )
    timeout = value_at(spec, "servingConfiguration", "requestTimeoutSeconds")
    if timeout is not None:
        pod["timeoutSeconds"] = timeout
        out.note(
            ("spec", "template", "spec", "timeoutSeconds"),
            _src("servingConfiguration", "requestTimeoutSeconds"),
        )
    if value_at(spec, "autoscaling", "initializationTimeoutSeconds") is not None:
        reason = KIND_NOT_REPRESENTABLE["inference"]["autoscaling.initializationTimeoutSeconds"]
        out.warn("worker", ("autoscaling", "initializationTimeoutSeconds"), reason)
    ordered = {"metadata": template["metadata"]} if "metadata" in template else {}
    ordered["spec"] = dict(sorted(pod.items()))
    obj["spec"] = {"template": ordered}
    return _manifests(obj, out, extra)


def _autoscaling(spec: Mapping[str, Any], out: _Out) -> dict[str, str]:
    """``autoscaling`` and ``servingConfiguration.initializationTimeoutSeconds`` as Knative's annotations on
    the revision template (knative/serving ``pkg/apis/autoscaling/register.go``)."""
    found: dict[str, str] = {}

    def put(key: str, value: str, *field: str) -> None:
        found[key] = value
        out.note(("spec", "template", "metadata", "annotations", key), _src(*field))

    scaling = spec.get("autoscaling") if isinstance(spec.get("autoscaling"), Mapping) else {}
    assert isinstance(scaling, Mapping)
    for field, annotation in (
        ("minReplicas", "min-scale"),
        ("maxReplicas", "max-scale"),
        ("initialReplicas", "initial-scale"),
    ):
        if scaling.get(field) is not None:
            put(AUTOSCALING + annotation, str(scaling[field]), "autoscaling", field)
    activation = scaling.get("activationReplicas")
    if isinstance(activation, int) and activation > 1:  # 1 is Knative's own: it refuses it said
        put(AUTOSCALING + "activation-scale", str(activation), "autoscaling", "activationReplicas")
    metric = scaling.get("metric")
    if isinstance(metric, str) and metric:
        knative = KNATIVE_METRICS.get(metric)
        if knative is None:
            put(AUTOSCALING + "class", HPA_CLASS, "autoscaling", "metric")
            out.warn(
                "worker",
                ("autoscaling", "metric"),
                f"Knative's own autoscaler scales on concurrency or rps only: {metric!r} is given to the "
                f"HPA class ({HPA_CLASS}), which needs Knative's HPA extension and a custom-metrics adapter "
                f"that serves {metric!r}",
            )
        put(AUTOSCALING + "metric", knative or metric, "autoscaling", "metric")
    if scaling.get("metricThreshold") is not None:
        put(AUTOSCALING + "target", str(scaling["metricThreshold"]), "autoscaling", "metricThreshold")
    percentage = scaling.get("metricThresholdPercentage")
    if isinstance(percentage, int | float) and not isinstance(percentage, bool):
        put(
            AUTOSCALING + "target-utilization-percentage",
            _number_text(percentage),
            "autoscaling",
            "metricThresholdPercentage",
        )
    for field, annotation in (
        ("scaleDownDelaySeconds", "scale-down-delay"),
        ("scaleToZeroRetentionSeconds", "scale-to-zero-pod-retention-period"),
    ):
        if scaling.get(field) is not None:
            put(AUTOSCALING + annotation, f"{scaling[field]}s", "autoscaling", field)
    deadline = value_at(spec, "servingConfiguration", "initializationTimeoutSeconds")
    if deadline is not None:
        put(PROGRESS_DEADLINE, f"{deadline}s", "servingConfiguration", "initializationTimeoutSeconds")
    return found


# --- shared -------------------------------------------------------------------------------------------------


def _head(
    framework: Framework,
    spec: Mapping[str, Any],
    name: str,
    project: str | None,
    settings: ClusterSettings,
    out: _Out,
    source: Source | None,
) -> dict[str, Any]:
    """The object's ``apiVersion``, ``kind`` and ``metadata`` (name, namespace, labels with KAI's queue and
    node pool, annotations), as a Kubeflow job's."""
    obj: dict[str, Any] = {"apiVersion": framework.api_version, "kind": framework.kind}
    obj["metadata"] = _job_metadata(spec, name, project, settings, out, source)
    return obj


def _manifests(
    obj: dict[str, Any], out: _Out, extra: list[tuple[dict[str, Any], dict[ObjectPath, Source]]]
) -> Manifests:
    objects = (obj, *(o for o, _ in extra))
    origins = (out.origins, *(orig for _, orig in extra))
    return Manifests(objects, origins, _dedupe(out.warnings), tuple(out.problems))


def _src(*path: str) -> SpecSource:
    return SpecSource("worker", tuple(path))


_BUILDERS = {"training": _training, "workspace": _workspace, "inference": _inference}

__all__ = [
    "INSTANCE_LABEL",
    "KIND_NOT_REPRESENTABLE",
    "KNATIVE_METRICS",
    "workload_manifests",
]
