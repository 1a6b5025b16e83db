"""Typical specs of the one-role kinds, and helpers the ``test_kinds_*`` files share (issue 32)."""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import yaml
from independent_check import kubernetes_errors

from template_engine.cluster.mapping import Manifests, manifests_of
from template_engine.cluster.outcome import cluster_outcome
from template_engine.cluster.settings import DEFAULT_SETTINGS, ClusterSettings
from template_engine.kinds import KIND_BY_NAME
from template_engine.runnable import RunnableIssue

REPO = Path(__file__).resolve().parents[2]
#: What every kind's typical spec sets: the pod's fields, the same for the three kinds.
POD: dict[str, Any] = {
    "image": "nvcr.io/nvidia/pytorch:24.05-py3",
    "imagePullPolicy": "IfNotPresent",
    "workingDir": "/work",
    "command": "python main.py --port 8000",
    "environmentVariables": [
        {"name": "TZ", "value": "UTC"},
        {"name": "TOKEN", "secret": {"name": "t", "key": "k"}},
    ],
    "compute": {
        "cpuCoreRequest": 0.5,
        "cpuMemoryRequest": "8Gi",
        "gpuDevicesRequest": 1,
        "largeShmRequest": True,
    },
    "storage": {
        "pvc": [{"name": "data", "path": "/data", "claimInfo": {"size": "10Gi", "storageClass": "fast"}}],
        "configMapVolume": [{"name": "cfg", "configMap": "cfg", "mountPath": "/cfg"}],
    },
    "tolerations": [{"name": "gpu", "key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "podAffinity": {"type": "Required", "key": "kubernetes.io/hostname"},
    "probes": {
        "readiness": {"initialDelaySeconds": 5, "handler": {"httpGet": {"path": "/ok", "port": 8000}}}
    },
    "security": {"runAsUid": 1000, "runAsGid": 1000, "runAsNonRoot": True},
    "labels": [{"name": "team", "value": "vision"}],
    "annotations": [{"name": "note", "value": "typical"}],
    "nodePools": ["a100"],
    "nodeType": "dgx",
    "preemptibility": "preemptible",
    "imagePullSecrets": [{"name": "regcred"}],
}
TRAINING: dict[str, Any] = {
    **POD,
    "completions": 4,
    "parallelism": 2,
    "backoffLimit": 3,
    "autoDeletionTimeAfterCompletionSeconds": 600,
    "restartPolicy": "OnFailure",
    "terminationGracePeriodSeconds": 30,
}
WORKSPACE: dict[str, Any] = {
    **POD,
    "ports": [
        {"container": 8888, "name": "jupyter", "serviceType": "ClusterIP"},
        {"container": 22, "name": "ssh", "serviceType": "NodePort", "external": 30022},
        {"container": 6006, "name": "board", "serviceType": "LoadBalancer", "external": 80},
    ],
}
INFERENCE: dict[str, Any] = {
    **POD,
    "servingPort": {"container": 8000, "protocol": "grpc"},
    "autoscaling": {
        "minReplicas": 0,
        "maxReplicas": 4,
        "initialReplicas": 1,
        "activationReplicas": 2,
        "metric": "throughput",
        "metricThreshold": 20,
        "metricThresholdPercentage": 70,
        "concurrencyHardLimit": 8,
        "scaleDownDelaySeconds": 30,
        "scaleToZeroRetentionSeconds": 60,
    },
    "servingConfiguration": {"requestTimeoutSeconds": 300, "initializationTimeoutSeconds": 900},
}
TYPICAL: dict[str, dict[str, Any]] = {"training": TRAINING, "workspace": WORKSPACE, "inference": INFERENCE}


def render(kind: str, spec: Mapping[str, Any], settings: ClusterSettings = DEFAULT_SETTINGS) -> Manifests:
    return manifests_of(
        spec, None, False, name="demo", project="vision", settings=settings, kind=KIND_BY_NAME[kind]
    )


def outcome(kind: str, spec: Mapping[str, Any]) -> tuple[Manifests, tuple[RunnableIssue, ...]]:
    return cluster_outcome(
        spec,
        None,
        False,
        template_name="demo",
        workload_name=None,
        project="vision",
        settings=DEFAULT_SETTINGS,
        kind=KIND_BY_NAME[kind],
    )


def _strict(schema: Any) -> Any:
    """The CRD schema with ``additionalProperties: false`` wherever ``properties`` is given alone and the node
    does not keep unknown fields (the API server's strict field validation)."""
    if isinstance(schema, list):
        return [_strict(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    found = {key: _strict(value) for key, value in schema.items()}
    open_node = found.get("x-kubernetes-preserve-unknown-fields") is True
    if "properties" in found and "additionalProperties" not in found and not open_node:
        found["additionalProperties"] = False
    return found


@cache
def _knative_validator() -> Any:
    path = REPO / "template_engine/cluster/crds/knative/serving.knative.dev_services.yaml"
    crd = yaml.safe_load(path.read_text(encoding="utf-8"))
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    strict = _strict(schema)
    strict["properties"]["metadata"] = {"type": "object"}
    return jsonschema_rs.Draft4Validator(strict)


def independent_errors(objects: Sequence[Mapping[str, Any]]) -> list[str]:
    """The errors validators that share no code with the engine find: kubernetes-validate for the built-in
    kinds (a Knative Service's pod template wrapped in a ``v1 PodTemplate``, less Knative's own fields), and
    jsonschema-rs for the Knative Service against the vendored CRD made strict."""
    errors: list[str] = []
    for obj in objects:
        if str(obj.get("apiVersion")).startswith("serving.knative.dev/"):
            errors += [f"knative: {e.message}" for e in _knative_validator().iter_errors(dict(obj))]
            template = copy.deepcopy(obj["spec"]["template"])
            for key in ("containerConcurrency", "timeoutSeconds"):
                template["spec"].pop(key, None)
            wrapped = {
                "apiVersion": "v1",
                "kind": "PodTemplate",
                "metadata": {"name": "x"},
                "template": template,
            }
            errors += [f"knative pod: {e}" for e in kubernetes_errors(wrapped)]
        else:
            errors += [f"{obj.get('kind')}: {e}" for e in kubernetes_errors(obj)]
    return errors
