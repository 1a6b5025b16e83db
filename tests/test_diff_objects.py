"""``diffing.objects``: the changes between two compositions' cluster objects, by object path."""

from __future__ import annotations

import copy
from typing import Any

from template_engine.diffing.objects import diff_objects


def job(**container: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "pytorch", "image": "python:3.11", **container}]}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "job", "namespace": "runai-vision"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": pod}}}},
    }


def claim(name: str, size: str) -> dict[str, Any]:
    return {"kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": {"size": size}}


CONTAINER = "PyTorchJob.spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"


def rendered(objects: list[dict[str, Any]] | None, other: list[dict[str, Any]] | None) -> list[str]:
    return [change.render() for change in diff_objects(objects, other)]


def test_equal_objects_have_no_changes() -> None:
    assert diff_objects([job()], [job()]) == []
    assert diff_objects(None, None) == []


def test_a_changed_leaf_is_named_by_its_object_path() -> None:
    (change,) = diff_objects(
        [job(resources={"limits": {"cpu": 8}})], [job(resources={"limits": {"cpu": 16}})]
    )
    assert change.render() == f"{CONTAINER}.resources.limits.cpu: 8 -> 16"
    assert change.to_dict() == {
        "object": f"{CONTAINER}.resources.limits.cpu",
        "change": "changed",
        "old": 8,
        "new": 16,
    }


def test_a_number_that_becomes_a_string_is_a_change() -> None:
    assert rendered([job(resources={"limits": {"cpu": 8}})], [job(resources={"limits": {"cpu": "8"}})]) == [
        f'{CONTAINER}.resources.limits.cpu: 8 -> "8"'
    ]


def test_named_items_are_matched_by_name_not_place() -> None:
    env = [{"name": "TZ", "value": "UTC"}, {"name": "HOME", "value": "/home"}]
    before, after = job(env=env), job(env=[{"name": "NEW", "value": "1"}, *copy.deepcopy(env)])
    after_home = job(env=[{"name": "NEW", "value": "1"}, env[0], {"name": "HOME", "value": "/root"}])
    assert rendered([before], [after]) == [f'{CONTAINER}.env[0]: added {{"name": "NEW", "value": "1"}}']
    assert rendered([before], [after_home]) == [
        f'{CONTAINER}.env[0]: added {{"name": "NEW", "value": "1"}}',
        f'{CONTAINER}.env[2].value: "/home" -> "/root"',
    ]
    assert rendered([before], [job(env=env[::-1])]) == [
        f'{CONTAINER}.env: order ["TZ", "HOME"] -> ["HOME", "TZ"]'
    ]


def test_ports_are_matched_by_container_port_when_not_all_have_a_name() -> None:
    ports = [{"containerPort": 6006}, {"containerPort": 29400, "name": "c10d"}]
    assert rendered([job(ports=ports)], [job(ports=ports[1:])]) == [
        f'{CONTAINER}.ports[0]: removed (was {{"containerPort": 6006}})'
    ]


def test_lists_without_identity_are_compared_whole() -> None:
    before = job(args=["a", "b"])
    assert rendered([before], [job(args=["a", "c"])]) == [f'{CONTAINER}.args: ["a", "b"] -> ["a", "c"]']


def test_objects_beyond_the_job_are_named_by_kind_and_name() -> None:
    before = [job(), claim("scratch", "1Ti")]
    after = [job(), claim("scratch", "2Ti"), claim("cache", "1Gi")]
    assert rendered(before, after) == [
        'PersistentVolumeClaim/scratch.spec.size: "1Ti" -> "2Ti"',
        'PersistentVolumeClaim/cache: added {"kind": "PersistentVolumeClaim", "metadata": {"name": "cache"}, '
        '"spec": {"size": "1Gi"}}',
    ]
    assert [c.kind for c in diff_objects(after, before)] == ["changed", "removed"]


def test_a_framework_change_replaces_the_job() -> None:
    other = {**job(), "kind": "TFJob"}
    assert [(c.object, c.kind) for c in diff_objects([job()], [other])] == [
        ("TFJob", "added"),
        ("PyTorchJob", "removed"),
    ]
