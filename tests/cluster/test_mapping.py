"""The mapping of combined specs to objects, rule by rule (docs/cluster.md, "Mapping")."""

from __future__ import annotations

from typing import Any

import pytest

from template_engine.cluster.mapping import (
    Derived,
    SettingSource,
    SpecSource,
    job_name,
    manifests_of,
    volume_name,
)
from template_engine.cluster.settings import ClusterSettings, PriorityClass
from template_engine.cluster.validity import manifests_problems
from template_engine.errors import WarningKind
from template_engine.paths import Match

BASE: dict[str, Any] = {"distributedFramework": "PyTorch", "numWorkers": 2, "image": "python:3.11"}


def build(spec: dict[str, Any], master: dict[str, Any] | None = None, same: bool = False, **kw: Any) -> Any:
    return manifests_of({**BASE, **spec}, master, same, name=kw.pop("name", "job"), project="vision", **kw)


def worker_pod(spec: dict[str, Any], **kw: Any) -> dict[str, Any]:
    job = build(spec, **kw).objects[0]
    template: dict[str, Any] = job["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]
    return template


def container(spec: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = worker_pod(spec)["spec"]["containers"][0]
    return found


def test_cpu_cores_become_whole_cores_or_millicores_and_memory_is_passed_as_given() -> None:
    resources = container(
        {"compute": {"cpuCoreRequest": 0.5, "cpuCoreLimit": 2.0, "cpuMemoryRequest": "1Gi"}}
    )["resources"]
    assert resources == {"limits": {"cpu": 2}, "requests": {"cpu": "500m", "memory": "1Gi"}}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("cpuCoreLimit", 2 * 10**308),  # an int no float holds: float() raised OverflowError
        ("cpuCoreRequest", 1.0e308),
        ("cpuCoreLimit", float("inf")),
        ("cpuCoreLimit", float("nan")),
        ("cpuMemoryLimit", 10**400),
        ("cpuMemoryRequest", "1e30"),
    ],
)
def test_a_cpu_or_memory_amount_kubernetes_cannot_hold_is_a_problem_not_an_exception(
    key: str, value: Any
) -> None:
    """A defaultFrom rule could compute 2e308 cores (an int): the mapping raised. It is a problem of the
    object now, naming the field and the value, and the resource is left out."""
    built = build(
        {"compute": {key: value, "cpuCoreRequest" if key != "cpuCoreRequest" else "cpuCoreLimit": 1}}
    )
    (problem,) = built.problems
    assert problem.rule == "mapping.quantity"
    assert f"compute.{key} is" in problem.message and "Kubernetes quantity" in problem.message
    resource = "cpu" if key.startswith("cpuCore") else "memory"
    which = "limits" if key.endswith("Limit") else "requests"
    resources = built.objects[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert resource not in resources.get("resources", {}).get(which, {})


def test_the_largest_amounts_kubernetes_holds_are_mapped() -> None:
    resources = container({"compute": {"cpuCoreLimit": 9 * 10**15, "cpuMemoryLimit": "7Ei"}})["resources"]
    assert resources == {"limits": {"cpu": 9 * 10**15, "memory": "7Ei"}}


def test_whole_gpus_are_a_limit_and_a_portion_is_kai_annotations_without_the_device_resource() -> None:
    assert container({"compute": {"gpuDevicesRequest": 2}})["resources"] == {"limits": {"nvidia.com/gpu": 2}}
    pod = worker_pod(
        {"compute": {"gpuDevicesRequest": 2, "gpuRequestType": "portion", "gpuPortionRequest": 0.5}}
    )
    assert pod["metadata"]["annotations"] == {"gpu-fraction": "0.5", "gpu-fraction-num-devices": "2"}
    assert "resources" not in pod["spec"]["containers"][0]


def test_gpu_memory_is_whole_mib_rounded_up() -> None:
    pod = worker_pod({"compute": {"gpuRequestType": "memory", "gpuMemoryRequest": "2G"}})
    # 2G = 2,000,000,000 bytes = 1907.35 MiB -> 1908
    assert pod["metadata"]["annotations"] == {"gpu-memory": "1908"}


def test_large_shm_is_a_memory_backed_empty_dir_at_dev_shm() -> None:
    pod = worker_pod({"compute": {"largeShmRequest": True}})["spec"]
    assert pod["volumes"] == [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]
    assert pod["containers"][0]["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_command_and_args_are_split_as_a_shell_would_and_a_broken_quote_is_a_problem() -> None:
    c = container({"command": "python -m torch.distributed.run", "args": "--name 'a b' x"})
    assert c["command"] == ["python", "-m", "torch.distributed.run"]
    assert c["args"] == ["--name", "a b", "x"]
    broken = build({"args": "--name 'a b"})
    assert [p.rule for p in broken.problems] == ["mapping.shellWords"]
    assert broken.problems[0].place().endswith("Worker.template.spec.containers[0].args")


def test_environment_variables_from_each_source() -> None:
    env = container(
        {
            "environmentVariables": [
                {"name": "A", "value": "1"},
                {"name": "B", "secret": {"name": "s", "key": "k"}},
                {"name": "C", "configMap": {"name": "c", "key": "k"}},
                {"name": "D", "podFieldRef": {"path": "metadata.name"}},
            ]
        }
    )["env"]
    assert env == [
        {"name": "A", "value": "1"},
        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
        {"name": "C", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}},
        {"name": "D", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
    ]


def test_a_port_keeps_a_valid_name_and_loses_one_kubernetes_refuses_with_a_warning() -> None:
    result = build(
        {"ports": [{"name": "tensorboard-web-ui", "container": 6006}, {"name": "ssh", "container": 22}]}
    )
    ports = result.objects[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "ports"
    ]
    assert ports == [
        {"containerPort": 6006, "protocol": "TCP"},
        {"containerPort": 22, "protocol": "TCP", "name": "ssh"},
    ]
    assert any("tensorboard-web-ui" in w.message for w in result.warnings)


def test_tolerations_any_effect_means_every_effect() -> None:
    pod = worker_pod({"tolerations": [{"name": "t", "key": "gpu", "operator": "Exists", "effect": "Any"}]})
    assert pod["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]


def test_storage_kinds_become_volumes_with_prefixed_valid_names() -> None:
    pod = worker_pod(
        {
            "storage": {
                "nfs": [{"name": "Data_Set", "server": "n", "path": "/e", "mountPath": "/d"}],
                "pvc": [{"name": "data", "claimName": "c1", "existingPvc": True, "path": "/p"}],
                "configMapVolume": [
                    {"name": "cfg", "configMap": "cm", "mountPath": "/c", "defaultMode": "0644"}
                ],
            }
        }
    )["spec"]
    names = [v["name"] for v in pod["volumes"]]
    assert names[0] == "pvc-data"
    assert names[1].startswith("nfs-data-set-") and len(names[1]) <= 63
    assert pod["volumes"][2]["configMap"] == {"name": "cm", "defaultMode": 0o644}
    assert [m["name"] for m in pod["containers"][0]["volumeMounts"]] == names


def test_a_new_claim_is_its_own_object_shared_by_both_replicas() -> None:
    pvc = {
        "name": "scratch",
        "path": "/s",
        "claimInfo": {"size": "10Gi", "accessModes": {"readWriteMany": True}},
    }
    result = build({"storage": {"pvc": [pvc]}}, same=True)
    kinds = [o["kind"] for o in result.objects]
    assert kinds == ["PyTorchJob", "PersistentVolumeClaim"]
    claim = result.objects[1]
    assert claim["metadata"] == {"name": "job-scratch", "namespace": "runai-vision"}
    assert claim["spec"] == {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "10Gi"}}}
    assert manifests_problems(result.objects) == []


def test_priority_from_preemptibility_and_an_unknown_class_is_refused() -> None:
    assert worker_pod({"preemptibility": "non-preemptible"})["spec"]["priorityClassName"] == "build"
    refused = build({"priorityClass": "gold"})
    assert [p.rule for p in refused.problems] == ["mapping.priorityClass"]
    settings = ClusterSettings(
        priorityClasses=[PriorityClass(name="gold", value=10)],
        preemptibleClass="gold",
        nonPreemptibleClass="gold",
    )
    assert build({"priorityClass": "gold"}, settings=settings).problems == ()


def test_the_project_gives_namespace_and_queue_from_the_settings() -> None:
    settings = ClusterSettings(queues={"vision": "vision-q"}, namespacePattern="ml-{project}")
    result = build({}, settings=settings)
    meta = result.objects[0]["metadata"]
    assert meta["namespace"] == "ml-vision"
    assert meta["labels"]["kai.scheduler/queue"] == "vision-q"
    assert result.origins[0][("metadata", "labels", "kai.scheduler/queue")] == SettingSource("queues")


def test_origins_name_the_spec_field_of_each_value() -> None:
    result = build({"environmentVariables": [{"name": "A", "value": "1"}]})
    origins = result.origins[0]
    at = ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers", 0)
    assert origins[(*at, "image")] == SpecSource("worker", ("image",))
    assert origins[(*at, "env", 0)] == SpecSource(
        "worker", ("environmentVariables", Match("name", "A"), "value")
    )
    assert isinstance(origins[(*at, "name")], Derived)
    assert result.source_of(0, (*at, "env", 0, "value")) == SpecSource(
        "worker", ("environmentVariables", Match("name", "A"), "value")
    )


@pytest.mark.parametrize(
    ("framework", "same", "master", "expect"),
    [
        ("PyTorch", True, None, {"Master": 1, "Worker": 3}),
        ("PyTorch", False, None, {"Worker": 3}),
        ("TF", False, {"image": "m"}, {"Chief": 1, "Worker": 3}),
        ("XGBoost", False, None, {"Master": 1, "Worker": 2}),
        ("MPI", False, None, {"Launcher": 1, "Worker": 2}),
        ("JAX", True, None, {"Worker": 4}),
        ("JAX", False, None, {"Worker": 3}),
    ],
)
def test_topologies(
    framework: str, same: bool, master: dict[str, Any] | None, expect: dict[str, int]
) -> None:
    result = manifests_of(
        {**BASE, "distributedFramework": framework, "numWorkers": 3}, master, same, name="job", project="p"
    )
    job = result.objects[0]
    key = next(k for k in job["spec"] if k.endswith("ReplicaSpecs"))
    assert {t: r["replicas"] for t, r in job["spec"][key].items()} == expect
    assert manifests_problems(result.objects) == []
    if framework == "MPI":
        assert job["spec"]["runLauncherAsWorker"] is True


def test_a_jax_master_with_its_own_spec_cannot_be_represented() -> None:
    result = manifests_of(
        {**BASE, "distributedFramework": "JAX"}, {"image": "m"}, False, name="j", project="p"
    )
    assert [p.rule for p in result.problems] == ["mapping.jaxMaster"]


def test_names_made_valid_stay_distinct() -> None:
    assert job_name("train") == "train"
    assert job_name("ddp_v2") != job_name("ddp-v2")
    assert job_name("ddp_v2").startswith("ddp-v2-")
    assert job_name("2stage").startswith("x-2stage")
    assert volume_name("nfs", "a" * 80)[:4] == "nfs-" and len(volume_name("nfs", "a" * 80)) <= 63


def test_not_representable_fields_are_warnings_never_problems() -> None:
    result = build(
        {"category": "Train", "exposedUrls": [{"container": 80}], "storage": {"s3": [{"name": "b"}]}}
    )
    assert result.problems == ()
    assert {w.kind for w in result.warnings} == {WarningKind.NOT_REPRESENTABLE}
    assert {str(w.field[0]) for w in result.warnings} == {"category", "exposedUrls", "storage"}


def test_image_pull_secrets_reach_every_replica_of_the_job() -> None:
    job = build({"imagePullSecrets": [{"name": "regcred"}]}, same=True).objects[0]
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        assert replica["template"]["spec"]["imagePullSecrets"] == [{"name": "regcred"}]


def test_an_mpi_replica_that_restarts_always_is_refused_by_the_operator() -> None:
    result = manifests_of(
        {**BASE, "distributedFramework": "MPI", "restartPolicy": "Always"}, None, True, name="m", project="p"
    )
    rules = {(p.rule, p.path[-1]) for p in manifests_problems(result.objects)}
    assert ("operator.restartPolicy", "restartPolicy") in rules


def test_an_mpi_job_whose_first_worker_pod_name_is_too_long_is_refused_even_without_workers() -> None:
    name = "a" * 55
    result = manifests_of(
        {**BASE, "distributedFramework": "MPI", "numWorkers": 1}, None, False, name=name, project="p"
    )
    assert "Worker" not in result.objects[0]["spec"]["mpiReplicaSpecs"]
    assert "operator.workerPodName" in {p.rule for p in manifests_problems(result.objects)}


def test_an_extended_resource_is_a_limit_whose_source_is_the_item_by_its_key() -> None:
    result = build({"compute": {"extendedResources": [{"resource": "rdma/ib", "quantity": "1"}]}})
    at = ("spec", "pytorchReplicaSpecs", "Worker", "template", "spec", "containers", 0, "resources", "limits")
    assert result.objects[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
        "resources"
    ] == {"limits": {"rdma/ib": "1"}}
    assert result.origins[0][(*at, "rdma/ib")] == SpecSource(
        "worker", ("compute", "extendedResources", Match("resource", "rdma/ib"), "quantity")
    )


def test_a_separate_master_in_another_node_pool_is_a_warning() -> None:
    result = build({"nodePools": ["a100"]}, master={"image": "m", "nodePools": ["cpu"]})
    assert result.objects[0]["metadata"]["labels"]["kai.scheduler/node-pool"] == "a100"
    assert [(w.replica, w.field) for w in result.warnings] == [("master", ("nodePools",))]


def test_services_sharing_a_container_port_make_one_container_port_named_by_the_first_valid_name() -> None:
    result = build(
        {
            "ports": [
                {"container": 8080, "serviceType": "ClusterIP"},
                {"name": "Web UI", "container": 8080, "serviceType": "NodePort"},
                {"name": "web", "container": 8080, "serviceType": "LoadBalancer"},
                {"name": "api", "container": 8080, "serviceType": "ClusterIP"},
                {"name": "tb", "container": 6006, "serviceType": "ClusterIP"},
            ]
        }
    )
    pod = result.objects[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    assert pod["containers"][0]["ports"] == [
        {"containerPort": 8080, "protocol": "TCP", "name": "web"},
        {"containerPort": 6006, "protocol": "TCP", "name": "tb"},
    ]
    assert manifests_problems(result.objects) == []
    (api,) = [w for w in result.warnings if w.field == ("ports", Match("name", "api"), "name")]
    assert "container port 8080 is named 'web' already" in api.message


def _mpi_pods(spec: dict[str, Any], master: dict[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    result = build({"distributedFramework": "MPI", **spec}, {"image": "launcher:1", **master})
    replicas = result.objects[0]["spec"]["mpiReplicaSpecs"]
    return result, replicas["Launcher"]["template"]["spec"], replicas["Worker"]["template"]["spec"]


def test_a_separate_master_without_a_priority_runs_at_the_workers_priority() -> None:
    result, launcher, worker = _mpi_pods({"priorityClass": "inference"}, {})
    assert launcher["priorityClassName"] == worker["priorityClassName"] == "inference"
    at = ("spec", "mpiReplicaSpecs", "Launcher", "template", "spec", "priorityClassName")
    assert result.origins[0][at] == SpecSource("worker", ("priorityClass",))
    assert not any("priority" in w.message for w in result.warnings)
    # the workers' preemptibility, through the settings' class
    result, launcher, worker = _mpi_pods({"preemptibility": "non-preemptible"}, {})
    assert launcher["priorityClassName"] == worker["priorityClassName"] == "build"
    assert result.origins[0][at] == SettingSource("nonPreemptibleClass")
    # an unknown class of the workers is refused once, on the workers' field
    refused = build({"distributedFramework": "MPI", "priorityClass": "gold"}, {"image": "launcher:1"})
    assert [p.rule for p in refused.problems] == ["mapping.priorityClass", "mapping.priorityClass"]


def test_a_separate_master_with_another_priority_than_the_workers_is_a_warning() -> None:
    result, launcher, worker = _mpi_pods({"priorityClass": "train"}, {"priorityClass": "build"})
    assert (launcher["priorityClassName"], worker["priorityClassName"]) == ("build", "train")
    (warning,) = [w for w in result.warnings if w.replica == "master" and w.field == ("priorityClass",)]
    assert "the master's priority class 'build' is not the workers' ('train')" in warning.message
    result, _, _ = _mpi_pods({}, {"preemptibility": "preemptible"})
    (warning,) = [w for w in result.warnings if w.replica == "master"]
    assert warning.field == ("preemptibility",)
    assert "the master's priority class 'train' is not the workers' (none)" in warning.message
    same, _, _ = _mpi_pods({"priorityClass": "train"}, {"preemptibility": "preemptible"})
    assert not [w for w in same.warnings if w.replica == "master"]
