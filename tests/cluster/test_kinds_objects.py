"""What the cluster runs for a training, a workspace and an inference (issue 32): the objects of a typical
spec, field by field, valid by the engine's checks and by validators that share no code with it."""

from __future__ import annotations

from typing import Any

import pytest
from kind_specs import INFERENCE, TRAINING, TYPICAL, WORKSPACE, independent_errors, outcome, render

from template_engine.cluster.mapping import Derived, SettingSource, SpecSource
from template_engine.cluster.validity import manifests_problems
from template_engine.kinds import KIND_BY_NAME, KINDS
from template_engine.paths import Match


@pytest.mark.parametrize("kind", sorted(TYPICAL))
def test_a_typical_spec_of_each_kind_is_valid_by_the_engine_and_by_independent_validators(kind: str) -> None:
    manifests, issues = outcome(kind, TYPICAL[kind])
    assert issues == ()
    assert manifests.problems == ()
    assert manifests_problems(manifests.objects) == []
    assert independent_errors(manifests.objects) == []


def _pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = obj["spec"]["template"]["spec"]
    return found


@pytest.mark.parametrize("kind", sorted(TYPICAL))
def test_every_kind_gets_the_pod_the_kubeflow_replicas_get(kind: str) -> None:
    """The same pod-building code: scheduler, queue and node pool, priority, tolerations, affinity, compute,
    volumes from storage, probes, security, image pull secrets."""
    obj = render(kind, TYPICAL[kind]).objects[0]
    pod = _pod_spec(obj)
    assert obj["metadata"]["namespace"] == "runai-vision"
    assert obj["metadata"]["labels"] == {
        "team": "vision",
        "kai.scheduler/queue": "default-queue",
        "kai.scheduler/node-pool": "a100",
    }
    assert pod["schedulerName"] == "kai-scheduler"
    assert pod["priorityClassName"] == "train"
    assert pod["nodeSelector"] == {"run.ai/type": "dgx"}
    assert pod["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert pod["imagePullSecrets"] == [{"name": "regcred"}]
    (container,) = pod["containers"]
    assert container["image"] == "nvcr.io/nvidia/pytorch:24.05-py3"
    assert container["command"] == ["python", "main.py", "--port", "8000"]
    assert container["env"][1] == {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "t", "key": "k"}}}
    assert container["resources"] == {
        "limits": {"nvidia.com/gpu": 1},
        "requests": {"cpu": "500m", "memory": "8Gi"},
    }
    assert container["securityContext"] == {"runAsUser": 1000, "runAsGroup": 1000, "runAsNonRoot": True}
    assert container["readinessProbe"]["httpGet"] == {"path": "/ok", "port": 8000}
    assert [v["name"] for v in pod["volumes"]] == ["dshm", "pvc-data", "cm-cfg"]
    assert [m["mountPath"] for m in container["volumeMounts"]] == ["/dev/shm", "/data", "/cfg"]
    claims = [o for o in render(kind, TYPICAL[kind]).objects if o["kind"] == "PersistentVolumeClaim"]
    assert [c["metadata"]["name"] for c in claims] == ["demo-data"]


def test_a_training_is_a_batch_job_with_completions_parallelism_backoff_and_ttl() -> None:
    manifests = render("training", TRAINING)
    job = manifests.objects[0]
    assert (job["apiVersion"], job["kind"], job["metadata"]["name"]) == ("batch/v1", "Job", "demo")
    spec = job["spec"]
    assert {
        k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "ttlSecondsAfterFinished")
    } == {
        "completions": 4,
        "parallelism": 2,
        "backoffLimit": 3,
        "ttlSecondsAfterFinished": 600,
    }
    pod = _pod_spec(job)
    assert pod["restartPolicy"] == "OnFailure"
    assert pod["terminationGracePeriodSeconds"] == 30
    assert pod["containers"][0]["name"] == "training"
    assert pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0][
        "labelSelector"
    ] == {"matchLabels": {"batch.kubernetes.io/job-name": "demo"}}
    origins = manifests.origins[0]
    assert origins[("spec", "completions")] == SpecSource("worker", ("completions",))
    assert origins[("spec", "parallelism")] == SpecSource("worker", ("parallelism",))
    assert origins[("spec", "ttlSecondsAfterFinished")] == SpecSource(
        "worker", ("autoDeletionTimeAfterCompletionSeconds",)
    )
    assert manifests.source_of(0, ("metadata", "labels", "kai.scheduler/queue")) == SettingSource(
        "defaultQueue"
    )


@pytest.mark.parametrize(
    ("given", "written"),
    [("Never", "Never"), ("OnFailure", "OnFailure"), ("Always", "OnFailure"), (None, "Never")],
)
def test_a_training_job_restarts_never_or_on_failure_always_written_on_failure_with_a_warning(
    given: str | None, written: str
) -> None:
    spec = {**TRAINING, "restartPolicy": given}
    manifests, issues = outcome("training", spec)
    assert issues == ()
    assert _pod_spec(manifests.objects[0])["restartPolicy"] == written
    warned = [w for w in manifests.warnings if w.field == ("restartPolicy",)]
    assert len(warned) == (1 if given == "Always" else 0)
    source = manifests.source_of(0, ("spec", "template", "spec", "restartPolicy"))
    assert isinstance(source, Derived if given is None else SpecSource)


def test_a_workspace_is_a_statefulset_of_one_pod_and_a_service_per_service_type() -> None:
    manifests = render("workspace", WORKSPACE)
    kinds = [(o["apiVersion"], o["kind"], o["metadata"]["name"]) for o in manifests.objects]
    assert kinds == [
        ("apps/v1", "StatefulSet", "demo"),
        ("v1", "Service", "demo"),
        ("v1", "Service", "demo-nodeport"),
        ("v1", "Service", "demo-lb"),
        ("v1", "PersistentVolumeClaim", "demo-data"),
    ]
    stateful = manifests.objects[0]
    assert stateful["spec"]["replicas"] == 1
    assert stateful["spec"]["serviceName"] == "demo"
    assert stateful["spec"]["selector"] == {"matchLabels": {"app.kubernetes.io/instance": "demo"}}
    assert stateful["spec"]["template"]["metadata"]["labels"] == {
        "team": "vision",
        "app.kubernetes.io/instance": "demo",
    }
    assert "restartPolicy" not in _pod_spec(stateful)  # Always, Kubernetes' default and a StatefulSet's only
    ports = _pod_spec(stateful)["containers"][0]["ports"]
    assert [(p["containerPort"], p["name"]) for p in ports] == [
        (8888, "jupyter"),
        (22, "ssh"),
        (6006, "board"),
    ]
    cluster_ip, node_port, balancer = manifests.objects[1:4]
    assert cluster_ip["spec"] == {
        "type": "ClusterIP",
        "selector": {"app.kubernetes.io/instance": "demo"},
        "ports": [{"name": "jupyter", "protocol": "TCP", "port": 8888, "targetPort": 8888}],
    }
    assert node_port["spec"]["type"] == "NodePort"
    assert node_port["spec"]["ports"] == [
        {"name": "ssh", "protocol": "TCP", "port": 22, "nodePort": 30022, "targetPort": 22}
    ]
    assert balancer["spec"]["ports"] == [{"name": "board", "protocol": "TCP", "port": 80, "targetPort": 6006}]
    ssh = ("ports", Match("name", "ssh"))
    assert manifests.source_of(2, ("spec", "ports", 0, "nodePort")) == SpecSource(
        "worker", (*ssh, "external")
    )
    assert manifests.source_of(2, ("spec", "type")) == SpecSource("worker", (*ssh, "serviceType"))
    # represented: no not-representable warning for the service type or external port
    assert not [w for w in manifests.warnings if w.field[-1:] in (("serviceType",), ("external",))]


def test_a_workspace_port_without_a_service_type_is_a_cluster_ip_service_port_named_by_its_number() -> None:
    manifests = render("workspace", {**WORKSPACE, "ports": [{"container": 8080, "name": "Web UI"}]})
    service = manifests.objects[1]
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["ports"] == [
        {"name": "port-8080", "protocol": "TCP", "port": 8080, "targetPort": 8080}
    ]
    assert manifests.source_of(1, ("spec", "ports", 0, "name")) == Derived(
        "the container port's number (no valid name given)"
    )


def test_a_workspace_without_ports_has_no_service() -> None:
    spec = {k: v for k, v in WORKSPACE.items() if k != "ports"}
    assert [o["kind"] for o in render("workspace", spec).objects] == ["StatefulSet", "PersistentVolumeClaim"]


@pytest.mark.parametrize("field", ["backoffLimit", "autoDeletionTimeAfterCompletionSeconds"])
def test_a_workspace_warns_of_what_a_statefulset_cannot_hold(field: str) -> None:
    manifests = render("workspace", {**WORKSPACE, field: 5})
    assert [w.field for w in manifests.warnings] == [(field,)]


def test_a_workspace_restart_policy_other_than_always_is_a_warning_not_written() -> None:
    manifests, issues = outcome("workspace", {**WORKSPACE, "restartPolicy": "Never"})
    assert issues == ()
    assert "restartPolicy" not in _pod_spec(manifests.objects[0])
    assert [w.field for w in manifests.warnings] == [("restartPolicy",)]


def test_an_inference_is_a_knative_service_with_its_serving_port_autoscaling_and_timeouts() -> None:
    manifests = render("inference", INFERENCE)
    service = manifests.objects[0]
    assert (service["apiVersion"], service["kind"]) == ("serving.knative.dev/v1", "Service")
    template = service["spec"]["template"]
    assert template["metadata"]["annotations"] == {
        "note": "typical",
        "autoscaling.knative.dev/min-scale": "0",
        "autoscaling.knative.dev/max-scale": "4",
        "autoscaling.knative.dev/initial-scale": "1",
        "autoscaling.knative.dev/activation-scale": "2",
        "autoscaling.knative.dev/metric": "rps",
        "autoscaling.knative.dev/target": "20",
        "autoscaling.knative.dev/target-utilization-percentage": "70",
        "autoscaling.knative.dev/scale-down-delay": "30s",
        "autoscaling.knative.dev/scale-to-zero-pod-retention-period": "60s",
        "serving.knative.dev/progress-deadline": "900s",
    }
    pod = template["spec"]
    assert pod["containerConcurrency"] == 8
    assert pod["timeoutSeconds"] == 300
    assert pod["schedulerName"] == "kai-scheduler"
    (container,) = pod["containers"]
    assert container["name"] == "user-container"
    assert container["ports"] == [{"containerPort": 8000, "name": "h2c", "protocol": "TCP"}]
    annotations = ("spec", "template", "metadata", "annotations")
    assert manifests.source_of(0, (*annotations, "autoscaling.knative.dev/metric")) == SpecSource(
        "worker", ("autoscaling", "metric")
    )
    assert manifests.source_of(0, (*annotations, "serving.knative.dev/progress-deadline")) == SpecSource(
        "worker", ("servingConfiguration", "initializationTimeoutSeconds")
    )
    assert manifests.source_of(0, ("spec", "template", "spec", "containerConcurrency")) == SpecSource(
        "worker", ("autoscaling", "concurrencyHardLimit")
    )
    assert manifests.source_of(0, ("spec", "template", "spec", "containers", 0, "ports", 0, "name")) == (
        SpecSource("worker", ("servingPort", "protocol"))
    )


@pytest.mark.parametrize(("protocol", "name"), [("grpc", "h2c"), ("http", "http1"), (None, "http1")])
def test_the_serving_port_is_named_h2c_for_grpc_and_http1_otherwise(protocol: str | None, name: str) -> None:
    spec = {**INFERENCE, "servingPort": {"container": 9000, "protocol": protocol}}
    container = render("inference", spec).objects[0]["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 9000, "name": name, "protocol": "TCP"}]


@pytest.mark.parametrize(("metric", "knative"), [("throughput", "rps"), ("concurrency", "concurrency")])
def test_knatives_own_metrics_from_throughput_and_concurrency(metric: str, knative: str) -> None:
    spec = {**INFERENCE, "autoscaling": {"metric": metric, "metricThreshold": 5}}
    manifests, issues = outcome("inference", spec)
    annotations = manifests.objects[0]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["autoscaling.knative.dev/metric"] == knative
    assert "autoscaling.knative.dev/class" not in annotations
    assert issues == () and manifests.warnings == ()


def test_another_metric_goes_to_knatives_hpa_class_with_a_warning() -> None:
    spec = {**INFERENCE, "autoscaling": {"metric": "latency", "metricThreshold": 200}}
    manifests, issues = outcome("inference", spec)
    annotations = manifests.objects[0]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["autoscaling.knative.dev/class"] == "hpa.autoscaling.knative.dev"
    assert annotations["autoscaling.knative.dev/metric"] == "latency"
    assert issues == ()
    assert [w.field for w in manifests.warnings] == [("autoscaling", "metric")]


def test_an_activation_of_one_replica_is_knatives_default_and_not_written() -> None:
    spec = {**INFERENCE, "autoscaling": {"activationReplicas": 1}}
    manifests, issues = outcome("inference", spec)
    assert "annotations" not in manifests.objects[0]["spec"]["template"]["metadata"] or not any(
        "activation" in k for k in manifests.objects[0]["spec"]["template"]["metadata"]["annotations"]
    )
    assert issues == ()


def test_an_inference_local_to_the_cluster_gets_knatives_visibility_label() -> None:
    spec = {**INFERENCE, "servingPort": {"container": 8000, "clusterLocalAccessOnly": True}}
    manifests = render("inference", spec)
    assert manifests.objects[0]["metadata"]["labels"]["networking.knative.dev/visibility"] == "cluster-local"


def test_an_inference_warns_of_its_other_ports_and_of_run_ais_authorization() -> None:
    spec = {
        **INFERENCE,
        "ports": [{"container": 9090, "name": "metrics"}],
        "servingPort": {"container": 8000, "authorizationType": "authenticatedUsers"},
    }
    manifests = render("inference", spec)
    assert manifests.objects[0]["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 8000, "name": "http1", "protocol": "TCP"}
    ]
    assert sorted(w.field for w in manifests.warnings) == [
        ("ports", Match("name", "metrics")),
        ("servingPort", "authorizationType"),
    ]


def test_a_distributed_inference_has_no_objects_here() -> None:
    manifests, issues = outcome("distributed-inference", {"image": "x"})
    assert manifests.objects == () and issues == ()


def test_every_one_role_kind_has_no_master() -> None:
    assert sorted(kind.name for kind in KINDS if kind.roles == ("worker",)) == sorted(TYPICAL)
    assert all(not KIND_BY_NAME[name].is_distributed for name in TYPICAL)
