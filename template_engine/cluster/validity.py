"""Every reason the cluster would refuse a composition's objects: schema, operator and API server.

Three sources of refusal, in this order for each object (docs/cluster.md, "Validity"):

1. its schema: the vendored CRD's ``openAPIV3Schema`` for a job, Kubernetes' own for a core object
   (:mod:`~template_engine.cluster.schemas`);
2. the operator's admission rules, which the loose CRDs do not carry (:func:`operator_problems`), read from
   the Training Operator's webhooks (kubeflow/trainer v1.9.4, ``pkg/webhooks/{pytorch,tensorflow,xgboost,
   jax}/*_webhook.go``) and the MPI Operator's validation (kubeflow/mpi-operator v0.8.0,
   ``pkg/apis/kubeflow/validation/validation.go``);
3. what the API server checks when the operator creates the pods (:mod:`~template_engine.cluster.kube`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from template_engine.cluster.kube import dns1035_label, metadata_problems, pod_template_problems
from template_engine.cluster.problems import ObjectPath, ObjectProblem
from template_engine.cluster.schemas import core_problems, knative_schema_problems, schema_problems
from template_engine.paths import value_at

#: The replica types each operator accepts, and the one it requires (the webhooks' ``validateReplicaSpecs``).
REPLICA_TYPES: Mapping[str, tuple[frozenset[str], str | None]] = {
    "PyTorchJob": (frozenset({"Master", "Worker"}), None),
    "TFJob": (frozenset({"Chief", "Master", "PS", "Worker", "Evaluator"}), None),
    "XGBoostJob": (frozenset({"Master", "Worker"}), "Master"),
    "JAXJob": (frozenset({"Worker"}), "Worker"),
    "MPIJob": (frozenset({"Launcher", "Worker"}), "Launcher"),
}
#: The key of the replica specs, and the default container the operator injects its settings into.
REPLICAS_KEY: Mapping[str, tuple[str, str | None]] = {
    "PyTorchJob": ("pytorchReplicaSpecs", "pytorch"),
    "TFJob": ("tfReplicaSpecs", "tensorflow"),
    "XGBoostJob": ("xgbReplicaSpecs", "xgboost"),
    "JAXJob": ("jaxReplicaSpecs", "jax"),
    "MPIJob": ("mpiReplicaSpecs", None),
}
#: Replica types that run exactly one pod.
SINGLE = frozenset({"Master", "Chief", "Launcher"})


#: The built-in kinds with a pod template at ``spec.template`` (the one-role kinds' objects), and their own
#: rules (:mod:`~template_engine.cluster.workload_rules`).
TEMPLATED: tuple[tuple[str, str], ...] = (("batch/v1", "Job"), ("apps/v1", "StatefulSet"))


def _kind_rules() -> Any:
    """The one-role kinds' own rules, imported when one of their objects is checked (start-up)."""
    from template_engine.cluster import workload_rules

    return workload_rules


def object_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """Every reason the cluster refuses ``obj``: its schema, then its operator (or controller), then the API
    server."""
    kind = str(obj.get("kind"))
    api_version = str(obj.get("apiVersion"))
    if kind in REPLICA_TYPES and api_version.startswith("kubeflow.org/"):
        found = schema_problems(obj)
        found += operator_problems(obj)
        found += _pod_problems(obj)
        return found
    if api_version.startswith("serving.knative.dev/"):  # an inference's Knative Service
        found = knative_schema_problems(obj)
        found += _kind_rules().knative_problems(obj)
        found += _template_problems(obj)
        return found
    found = core_problems(obj)
    if (api_version, kind) in TEMPLATED:
        rules = _kind_rules()
        found += rules.job_problems(obj) if kind == "Job" else rules.statefulset_problems(obj)
        found += _template_problems(obj)
        return found
    if (api_version, kind) == ("v1", "Service"):
        found += _kind_rules().service_problems(obj)
        metadata = obj.get("metadata")
        if isinstance(metadata, Mapping):  # ValidateService: a Service's name is a DNS-1035 label
            found += metadata_problems(kind, ("metadata",), metadata, dns1035_label)
        return found
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        found += metadata_problems(kind, ("metadata",), metadata)
    return found


def manifests_problems(objects: Sequence[Mapping[str, Any]]) -> list[ObjectProblem]:
    """The problems of every object (each knowing the object's index), and of objects that clash (two with
    one kind and name)."""
    found: list[ObjectProblem] = []
    seen: set[tuple[str, str, str]] = set()
    for index, obj in enumerate(objects):
        found += [replace(problem, index=index) for problem in object_problems(obj)]
        metadata = obj.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        key = (str(obj.get("apiVersion")), str(obj.get("kind")), str(name))
        if key in seen:
            found.append(
                ObjectProblem(
                    key[1],
                    ("metadata", "name"),
                    "kubernetes.uniqueName",
                    f"{key[2]!r} is given twice",
                    index=index,
                )
            )
        seen.add(key)
    return found


def _template_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """The metadata of an object whose pod template is at ``spec.template``, and the template as the API
    server checks the pods made from it."""
    kind = str(obj.get("kind"))
    found: list[ObjectProblem] = []
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        found += metadata_problems(kind, ("metadata",), metadata)
    template = value_at(obj, "spec", "template")
    if isinstance(template, Mapping):
        found += pod_template_problems(kind, ("spec", "template"), template)
    return found


def operator_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    """The operator's own admission rules for a job object (``docs/cluster-contract.md``)."""
    kind = str(obj.get("kind"))
    found: list[ObjectProblem] = []

    def refuse(path: ObjectPath, rule: str, message: str) -> None:
        found.append(ObjectProblem(kind, path, f"operator.{rule}", message))

    metadata = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    assert isinstance(metadata, Mapping)
    name = metadata.get("name")
    if isinstance(name, str):
        wrong = dns1035_label(name)
        if wrong is not None:
            refuse(("metadata", "name"), "jobName", f"the job's name {name!r}: {wrong}")
    spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
    assert isinstance(spec, Mapping)
    key, container = REPLICAS_KEY[kind]
    replicas = spec.get(key)
    if not isinstance(replicas, Mapping):
        return found  # the schema says it is required
    allowed, required = REPLICA_TYPES[kind]
    for rtype in sorted(replicas):
        if rtype not in allowed:
            refuse(("spec", key, rtype), "replicaTypes", f"{kind} takes replica types {sorted(allowed)}")
    if required is not None and required not in replicas:
        refuse(("spec", key), "replicaTypes", f"{kind} needs a {required} replica")
    if kind == "TFJob" and "Chief" in replicas and "Master" in replicas:
        refuse(("spec", key), "replicaTypes", "a TFJob has at most one of Chief and Master")
    for rtype, replica in replicas.items():
        if not isinstance(replica, Mapping):
            continue
        at: ObjectPath = ("spec", key, rtype)
        count = replica.get("replicas")
        if isinstance(count, int):
            if rtype in SINGLE and count != 1:
                refuse((*at, "replicas"), "replicas", f"a {rtype} has exactly 1 replica (got {count})")
            elif rtype not in SINGLE and count < 1:
                refuse((*at, "replicas"), "replicas", f"a {rtype} has at least 1 replica (got {count})")
        containers = value_at(replica, "template", "spec", "containers")
        if not isinstance(containers, list):
            continue
        names = [c.get("name") for c in containers if isinstance(c, Mapping)]
        if container is not None and container not in names:
            refuse(
                (*at, "template", "spec", "containers"),
                "defaultContainer",
                f"a container named {container!r} is needed: the operator injects its settings there",
            )
        for index, c in enumerate(containers):
            if isinstance(c, Mapping) and not c.get("image"):
                refuse(
                    (*at, "template", "spec", "containers", index, "image"),
                    "image",
                    "every container has an image",
                )
    if kind == "PyTorchJob" and spec.get("elasticPolicy") is not None and "Worker" not in replicas:
        refuse(
            ("spec", "elasticPolicy"),
            "elasticWorker",
            "a PyTorchJob with an elasticPolicy needs a Worker replica",
        )
    if kind == "MPIJob":
        found += _mpi_problems(spec, metadata, replicas)
    return found


def _mpi_problems(
    spec: Mapping[str, Any], metadata: Mapping[str, Any], replicas: Mapping[str, Any]
) -> list[ObjectProblem]:
    found: list[ObjectProblem] = []
    for field in ("slotsPerWorker", "sshAuthMountPath"):
        if spec.get(field) is None:
            found.append(
                ObjectProblem("MPIJob", ("spec", field), "operator.mpiDefaults", f"{field} is required")
            )
    if value_at(spec, "runPolicy", "cleanPodPolicy") is None:
        found.append(
            ObjectProblem(
                "MPIJob",
                ("spec", "runPolicy", "cleanPodPolicy"),
                "operator.mpiDefaults",
                "cleanPodPolicy is required",
            )
        )
    for rtype, replica in replicas.items():
        policy = replica.get("restartPolicy") if isinstance(replica, Mapping) else None
        if policy is not None and policy not in ("Never", "OnFailure"):
            found.append(
                ObjectProblem(
                    "MPIJob",
                    ("spec", "mpiReplicaSpecs", rtype, "restartPolicy"),
                    "operator.restartPolicy",
                    f"an MPIJob's replicas restart Never or OnFailure (got {policy!r})",
                )
            )
    worker = replicas.get("Worker")
    count = worker.get("replicas") if isinstance(worker, Mapping) else None
    name = metadata.get("name")
    if isinstance(name, str):  # validation.go checks worker 0's name even with no Worker replica
        last = count - 1 if isinstance(count, int) and count >= 1 else 0
        pod = f"{name}-worker-{last}"
        wrong = dns1035_label(pod)
        if wrong is not None:
            found.append(
                ObjectProblem(
                    "MPIJob",
                    ("metadata", "name"),
                    "operator.workerPodName",
                    f"the last worker pod's name {pod!r}: {wrong}",
                )
            )
    return found


def _pod_problems(obj: Mapping[str, Any]) -> list[ObjectProblem]:
    kind = str(obj.get("kind"))
    found: list[ObjectProblem] = []
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping):
        found += metadata_problems(kind, ("metadata",), metadata)
    key, _ = REPLICAS_KEY[kind]
    replicas = value_at(obj, "spec", key)
    if isinstance(replicas, Mapping):
        for rtype, replica in replicas.items():
            template = replica.get("template") if isinstance(replica, Mapping) else None
            if isinstance(template, Mapping):
                found += pod_template_problems(kind, ("spec", key, rtype, "template"), template)
    return found


__all__ = ["manifests_problems", "object_problems", "operator_problems"]
