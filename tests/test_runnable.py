"""The runnable check on rendered combined specs (DESIGN.md "Runnable")."""

from __future__ import annotations

from typing import Any

import pytest

from template_engine.errors import CompositionWarning, WarningKind
from template_engine.merge.plan import SPEC_PLAN
from template_engine.paths import Match, format_path, parse_path
from template_engine.runnable import REQUIRED_ITEM_FIELDS, Runnable, RunnableIssue, check
from template_engine.walk import keyed_path

WORKER = {"image": "python:3.11", "distributedFramework": "PyTorch", "numWorkers": 2}
MASTER = {"image": "python:3.11"}


def worker(**fields: Any) -> dict[str, Any]:
    return {**WORKER, **fields}


def run(spec: dict[str, Any], master: dict[str, Any] | None = None, separate: bool = False) -> Runnable:
    return check(spec, master, separate, SPEC_PLAN)


def messages(result: Runnable) -> list[str]:
    return [i.message for i in result.issues]


def fields(result: Runnable) -> list[str]:
    """The issues' fields as the edges show them (typed paths in the records)."""
    return [format_path(i.field) for i in result.issues]


def test_a_complete_worker_is_runnable() -> None:
    result = run(WORKER, MASTER)
    assert result.is_runnable
    assert result.to_dict() == {"isRunnable": True, "issue": None, "issues": [], "warnings": []}


@pytest.mark.parametrize("image", [None, ""])
def test_missing_worker_image(image: str | None) -> None:
    spec = worker(image=image)
    result = run(spec)
    assert result.to_dict() == {
        "isRunnable": False,
        "issue": "mandatory image is not provided",
        "issues": [
            {
                "replica": "worker",
                "field": "image",
                "message": "mandatory image is not provided",
                "rule": None,
            }
        ],
        "warnings": [],
    }


def test_missing_master_image_counts_only_for_a_separate_master() -> None:
    assert run(WORKER, {"command": "python"}, separate=False).is_runnable
    result = run(WORKER, {"command": "python"}, separate=True)
    assert result.issues == (RunnableIssue("master", ("image",), "mandatory image is not provided"),)


def test_a_workers_only_topology_checks_only_the_worker() -> None:
    assert run(WORKER, None, separate=True).is_runnable


def test_missing_distributed_framework_is_a_worker_issue_only() -> None:
    spec = {k: v for k, v in WORKER.items() if k != "distributedFramework"}
    result = run(spec, {"image": "x"}, separate=True)
    assert result.issues == (
        RunnableIssue("worker", ("distributedFramework",), "mandatory distributedFramework is not provided"),
    )


def _nest(names: tuple[str, ...], items: list[dict[str, Any]]) -> dict[str, Any]:
    value: Any = items
    for name in reversed(names):
        value = {name: value}
    return value


def _key_field(names: tuple[str, ...]) -> str:
    node = SPEC_PLAN
    for name in names:
        node = node.child(name)
    assert node.key is not None, names
    return node.key.field


@pytest.mark.parametrize("names", list(REQUIRED_ITEM_FIELDS), ids=".".join)
def test_each_list_kind_needs_its_required_attributes(names: tuple[str, ...]) -> None:
    key = _key_field(names)
    item = {key: "k1"}
    result = run({**WORKER, **_nest(names, [item])})
    where = ".".join(names) + f"[{key}=k1]"
    expected = [
        RunnableIssue(
            "worker", (*names, Match(key, "k1"), attr), f"mandatory {attr} of {where} is not provided"
        )
        for attr in REQUIRED_ITEM_FIELDS[names]
        if attr != key
    ]
    assert list(result.issues[: len(expected)]) == expected
    assert not result.is_runnable


FULL_ITEMS: dict[tuple[str, ...], dict[str, Any]] = {
    ("ports",): {"name": "web", "container": 8080, "serviceType": "ClusterIP"},
    ("exposedUrls",): {"name": "nb", "container": 8888},
    ("relatedUrls",): {"name": "docs", "url": "https://docs", "type": "documentation"},
    ("tolerations",): {"name": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    ("compute", "extendedResources"): {"resource": "rdma/a", "quantity": "1"},
    ("storage", "pvc"): {"name": "p", "path": "/p", "claimName": "p"},
    ("storage", "nfs"): {"name": "n", "server": "s", "path": "/export", "mountPath": "/n"},
    ("storage", "s3"): {"name": "s", "bucket": "b", "path": "/s"},
    ("storage", "git"): {"name": "g", "repository": "https://git/r", "path": "/g"},
    ("storage", "hostPath"): {"name": "h", "path": "/host", "mountPath": "/h"},
    ("storage", "configMapVolume"): {"name": "c", "configMap": "cm", "mountPath": "/c"},
    ("storage", "secretVolume"): {"name": "s", "secret": "sec", "mountPath": "/s"},
    ("storage", "emptyDirVolume"): {"name": "e", "path": "/e"},
    ("storage", "dataVolume"): {"id": "11111111-1111-4111-8111-111111111111", "mountPath": "/d"},
}


def test_every_required_list_kind_has_a_complete_example() -> None:
    assert set(FULL_ITEMS) == set(REQUIRED_ITEM_FIELDS)


@pytest.mark.parametrize("names", list(FULL_ITEMS), ids=".".join)
def test_a_complete_item_is_runnable(names: tuple[str, ...]) -> None:
    spec = {**WORKER, **_nest(names, [FULL_ITEMS[names]])}
    assert run(spec, spec).is_runnable


def test_an_empty_string_is_missing() -> None:
    spec = worker(ports=[{"name": "web", "container": 8080, "serviceType": ""}])
    assert fields(run(spec)) == ["ports[name=web].serviceType"]


def test_a_port_without_name_is_named_by_its_container() -> None:
    spec = worker(ports=[{"container": 8080}])
    assert fields(run(spec)) == ["ports[container=8080].serviceType"]


def test_toleration_rules() -> None:
    spec = worker(
        tolerations=[
            {"name": "a", "operator": "Exists", "effect": "NoSchedule"},
            {"name": "b", "operator": "Equal", "effect": "NoSchedule"},
            {"name": "c", "operator": "Exists", "effect": "NoSchedule", "seconds": 30},
            {"name": "d", "operator": "Exists", "effect": "NoExecute", "seconds": 30},
        ]
    )
    assert fields(run(spec)) == ["tolerations[name=b].key", "tolerations[name=c].seconds"]


def test_exposed_url_with_both_users_and_groups() -> None:
    spec = worker(
        exposedUrls=[{"name": "nb", "container": 8888, "authorizedUsers": ["a"], "authorizedGroups": ["g"]}]
    )
    assert fields(run(spec)) == ["exposedUrls[name=nb]"]


def test_pvc_needs_a_claim() -> None:
    assert fields(run(worker(storage={"pvc": [{"name": "p", "path": "/p"}]}))) == [
        "storage.pvc[name=p].claimName"
    ]
    claim_info = {"name": "p", "path": "/p", "claimInfo": {"size": "1Gi"}}
    assert run(worker(storage={"pvc": [claim_info]})).is_runnable


@pytest.mark.parametrize(
    ("request_", "limit", "runnable"),
    [(4, 2, False), (2, 2, True), (0.5, 1, True), (1.5, 1, False)],
)
def test_cpu_core_request_against_limit(request_: float, limit: float, runnable: bool) -> None:
    result = run(worker(compute={"cpuCoreRequest": request_, "cpuCoreLimit": limit}))
    assert result.is_runnable is runnable
    if not runnable:
        assert result.issues == (
            RunnableIssue(
                "worker",
                ("compute", "cpuCoreRequest"),
                f"compute.cpuCoreRequest {request_} is above compute.cpuCoreLimit {limit}",
            ),
        )


@pytest.mark.parametrize(
    ("request_", "limit", "runnable"),
    [
        ("20M", "1Gi", True),
        ("2Gi", "1Gi", False),
        ("1Gi", "1024Mi", True),
        ("1025Mi", "1Gi", False),
        ("4G", "16Gi", True),
        ("900G", "1Ti", True),
        ("1.5Gi", "1536Mi", True),
        ("1Gi", "1G", False),
    ],
)
def test_memory_request_against_limit_compares_quantities(request_: str, limit: str, runnable: bool) -> None:
    for side in ("cpuMemory", "gpuMemory"):
        compute = {f"{side}Request": request_, f"{side}Limit": limit}
        if side == "gpuMemory":
            compute.update(gpuDevicesRequest=1, gpuRequestType="memory")
        result = run(worker(compute=compute))
        assert result.is_runnable is runnable, (side, result.issues)
        if not runnable:
            assert fields(result) == [f"compute.{side}Request"]


def test_a_request_without_a_limit_is_fine() -> None:
    assert run(worker(compute={"cpuCoreRequest": 64, "cpuMemoryRequest": "1Ti"})).is_runnable


def test_an_invalid_quantity_is_an_issue() -> None:
    result = run(worker(compute={"cpuMemoryRequest": "lots", "cpuMemoryLimit": "1Gi"}))
    assert fields(result) == ["compute.cpuMemoryRequest"]
    assert "'lots' is not a valid quantity" in messages(result)[0]


def test_gpu_portion_request_above_limit() -> None:
    compute = {
        "gpuDevicesRequest": 1,
        "gpuRequestType": "portion",
        "gpuPortionRequest": 0.75,
        "gpuPortionLimit": 0.5,
    }
    assert messages(run(worker(compute=compute))) == [
        "compute.gpuPortionRequest 0.75 is above compute.gpuPortionLimit 0.5"
    ]


@pytest.mark.parametrize(
    ("kind", "missing"), [("portion", "gpuPortionRequest"), ("memory", "gpuMemoryRequest")]
)
def test_gpu_request_type_needs_its_request(kind: str, missing: str) -> None:
    result = run(worker(compute={"gpuDevicesRequest": 1, "gpuRequestType": kind}))
    assert result.issues == (
        RunnableIssue("worker", ("compute", missing), f"gpuRequestType {kind} needs compute.{missing}"),
    )


def test_gpu_memory_request_type_with_several_devices() -> None:
    compute = {"gpuDevicesRequest": 2, "gpuRequestType": "memory", "gpuMemoryRequest": "10Gi"}
    assert fields(run(worker(compute=compute))) == ["compute.gpuRequestType"]


@pytest.mark.parametrize(("low", "high", "runnable"), [(4, 2, False), (2, 2, True), (1, 8, True)])
def test_min_replicas_against_max(low: int, high: int, runnable: bool) -> None:
    result = run(worker(minReplicas=low, maxReplicas=high))
    assert result.is_runnable is runnable
    if not runnable:
        assert messages(result) == [f"minReplicas {low} is above maxReplicas {high}"]


def test_every_issue_in_a_stable_order() -> None:
    spec = {
        "distributedFramework": None,
        "ports": [{"name": "web", "container": 8080}],
        "storage": {"nfs": [{"name": "data", "path": "/export", "mountPath": "/data"}]},
        "compute": {"cpuCoreRequest": 16, "cpuCoreLimit": 8},
        "minReplicas": 4,
        "maxReplicas": 2,
    }
    master = {"compute": {"cpuMemoryRequest": "2Gi", "cpuMemoryLimit": "1Gi"}}
    result = run(spec, master, separate=True)
    assert [(i.replica, format_path(i.field)) for i in result.issues] == [
        ("worker", "image"),
        ("worker", "distributedFramework"),
        ("worker", "ports[name=web].serviceType"),
        ("worker", "storage.nfs[name=data].server"),
        ("worker", "compute.cpuCoreRequest"),
        ("worker", "minReplicas"),
        ("master", "image"),
        ("master", "compute.cpuMemoryRequest"),
    ]
    assert result.issue == "mandatory image is not provided"
    assert run(spec, master, separate=True) == result


@pytest.mark.parametrize(
    ("framework", "fields_", "warned"),
    [
        (
            "PyTorch",
            {"slotsPerWorker": 2, "sshAuthMountPath": "/root/.ssh", "mpiLauncherCreationPolicy": "AtStartup"},
            ["slotsPerWorker", "sshAuthMountPath", "mpiLauncherCreationPolicy"],
        ),
        ("MPI", {"minReplicas": 1, "maxReplicas": 2}, ["minReplicas", "maxReplicas"]),
        ("TF", {"slotsPerWorker": 2, "minReplicas": 1}, ["slotsPerWorker", "minReplicas"]),
        ("MPI", {"slotsPerWorker": 2, "sshAuthMountPath": "/root/.ssh"}, []),
        ("PyTorch", {"minReplicas": 1, "maxReplicas": 2}, []),
    ],
)
def test_framework_warnings_keep_it_runnable(
    framework: str, fields_: dict[str, Any], warned: list[str]
) -> None:
    result = run(worker(distributedFramework=framework, **fields_))
    assert result.is_runnable
    assert [w.field for w in result.warnings] == [(name,) for name in warned]
    for warning in result.warnings:
        assert warning.kind is WarningKind.FRAMEWORK_IGNORES_FIELD
        assert warning.replica == "worker"
        assert framework in warning.message


def test_extra_warnings_are_kept_and_do_not_block() -> None:
    extra = (
        CompositionWarning(
            WarningKind.UNMATCHED_EXCLUSION,
            "worker",
            parse_path("labels[name=orgg]"),
            "exclusion matches nothing",
        ),
    )
    result = check(WORKER, MASTER, False, SPEC_PLAN, extra)
    assert result.is_runnable
    assert result.warnings == extra
    assert result.to_dict()["warnings"] == [
        {"replica": "worker", "field": "labels[name=orgg]", "message": "exclusion matches nothing"}
    ]


def test_an_issue_names_its_field_by_a_typed_path_and_shows_it_as_text() -> None:
    spec = worker(ports=[{"container": 8080}])
    (issue,) = run(spec).issues
    assert issue.field == ("ports", Match("container", 8080), "serviceType")
    assert issue.to_dict() == {
        "replica": "worker",
        "field": "ports[container=8080].serviceType",
        "message": "mandatory serviceType of ports[container=8080] is not provided",
        "rule": None,  # not about a policy (POLICY.md); a compliance issue also has its source
    }


def test_a_warning_with_a_location_shows_it_after_the_sentence() -> None:
    from template_engine.errors import Location

    warning = CompositionWarning(
        WarningKind.UNMATCHED_EXCLUSION,
        "master",
        parse_path("labels[name=orgg]"),
        "exclusion matches nothing",
        Location("system/defaults.yaml", 7, 5, "system defaults"),
    )
    assert warning.render() == "exclusion matches nothing [system/defaults.yaml:7]"
    assert warning.one_line() == "labels[name=orgg]: exclusion matches nothing [system/defaults.yaml:7]"
    assert warning.to_dict() == {
        "replica": "master",
        "field": "labels[name=orgg]",
        "message": "exclusion matches nothing [system/defaults.yaml:7]",
    }


@pytest.mark.parametrize(
    ("variable", "expected"),
    [
        ({"name": "A", "value": "1"}, []),
        ({"name": "A", "secret": {"name": "s", "key": "k"}}, []),
        (
            {"name": "A", "value": "1", "secret": {"name": "s", "key": "k"}},
            ["environmentVariables[name=A] has more than one value source (value, secret); give exactly one"],
        ),
        (
            {"name": "A", "configMap": {"name": "c", "key": "k"}, "podFieldRef": {"path": "metadata.name"}},
            [
                "environmentVariables[name=A] has more than one value source (configMap, podFieldRef); "
                "give exactly one"
            ],
        ),
    ],
)
def test_an_environment_variable_takes_exactly_one_value_source(
    variable: dict[str, Any], expected: list[str]
) -> None:
    assert messages(run(worker(environmentVariables=[variable]))) == expected


#: A worker with one of every issue the runnable rules word (issue 33: each says whether it names its field).
EVERY_ISSUE = worker(
    image=None,
    minReplicas=4,
    maxReplicas=2,
    tolerations=[{"operator": "Equal", "seconds": 5, "effect": "NoSchedule"}],
    exposedUrls=[{"container": 80, "authorizedUsers": ["a"], "authorizedGroups": ["b"]}],
    environmentVariables=[{"name": "A", "value": "1", "secret": {"name": "s", "key": "k"}}],
    storage={"pvc": [{"name": "data", "path": "/data"}], "nfs": [{"name": "n"}]},
    compute={
        "cpuCoreRequest": 4,
        "cpuCoreLimit": 2,
        "cpuMemoryRequest": "lots",
        "gpuRequestType": "memory",
        "gpuDevicesRequest": 2,
    },
)


def test_each_issue_says_whether_its_sentence_names_its_field_and_its_line_follows() -> None:
    issues = run(EVERY_ISSUE).issues
    assert len(issues) > 10
    for issue in issues:
        # the flag is set where the issue is worded; here (a test) the text is read to hold it to its word
        assert issue.names_field == issue.message.startswith(format_path(issue.field)), issue
        field = "" if issue.names_field else f" {format_path(issue.field)}"
        assert issue.one_line() == f"{issue.replica}{field}: {issue.message}"
    assert {i.names_field for i in issues} == {True, False}


def test_a_line_is_made_of_the_parts_it_is_given() -> None:
    from template_engine.runnable import issue_line

    assert issue_line("worker", "image", "mandatory image is not provided") == (
        "worker image: mandatory image is not provided"
    )
    assert issue_line("worker", "", "numWorkers is 6") == "worker: numWorkers is 6"
    # what the line says depends on the issue's record, never on its words
    named = RunnableIssue("worker", ("image",), "image is odd", names_field=True)
    unnamed = RunnableIssue("worker", ("image",), "image is odd")
    assert (named.one_line(), unnamed.one_line()) == ("worker: image is odd", "worker image: image is odd")


def test_every_issue_of_the_example_org_says_whether_it_names_its_field(example_root: Any) -> None:
    # Compliance issues (policy/check.py words each from its field), the kinds' mandatory fields, the
    # cluster's refusals: the flag each carries holds for its sentence.
    from template_engine import load_org
    from template_engine.diffing.pairs import compose_pair, pairs

    org = load_org(example_root)
    issues = [
        issue
        for pair in pairs(org)
        if (composition := compose_pair(org, pair).composition) is not None
        for issue in composition.runnable.issues
    ]
    assert {issue.rule is not None for issue in issues} == {True, False}
    for issue in issues:
        if issue.field:  # an issue of no field (an asset the kind may not use) has nothing to name
            assert issue.names_field == issue.message.startswith(format_path(issue.field)), issue


def test_keyed_path_names_keyed_items_by_key_and_keeps_what_the_spec_does_not_have() -> None:
    """One function names list items by key for the runnable check and for a submission's refused parts
    (issue 33): an item of a keyed list by its key, an index the list does not have, or a path through a
    value of another shape, as given."""
    spec = {"environmentVariables": [{"name": "A", "value": "1"}, {"name": "B", "value": 2}]}
    keyed = keyed_path(spec, ("environmentVariables", 1, "value"), SPEC_PLAN)
    assert keyed[0] == "environmentVariables" and keyed[2] == "value"
    assert getattr(keyed[1], "value", None) == "B"
    assert keyed_path(spec, ("environmentVariables", 5, "value"), SPEC_PLAN) == (
        "environmentVariables",
        5,
        "value",
    )
    assert keyed_path({"environmentVariables": "x"}, ("environmentVariables", 0), SPEC_PLAN) == (
        "environmentVariables",
        0,
    )
