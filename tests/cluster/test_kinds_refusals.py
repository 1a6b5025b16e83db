"""What the cluster refuses in a training's, a workspace's or an inference's objects becomes a runnable issue
that names the object path, the rule and the spec field that set the value (issue 32)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kind_specs import INFERENCE, TRAINING, TYPICAL, WORKSPACE, outcome, render

from template_engine.cluster.mapping import manifests_of
from template_engine.cluster.outcome import cluster_outcome
from template_engine.cluster.settings import DEFAULT_SETTINGS
from template_engine.cluster.validity import manifests_problems
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME
from template_engine.paths import Match
from template_engine.runnable import RunnableIssue

TEAM = ("labels", Match("name", "team"), "value")


def _issues(kind: str, spec: dict[str, Any]) -> list[tuple[Any, ...]]:
    _, issues = outcome(kind, spec)
    return [(i.replica, i.field, i.object_path, i.check) for i in issues]


@pytest.mark.parametrize(
    ("kind", "place"),
    [("training", "Job"), ("workspace", "StatefulSet"), ("inference", "Service")],
)
def test_an_invalid_label_value_is_an_issue_naming_the_object_path_and_the_labels_field(
    kind: str, place: str
) -> None:
    spec = {**TYPICAL[kind], "labels": [{"name": "team", "value": "vision team!"}]}
    _, issues = outcome(kind, spec)
    (issue,) = issues  # the pod template's copy of the label is the same field: said once
    assert isinstance(issue, RunnableIssue)
    assert (issue.replica, issue.field) == ("worker", TEAM)
    assert issue.object_path == f"{place}.metadata.labels.team"
    assert issue.check == "kubernetes.labelValue"
    assert issue.message.startswith(f"the cluster refuses {place}.metadata.labels.team: ")


def test_a_priority_class_the_cluster_lacks_is_refused_for_every_kind() -> None:
    for kind in TYPICAL:
        spec = {**TYPICAL[kind], "priorityClass": "gold"}
        assert _issues(kind, spec) == [
            (
                "worker",
                ("priorityClass",),
                {"training": "Job", "workspace": "StatefulSet", "inference": "Service"}[kind]
                + ".spec.template.spec.priorityClassName",
                "mapping.priorityClass",
            )
        ]


def test_a_node_port_outside_the_range_is_refused_in_its_own_service() -> None:
    """The second Service of the workspace: the issue's field is that port's, not the first Service's."""
    spec = {**WORKSPACE}
    spec["ports"] = [
        *WORKSPACE["ports"][:1],
        {"container": 22, "name": "ssh", "serviceType": "NodePort", "external": 22},
    ]
    assert _issues("workspace", spec) == [
        (
            "worker",
            ("ports", Match("name", "ssh"), "external"),
            "Service.spec.ports[0].nodePort",
            "kubernetes.nodePortRange",
        )
    ]


def test_a_workspace_service_name_that_is_no_dns_1035_label_is_refused() -> None:
    manifests = render("workspace", WORKSPACE)
    service = {**manifests.objects[1], "metadata": {"name": "9lives"}}
    problems = manifests_problems([service])
    assert [(p.place(), p.rule) for p in problems] == [("Service.metadata.name", "kubernetes.dns1035Label")]


def test_a_training_job_whose_pods_would_restart_always_is_refused() -> None:
    job = render("training", TRAINING).objects[0]
    template = {
        **job["spec"]["template"],
        "spec": {**job["spec"]["template"]["spec"], "restartPolicy": "Always"},
    }
    problems = manifests_problems([{**job, "spec": {**job["spec"], "template": template}}])
    assert [(p.place(), p.rule) for p in problems] == [
        ("Job.spec.template.spec.restartPolicy", "kubernetes.jobRestartPolicy")
    ]


def test_a_training_job_name_longer_than_a_label_value_is_refused() -> None:
    name = "a" * 64
    _, issues = cluster_outcome(
        TRAINING,
        None,
        False,
        template_name=None,
        workload_name=name,
        project="vision",
        settings=DEFAULT_SETTINGS,
        kind=KIND_BY_NAME["training"],
    )
    assert ("Job.metadata.name", "kubernetes.jobName") in [(i.object_path, i.check) for i in issues]


def test_a_statefulset_whose_selector_misses_its_pods_is_refused() -> None:
    stateful = render("workspace", WORKSPACE).objects[0]
    spec = {**stateful["spec"], "selector": {"matchLabels": {"app.kubernetes.io/instance": "other"}}}
    problems = manifests_problems([{**stateful, "spec": spec}])
    assert [(p.place(), p.rule) for p in problems] == [
        ("StatefulSet.spec.template.metadata.labels", "kubernetes.selector")
    ]


@pytest.mark.parametrize(
    ("change", "field", "place", "check"),
    [
        (
            {"servingPort": {"container": 8012}},
            ("servingPort", "container"),
            "Service.spec.template.spec.containers[0].ports[0].containerPort",
            "knative.reservedPort",
        ),
        (
            {"autoscaling": {"minReplicas": 5, "maxReplicas": 2}},
            ("autoscaling", "maxReplicas"),
            "Service.spec.template.metadata.annotations.autoscaling.knative.dev/max-scale",
            "knative.autoscaling",
        ),
        (
            {"autoscaling": {"initialReplicas": 0}},
            ("autoscaling", "initialReplicas"),
            "Service.spec.template.metadata.annotations.autoscaling.knative.dev/initial-scale",
            "knative.autoscaling",
        ),
        (
            {"autoscaling": {"concurrencyHardLimit": 5000}},
            ("autoscaling", "concurrencyHardLimit"),
            "Service.spec.template.spec.containerConcurrency",
            "knative.containerConcurrency",
        ),
        (
            {"servingConfiguration": {"requestTimeoutSeconds": 900}},
            ("servingConfiguration", "requestTimeoutSeconds"),
            "Service.spec.template.spec.timeoutSeconds",
            "knative.timeoutSeconds",
        ),
        (
            {"storage": {"nfs": [{"name": "share", "server": "nfs.local", "path": "/x", "mountPath": "/x"}]}},
            ("storage", "nfs", Match("name", "share")),
            "Service.spec.template.spec.volumes[1].nfs",
            "schema.unknownField",
        ),
    ],
)
def test_what_knative_refuses_is_an_issue_naming_the_inference_field(
    change: dict[str, Any], field: Any, place: str, check: str
) -> None:
    assert _issues("inference", {**INFERENCE, **change}) == [("worker", field, place, check)]


def test_the_knative_crd_checks_the_pod_fields_it_declares() -> None:
    service = render("inference", INFERENCE).objects[0]
    pod = {**service["spec"]["template"]["spec"], "containerConcurrency": "eight"}
    problems = manifests_problems(
        [{**service, "spec": {"template": {**service["spec"]["template"], "spec": pod}}}]
    )
    assert ("Service.spec.template.spec.containerConcurrency", "schema.type") in [
        (p.place(), p.rule) for p in problems
    ]


def test_a_distributed_composition_is_the_default_kind_and_unchanged() -> None:
    spec = {"distributedFramework": "PyTorch", "numWorkers": 2, "image": "python:3.11"}
    default = manifests_of(spec, None, False, name="job", project="vision")
    explicit = manifests_of(spec, None, False, name="job", project="vision", kind=DISTRIBUTED)
    assert default == explicit
    assert [o["kind"] for o in default.objects] == ["PyTorchJob"]
    assert (
        default.objects[0]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0][
            "name"
        ]
        == "pytorch"
    )


def test_a_refusal_in_a_second_object_of_a_kind_names_that_objects_field() -> None:
    """Each problem knows its object: the second new claim's bad name is its own ``claimName``'s, not the
    first claim's (a distributed training's objects are the same as before; only the issue's field moved)."""
    claims = [
        {"name": "a", "path": "/a", "claimInfo": {"size": "1Gi"}},
        {"name": "b", "path": "/b", "claimName": "Bad_Name", "claimInfo": {"size": "1Gi"}},
    ]
    spec = {"distributedFramework": "PyTorch", "numWorkers": 1, "image": "i", "storage": {"pvc": claims}}
    _, issues = cluster_outcome(
        spec, None, False, template_name="t", workload_name=None, project="p", settings=DEFAULT_SETTINGS
    )
    assert [(i.field, i.object_path, i.check) for i in issues] == [
        (
            ("storage", "pvc", Match("name", "b"), "claimName"),
            "PersistentVolumeClaim.metadata.name",
            "kubernetes.dns1123Subdomain",
        )
    ]


@pytest.mark.parametrize(
    ("kind", "index", "change", "place", "rule"),
    [
        ("training", 0, lambda o: o["spec"].update(bogus=1), "Job.spec.bogus", "schema.unknownField"),
        (
            "workspace",
            0,
            lambda o: o["spec"].update(replicas="one"),
            "StatefulSet.spec.replicas",
            "schema.type",
        ),
        (
            "workspace",
            1,
            lambda o: o["spec"]["ports"][0].update(port="eighty"),
            "Service.spec.ports[0].port",
            "schema.type",
        ),
    ],
)
def test_the_built_in_kinds_are_checked_by_kubernetes_own_schemas(
    kind: str, index: int, change: Any, place: str, rule: str
) -> None:
    obj = copy.deepcopy(render(kind, TYPICAL[kind]).objects[index])
    change(obj)
    assert (place, rule) in [(p.place(), p.rule) for p in manifests_problems([obj])]
