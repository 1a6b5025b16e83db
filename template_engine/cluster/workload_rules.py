"""What the cluster refuses in the objects of the one-role kinds, beyond their schemas (docs/cluster.md,
"Validity of the other kinds").

- A ``batch/v1`` ``Job``, an ``apps/v1`` ``StatefulSet`` and a ``v1`` ``Service``: Kubernetes' own rules for
  them (``pkg/apis/batch/validation/validation.go``, ``pkg/apis/apps/validation/validation.go``
  ``ValidateStatefulSetSpec``, ``pkg/apis/core/validation/validation.go`` ``ValidateService`` and
  ``validateServicePort``), ``kubernetes.<rule>``;
- a Knative ``Service``: Knative Serving's admission webhook (knative/serving knative-v1.23.0,
  ``pkg/apis/serving/k8s_validation.go``, ``pkg/apis/serving/metadata_validation.go``,
  ``pkg/apis/serving/v1/revision_validation.go``, ``pkg/apis/autoscaling/annotation_validation.go``) with
  its default configuration (``pkg/apis/config/defaults.go``), ``knative.<rule>``.

The objects' metadata and pod templates are checked by :mod:`~template_engine.cluster.kube`, as a Kubeflow
job's; their schemas by :mod:`~template_engine.cluster.schemas` (kubernetes-validate's for the built-in kinds,
the vendored CRD for Knative's).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from template_engine.cluster.kube import dns1035_label, dns1123_label, label_value
from template_engine.cluster.problems import ObjectPath, ObjectProblem
from template_engine.paths import value_at

#: Kubernetes' default ``--service-node-port-range`` (the API server refuses a node port outside it).
NODE_PORT_RANGE = (30000, 32767)
#: Knative's ports the user container may not take (``k8s_validation.go``, ``reservedPorts``: the queue
#: proxy's 8012, 8013, 8022, 9090, 9091, and the profiling port 8008).
KNATIVE_RESERVED_PORTS = frozenset({8008, 8012, 8013, 8022, 9090, 9091})
#: Knative's serving port names (``k8s_validation.go``, ``validPortNames``; empty is allowed too).
KNATIVE_PORT_NAMES = frozenset({"", "h2c", "http1"})
#: Knative's defaults (``config/defaults.go``): the largest ``containerConcurrency`` and ``timeoutSeconds``.
KNATIVE_MAX_CONCURRENCY = 1000
KNATIVE_MAX_TIMEOUT_SECONDS = 600
#: The longest scale-down delay and pod retention Knative takes (``autoscaling/register.go``, ``WindowMax``).
KNATIVE_WINDOW_MAX_SECONDS = 3600
_AUTOSCALING = "autoscaling.knative.dev/"
_DURATION = re.compile(r"^([0-9]+)s$")
_TEMPLATE: ObjectPath = ("spec", "template")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Found:
    def __init__(self, kind: str, prefix: str) -> None:
        self.kind, self.prefix = kind, prefix
        self.found: list[ObjectProblem] = []

    def add(self, path: ObjectPath, rule: str, message: str) -> None:
        self.found.append(ObjectProblem(self.kind, path, f"{self.prefix}.{rule}", message))


# --- Kubernetes' built-in kinds -----------------------------------------------------------------------------


def job_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """A ``Job``'s own rules: its pods restart ``Never`` or ``OnFailure``; counts and times are not negative;
    its name is a label value (Kubernetes labels its pods ``batch.kubernetes.io/job-name: <name>``)."""
    out = _Found("Job", "kubernetes")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    for key in ("completions", "parallelism", "backoffLimit", "ttlSecondsAfterFinished"):
        number = _int(spec.get(key))
        if number is not None and number < 0:
            out.add(("spec", key), "nonNegative", f"must be greater than or equal to 0 (got {number})")
    restart = value_at(spec, "template", "spec", "restartPolicy")
    if restart not in ("Never", "OnFailure"):
        out.add(
            (*_TEMPLATE, "spec", "restartPolicy"),
            "jobRestartPolicy",
            f"a Job's pods restart Never or OnFailure (got {restart!r})",
        )
    name = value_at(obj, "metadata", "name")
    if isinstance(name, str) and (message := label_value(name)) is not None:
        out.add(("metadata", "name"), "jobName", f"the pods' job-name label {name!r}: {message}")
    return out.found


def statefulset_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """``ValidateStatefulSetSpec``: replicas not negative, a selector that is not empty and matches the
    template's labels, the pod restarting ``Always``; and its pod's name ``<name>-0`` a DNS-1123 label (the
    pod's hostname)."""
    out = _Found("StatefulSet", "kubernetes")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    replicas = _int(spec.get("replicas"))
    if replicas is not None and replicas < 0:
        out.add(("spec", "replicas"), "nonNegative", f"must be greater than or equal to 0 (got {replicas})")
    selector = value_at(spec, "selector", "matchLabels")
    labels = value_at(spec, "template", "metadata", "labels")
    if not isinstance(selector, Mapping) or not selector:
        out.add(("spec", "selector"), "selector", "empty selector is not valid for statefulset")
    elif not isinstance(labels, Mapping) or any(labels.get(k) != v for k, v in selector.items()):
        out.add((*_TEMPLATE, "metadata", "labels"), "selector", "`selector` does not match template `labels`")
    restart = value_at(spec, "template", "spec", "restartPolicy")
    if restart is not None and restart != "Always":
        out.add(
            (*_TEMPLATE, "spec", "restartPolicy"),
            "statefulSetRestartPolicy",
            f"a StatefulSet's pods restart Always (got {restart!r})",
        )
    name = value_at(obj, "metadata", "name")
    if isinstance(name, str) and (message := dns1123_label(f"{name}-0")) is not None:
        out.add(("metadata", "name"), "podName", f"its pod's name {name + '-0'!r}: {message}")
    return out.found


def service_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """``ValidateService`` and ``validateServicePort``: at least one port; every port named (DNS-1123 labels,
    unique) when there are several; ports and target ports in 1..65535; a port and protocol once; a node
    port only for a NodePort or LoadBalancer Service, within the default node port range."""
    out = _Found("Service", "kubernetes")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    ports = spec.get("ports")
    kind = spec.get("type") or "ClusterIP"
    if not isinstance(ports, list) or not ports:
        out.add(("spec", "ports"), "required", "a Service needs at least one port")
        return out.found
    names: set[str] = set()
    pairs: set[tuple[Any, Any]] = set()
    for index, port in enumerate(ports):
        if not isinstance(port, Mapping):
            continue
        at: ObjectPath = ("spec", "ports", index)
        name = port.get("name")
        if len(ports) > 1 and not name:
            out.add((*at, "name"), "required", "every port of a Service of several ports has a name")
        elif isinstance(name, str) and name:
            if (message := dns1123_label(name)) is not None:
                out.add((*at, "name"), "dns1123Label", message)
            elif name in names:
                out.add((*at, "name"), "uniquePortName", f"duplicate port name {name!r}")
            names.add(name)
        for key in ("port", "targetPort"):
            number = _int(port.get(key))
            if number is not None and not 1 <= number <= 65535:
                out.add((*at, key), "portNumber", "must be between 1 and 65535, inclusive")
        pair = (port.get("port"), port.get("protocol") or "TCP")
        if pair in pairs:
            out.add((*at, "port"), "uniquePort", f"port {pair[0]} ({pair[1]}) is given twice")
        pairs.add(pair)
        node = _int(port.get("nodePort"))
        if node is not None:
            low, high = NODE_PORT_RANGE
            if kind not in ("NodePort", "LoadBalancer"):
                out.add((*at, "nodePort"), "nodePort", "a node port needs type NodePort or LoadBalancer")
            elif not low <= node <= high:
                out.add(
                    (*at, "nodePort"),
                    "nodePortRange",
                    f"{node} is not in the cluster's node port range {low}-{high} (the API server's default)",
                )
    return out.found


# --- Knative Serving ----------------------------------------------------------------------------------------


def knative_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Knative Serving's webhook rules for a ``Service`` a composition's objects can reach."""
    out = _Found("Service", "knative")
    name = value_at(obj, "metadata", "name")
    if isinstance(name, str):
        if (message := dns1035_label(name)) is not None:
            out.add(
                ("metadata", "name"), "serviceName", f"{name!r}: {message} (its route's host and Service)"
            )
        elif (message := dns1035_label(f"{name}-00001")) is not None:
            out.add(("metadata", "name"), "revisionName", f"its revisions' names ({name}-00001): {message}")
    pod = value_at(obj, "spec", "template", "spec")
    if isinstance(pod, Mapping):
        _knative_pod(out, pod)
    annotations = value_at(obj, "spec", "template", "metadata", "annotations")
    if isinstance(annotations, Mapping):
        _knative_annotations(out, annotations)
    return out.found


def _knative_pod(out: _Found, pod: Mapping[str, Any]) -> None:
    at: ObjectPath = (*_TEMPLATE, "spec")
    containers = pod.get("containers") if isinstance(pod.get("containers"), list) else []
    assert isinstance(containers, list)
    count = 0
    for index, container in enumerate(containers):
        ports = container.get("ports") if isinstance(container, Mapping) else None
        if not isinstance(ports, list):
            continue
        for number, port in enumerate(ports):
            count += 1
            path: ObjectPath = (*at, "containers", index, "ports", number)
            if count > 1:
                out.add(path, "ports", "more than one container port is set: Knative serves a single port")
                continue
            if not isinstance(port, Mapping):
                continue
            if port.get("name", "") not in KNATIVE_PORT_NAMES:
                out.add(
                    (*path, "name"),
                    "portName",
                    f"port name {port.get('name')!r}: must be empty, h2c or http1",
                )
            if port.get("containerPort") in KNATIVE_RESERVED_PORTS:
                out.add(
                    (*path, "containerPort"),
                    "reservedPort",
                    f"{port.get('containerPort')} is a port Knative reserves for its queue proxy",
                )
            if port.get("protocol", "TCP") != "TCP":
                out.add((*path, "protocol"), "protocol", "Knative serves TCP only")
    concurrency = _int(pod.get("containerConcurrency"))
    if concurrency is not None and not 0 <= concurrency <= KNATIVE_MAX_CONCURRENCY:
        out.add(
            (*at, "containerConcurrency"),
            "containerConcurrency",
            f"{concurrency} is not within 0..{KNATIVE_MAX_CONCURRENCY} (Knative's default limit)",
        )
    timeout = _int(pod.get("timeoutSeconds"))
    if timeout is not None and not 0 <= timeout <= KNATIVE_MAX_TIMEOUT_SECONDS:
        out.add(
            (*at, "timeoutSeconds"),
            "timeoutSeconds",
            f"{timeout} is not within 0..{KNATIVE_MAX_TIMEOUT_SECONDS} (Knative's default "
            "max-revision-timeout-seconds)",
        )


def _scale(annotations: Mapping[str, Any], key: str) -> int | None:
    value = annotations.get(_AUTOSCALING + key)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def _knative_annotations(out: _Found, annotations: Mapping[str, Any]) -> None:
    at: ObjectPath = (*_TEMPLATE, "metadata", "annotations")

    def refuse(key: str, message: str) -> None:
        out.add((*at, key), "autoscaling", message)

    for key in ("min-scale", "max-scale", "initial-scale", "activation-scale"):
        value = annotations.get(_AUTOSCALING + key)
        if value is not None and (not isinstance(value, str) or not value.isdigit() or int(value) >= 2**31):
            refuse(_AUTOSCALING + key, f"{value!r} is not a whole number of replicas")
    low, high = _scale(annotations, "min-scale") or 0, _scale(annotations, "max-scale") or 0
    if high and high < low:
        refuse(_AUTOSCALING + "max-scale", f"max-scale={high} is less than min-scale={low}")
    activation = _scale(annotations, "activation-scale")
    if activation is not None:
        if low > activation:
            refuse(
                _AUTOSCALING + "activation-scale",
                f"min-scale={low} is greater than activation-scale={activation}",
            )
        elif high and high < activation:
            refuse(
                _AUTOSCALING + "activation-scale",
                f"max-scale={high} is less than activation-scale={activation}",
            )
        elif activation < 2:
            refuse(_AUTOSCALING + "activation-scale", f"activation-scale={activation} must be greater than 1")
    if _scale(annotations, "initial-scale") == 0:
        refuse(
            _AUTOSCALING + "initial-scale",
            "initial-scale=0 is not allowed by a cluster with Knative's default "
            "allow-zero-initial-scale: false",
        )
    klass = annotations.get(_AUTOSCALING + "class", "kpa.autoscaling.knative.dev")
    metric = annotations.get(_AUTOSCALING + "metric")
    if metric is not None and klass == "kpa.autoscaling.knative.dev" and metric not in ("concurrency", "rps"):
        refuse(
            _AUTOSCALING + "metric",
            f"Knative's autoscaler (KPA) scales on concurrency or rps, not {metric!r}",
        )
    target = annotations.get(_AUTOSCALING + "target")
    if target is not None and not (_is_number(target) and float(target) >= 0.01):
        refuse(_AUTOSCALING + "target", f"target {target!r} should be a number of at least 0.01")
    utilization = annotations.get(_AUTOSCALING + "target-utilization-percentage")
    if utilization is not None and not (_is_number(utilization) and 1 <= float(utilization) <= 100):
        refuse(_AUTOSCALING + "target-utilization-percentage", f"{utilization!r} is not within 1..100")
    for key in ("scale-down-delay", "scale-to-zero-pod-retention-period"):
        value = annotations.get(_AUTOSCALING + key)
        match = _DURATION.match(value) if isinstance(value, str) else None
        if value is not None and (match is None or int(match[1]) > KNATIVE_WINDOW_MAX_SECONDS):
            refuse(
                _AUTOSCALING + key, f"{value!r} is not a duration within 0s..{KNATIVE_WINDOW_MAX_SECONDS}s"
            )
    deadline = annotations.get("serving.knative.dev/progress-deadline")
    match = _DURATION.match(deadline) if isinstance(deadline, str) else None
    if deadline is not None and (match is None or int(match[1]) <= 0):
        out.add(
            (*at, "serving.knative.dev/progress-deadline"),
            "progressDeadline",
            f"{deadline!r} must be positive",
        )


def _is_number(text: Any) -> bool:
    if not isinstance(text, str):
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


__all__ = [
    "KNATIVE_RESERVED_PORTS",
    "NODE_PORT_RANGE",
    "job_problems",
    "knative_problems",
    "service_problems",
    "statefulset_problems",
]
