"""The vendored CRD schemas and the validator that reads them as the API server does."""

from __future__ import annotations

import copy
import hashlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema_rs
import kubernetes_validate
import pytest
import yaml

from template_engine.cluster import schemas
from template_engine.cluster.schemas import KINDS, core_problems, crd_schema, schema_problems

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "cluster"
SHARED = REPO.parent / "shared"
WORKER = ("spec", "pytorchReplicaSpecs", "Worker")
CONTAINER = (*WORKER, "template", "spec", "containers", 0)

#: The copies and the SHA-256 of the shared files they were made from (.ci/run also diffs them).
COPIES: dict[str, tuple[str, str]] = {
    **{
        f"template_engine/cluster/crds/{name}": (f"reference/cluster/crds/{name}", digest)
        for name, digest in [
            ("kubeflow.org_jaxjobs.yaml", "f976e7550e66a0e8e771baa6f43851b5ba9e532917cb63e2af003dc2c40804fd"),
            (
                "kubeflow.org_mpijobs.v2beta1.yaml",
                "78b0131f931fcc8d99f6ce0407281f41b62527e443ec691d26d9634b390ad3bb",
            ),
            (
                "kubeflow.org_pytorchjobs.yaml",
                "8b8a8a719cc94173169290251e817f7ac2bb425c20b6c2fa813397bcf4e932ed",
            ),
            ("kubeflow.org_tfjobs.yaml", "6028ab677922ee558d279c9cc2028500372875eec327ed6819fc4dc2796cda9e"),
            (
                "kubeflow.org_xgboostjobs.yaml",
                "b5dfbe6e93ed51e71f5b93ba89a279086e2f2d396f0fed2686a0fbe3e535a7a6",
            ),
        ]
    },
    "docs/cluster-contract.md": (
        "CLUSTER.md",
        "d988e94de0d87b6fa57982cbbb0a46885af98999f1bfe61a025e86673e25c416",
    ),
    "tests/fixtures/cluster/batch_pytorch-job.yaml": (
        "reference/cluster/kai/batch_pytorch-job.yaml",
        "448c98353cdf5493ba716252c7267fbd6fed1ae279dfd3cd6aa52d6dad30f178",
    ),
    "tests/fixtures/cluster/elastic_pytorch-elastic.yaml": (
        "reference/cluster/kai/elastic_pytorch-elastic.yaml",
        "8343053842c17235cc44a393488c8896909a6fa8aa4da53b142ff6d34a245cb8",
    ),
}


@pytest.mark.parametrize("copy_path", sorted(COPIES))
def test_the_copies_are_the_shared_files(copy_path: str) -> None:
    shared, digest = COPIES[copy_path]
    data = (REPO / copy_path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest
    if SHARED.is_dir():  # beside the repository (not in every clone): byte for byte, too
        assert data == (SHARED / shared).read_bytes()


def test_every_vendored_crd_is_copied() -> None:
    names = {name for _, name in KINDS.values()}
    assert names == {p.name for p in (REPO / "template_engine/cluster/crds").glob("*.yaml")}


# -- valid objects -------------------------------------------------------------------------------------------


def _pod(container: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": container, "image": "busybox:1.36"}]}}


def _replica(container: str, replicas: int = 1) -> dict[str, Any]:
    return {"replicas": replicas, "restartPolicy": "OnFailure", "template": _pod(container)}


MINIMAL: dict[str, dict[str, Any]] = {
    "PyTorchJob": {"pytorchReplicaSpecs": {"Master": _replica("pytorch"), "Worker": _replica("pytorch", 2)}},
    "TFJob": {"tfReplicaSpecs": {"Chief": _replica("tensorflow"), "Worker": _replica("tensorflow", 2)}},
    "XGBoostJob": {"xgbReplicaSpecs": {"Master": _replica("xgboost"), "Worker": _replica("xgboost", 2)}},
    "JAXJob": {"jaxReplicaSpecs": {"Worker": _replica("jax", 2)}},
    "MPIJob": {
        "slotsPerWorker": 1,
        "sshAuthMountPath": "/root/.ssh",
        "runPolicy": {"cleanPodPolicy": "Running"},
        "mpiReplicaSpecs": {"Launcher": _replica("mpi"), "Worker": _replica("mpi", 2)},
    },
}


def minimal(kind: str) -> dict[str, Any]:
    return {
        "apiVersion": KINDS[kind][0],
        "kind": kind,
        "metadata": {"name": "train", "labels": {"kai.scheduler/queue": "default-queue"}},
        "spec": copy.deepcopy(MINIMAL[kind]),
    }


def _sample(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((FIXTURES / name).read_text(encoding="utf-8"))
    return loaded


def _rust_valid(obj: dict[str, Any]) -> bool:
    """The independent validator: jsonschema-rs (Draft 4), knowing none of Kubernetes' extensions."""
    return bool(jsonschema_rs.Draft4Validator(dict(crd_schema(obj["kind"]))).is_valid(obj))


VALID: dict[str, Callable[[], dict[str, Any]]] = {
    "kai-batch": lambda: _sample("batch_pytorch-job.yaml"),
    "kai-elastic": lambda: _sample("elastic_pytorch-elastic.yaml"),
    **{f"minimal-{kind}": (lambda kind=kind: minimal(kind)) for kind in KINDS},  # type: ignore[misc]
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_valid_objects_validate_here_and_for_jsonschema_rs(name: str) -> None:
    obj = VALID[name]()
    assert schema_problems(obj) == []
    assert _rust_valid(obj)


def test_the_served_version_is_read() -> None:
    for kind in KINDS:
        schema = crd_schema(kind)
        assert schema["properties"]["kind"]["type"] == "string", kind
        assert crd_schema(kind) is schema  # read once
    assert set(crd_schema("MPIJob")["properties"]["spec"]["properties"]) >= {
        "slotsPerWorker",
        "mpiReplicaSpecs",
    }


def test_importing_reads_nothing_and_imports_no_validator() -> None:
    code = (
        "import sys; import template_engine.cluster.schemas as s;"
        "print(s.crd_schema.cache_info().currsize,"
        " 'jsonschema' in sys.modules, 'kubernetes_validate' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.split() == ["0", "False", "False"]


# -- broken objects: each extension and keyword, with the exact path and rule ------------------------------


def _set(obj: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    node: Any = obj
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value


def _get(obj: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    node: Any = obj
    for step in path:
        node = node[step]
    return node


Change = Callable[[dict[str, Any]], None]


def _ports(*ports: dict[str, Any]) -> Change:
    return lambda obj: _set(obj, (*CONTAINER, "ports"), list(ports))


BROKEN: dict[str, tuple[Change, list[tuple[tuple[str | int, ...], str]]]] = {
    "unknown field at the top": (lambda o: _set(o, ("extra",), 1), [(("extra",), "schema.unknownField")]),
    "unknown field in spec": (
        lambda o: _set(o, ("spec", "priority"), 1),
        [(("spec", "priority"), "schema.unknownField")],
    ),
    "unknown field in a replica spec": (
        lambda o: _set(o, (*WORKER, "minAvailable"), 1),
        [((*WORKER, "minAvailable"), "schema.unknownField")],
    ),
    "unknown field in a container": (
        lambda o: _set(o, (*CONTAINER, "gpu"), 1),
        [((*CONTAINER, "gpu"), "schema.unknownField")],
    ),
    "unknown field even when null": (
        lambda o: _set(o, (*CONTAINER, "gpu"), None),
        [((*CONTAINER, "gpu"), "schema.unknownField")],
    ),
    "a string for an int32": (
        lambda o: _set(o, (*WORKER, "replicas"), "2"),
        [((*WORKER, "replicas"), "schema.type")],
    ),
    "an int32 out of range": (
        lambda o: _set(o, (*WORKER, "replicas"), 2**31),
        [((*WORKER, "replicas"), "schema.format")],
    ),
    "an int64 out of range": (
        lambda o: _set(o, ("spec", "runPolicy"), {"activeDeadlineSeconds": 2**63}),
        [(("spec", "runPolicy", "activeDeadlineSeconds"), "schema.format")],
    ),
    "a bool for an integer": (
        lambda o: _set(o, (*WORKER, "replicas"), True),
        [((*WORKER, "replicas"), "schema.type")],
    ),
    "int-or-string given a list": (
        lambda o: _set(o, (*CONTAINER, "resources"), {"limits": {"cpu": [1]}}),
        [((*CONTAINER, "resources", "limits", "cpu"), "schema.intOrString")],
    ),
    "int-or-string quantity pattern": (
        lambda o: _set(o, (*CONTAINER, "resources"), {"limits": {"memory": "lots"}}),
        [((*CONTAINER, "resources", "limits", "memory"), "schema.pattern")],
    ),
    "two containers named alike": (
        lambda o: _get(o, (*WORKER, "template", "spec", "containers")).append(
            {"name": "pytorch", "image": "x"}
        ),
        [(((*WORKER, "template", "spec", "containers", 1)), "schema.listMapKeys")],
    ),
    "two ports with the same containerPort and protocol": (
        _ports(
            {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "TCP", "name": "b"}
        ),
        [((*CONTAINER, "ports", 1), "schema.listMapKeys")],
    ),
    "a port's protocol defaults to TCP before the keys are compared": (
        _ports({"containerPort": 80}, {"containerPort": 80, "protocol": "TCP"}),
        [((*CONTAINER, "ports", 1), "schema.listMapKeys")],
    ),
    "a list-map item that is no object": (
        _ports({"containerPort": 80}, "8080"),
        [((*CONTAINER, "ports", 1), "schema.listMapKeys"), ((*CONTAINER, "ports", 1), "schema.type")],
    ),
    "required, missing": (
        lambda o: _get(o, CONTAINER).pop("name"),
        [((*CONTAINER, "name"), "schema.required")],
    ),
    "required, given null (pruned, so missing)": (
        lambda o: _set(o, (*CONTAINER, "name"), None),
        [((*CONTAINER, "name"), "schema.required")],
    ),
    "a string for a boolean": (
        lambda o: _set(o, ("spec", "runPolicy"), {"suspend": "yes"}),
        [(("spec", "runPolicy", "suspend"), "schema.type")],
    ),
    "a wrong apiVersion": (
        lambda o: _set(o, ("apiVersion",), "kubeflow.org/v2"),
        [(("apiVersion",), "schema.apiVersion")],
    ),
    "metadata not an object": (lambda o: _set(o, ("metadata",), "train"), [(("metadata",), "schema.type")]),
    "metadata missing": (lambda o: o.pop("metadata"), [(("metadata",), "schema.required")]),
    "an unknown field in metadata (ObjectMeta is decoded strictly)": (
        lambda o: _set(o, ("metadata", "label"), {"a": "b"}),
        [(("metadata", "label"), "schema.unknownField")],
    ),
    "a label value that is no string": (
        lambda o: _set(o, ("metadata", "labels", "kai.scheduler/queue"), 3),
        [(("metadata", "labels", "kai.scheduler/queue"), "schema.type")],
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_object_names_the_path_and_rule(case: str) -> None:
    change, expected = BROKEN[case]
    obj = minimal("PyTorchJob")
    change(obj)
    problems = schema_problems(obj)
    assert [(p.path, p.rule) for p in problems] == expected
    assert all(p.kind == "PyTorchJob" and p.message for p in problems)


def test_nulls_the_api_server_prunes_are_no_error() -> None:
    obj = minimal("PyTorchJob")
    _set(obj, (*CONTAINER, "workingDir"), None)
    _set(obj, (*WORKER, "restartPolicy"), None)
    _set(obj, (*CONTAINER, "resources"), {"limits": {"cpu": None}})
    assert schema_problems(obj) == []
    _get(obj, (*WORKER, "template", "spec", "containers")).append(None)  # an item is not pruned
    assert [(p.path, p.rule) for p in schema_problems(obj)] == [
        ((*WORKER, "template", "spec", "containers", 1), "schema.type")
    ]


def test_an_unknown_kind_is_one_problem() -> None:
    obj = minimal("PyTorchJob") | {"kind": "Job"}
    assert [(p.kind, p.path, p.rule) for p in schema_problems(obj)] == [("Job", ("kind",), "schema.kind")]


ALL_AT_ONCE = [
    "unknown field at the top",
    "unknown field in a replica spec",
    "unknown field in a container",
    "an int64 out of range",
    "two ports with the same containerPort and protocol",
    "two containers named alike",
    "a wrong apiVersion",
]


def test_every_problem_at_once_in_order() -> None:
    obj = minimal("PyTorchJob")
    for case in ALL_AT_ONCE:
        BROKEN[case][0](obj)
    problems = schema_problems(obj)
    expected = sorted(found for case in ALL_AT_ONCE for found in BROKEN[case][1])
    assert sorted((p.path, p.rule) for p in problems) == expected
    assert problems == schema_problems(copy.deepcopy(obj))
    keys = [tuple((isinstance(s, str), s) for s in p.path) for p in problems]
    assert keys == sorted(keys)


def test_an_enum() -> None:
    obj = minimal("MPIJob")
    obj["spec"]["mpiImplementation"] = "MPICH"
    assert schema_problems(obj) == []
    obj["spec"]["mpiImplementation"] = "LAM"
    assert [(p.path, p.rule) for p in schema_problems(obj)] == [
        (("spec", "mpiImplementation"), "schema.enum")
    ]


def test_the_cross_check_is_not_vacuous() -> None:
    """jsonschema-rs does refuse what breaks the plain schema (here two wrong types)."""
    for path, value in [((*WORKER, "replicas"), "2"), ((*CONTAINER, "imagePullPolicy"), 3)]:
        obj = minimal("PyTorchJob")
        _set(obj, path, value)
        assert schema_problems(obj) != []
        assert not _rust_valid(obj)


def test_a_float_with_no_fraction_is_an_integer() -> None:
    """go-openapi reads 2.0 as the integer 2 (swag.IsFloat64AJSONInteger); 2.5 is not one."""
    obj = minimal("PyTorchJob")
    _set(obj, (*WORKER, "replicas"), 2.0)
    assert schema_problems(obj) == []
    _set(obj, (*WORKER, "replicas"), 2.5)
    assert [(p.path, p.rule) for p in schema_problems(obj)] == [((*WORKER, "replicas"), "schema.type")]


def test_the_queue_transition_rule_holds_on_create() -> None:
    obj = minimal("PyTorchJob")
    _set(obj, ("spec", "runPolicy"), {"schedulingPolicy": {"queue": "team-a"}})
    assert schema_problems(obj) == []


# -- extensions the vendored CRDs do not use, on a small structural schema -----------------------------------

SMALL: dict[str, Any] = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "free": {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {"n": {"type": "integer"}},
        },
        "inner": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "x-kubernetes-preserve-unknown-fields": True,
        },
        "strict": {
            "type": "object",
            "x-kubernetes-embedded-resource": True,
            "properties": {"a": {"type": "string"}},
        },
        "maybe": {"type": "string", "nullable": True},
        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "flags": {"type": "array", "items": {}, "x-kubernetes-list-type": "set"},
        "plain": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
        "labels": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "x-kubernetes-map-type": "atomic",
        },
        "ruled": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self.size() < 3", "message": "short"}],
        },
    },
}


def _small(obj: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    validator = schemas._structural_validator(SMALL)
    return sorted((tuple(e.absolute_path), str(e.validator)) for e in validator.iter_errors(obj))


def test_preserve_unknown_fields_accepts_anything_but_checks_what_it_names() -> None:
    assert _small({"free": {"any": {"thing": [1, None]}, "n": 1}}) == []
    assert _small({"free": {"n": "one"}}) == [(("free", "n"), "type")]


def test_an_embedded_resource_keeps_its_type_and_object_meta() -> None:
    good = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "anything": 1}, "data": {}}
    assert _small({"inner": good}) == []
    assert _small({"inner": {"metadata": {}}}) == [
        (("inner", "apiVersion"), "x-kubernetes-embedded-resource"),
        (("inner", "kind"), "x-kubernetes-embedded-resource"),
    ]
    assert _small({"strict": {"apiVersion": "v1", "kind": "K", "metadata": [], "b": 1}}) == [
        (("strict", "b"), "unknownField"),
        (("strict", "metadata"), "type"),
    ]


def test_nullable_sets_and_maps() -> None:
    assert _small({"maybe": None, "labels": {"a": "b"}, "plain": ["a", "a"]}) == []
    assert _small({"tags": ["a", "b", "a", "a"]}) == [(("tags", 2), "x-kubernetes-list-type")]
    assert _small({"flags": [1, True, 1.5, {"a": 1}, {"a": 1}]}) == [(("flags", 4), "x-kubernetes-list-type")]
    assert _small({"labels": {"a": 1}}) == [(("labels", "a"), "type")]


def test_a_cel_rule_that_is_not_a_transition_rule_is_reported_not_passed() -> None:
    assert _small({"ruled": "abcd"}) == [(("ruled",), "x-kubernetes-validations")]


# -- core objects: Kubernetes' own schema --------------------------------------------------------------------


def _pvc() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}},
    }


def test_a_valid_claim() -> None:
    assert core_problems(_pvc()) == []
    kubernetes_validate.validate(_pvc(), schemas.KUBERNETES_VERSION, strict=True)


def test_a_broken_claim_reports_every_error_where_kubernetes_validate_stops_at_one() -> None:
    pvc = _pvc()
    pvc["metadata"]["owner"] = "me"
    pvc["spec"]["volumeMode"] = 3
    pvc["spec"]["size"] = "10Gi"
    problems = core_problems(pvc)
    assert [(p.path, p.rule) for p in problems] == [
        (("metadata", "owner"), "schema.unknownField"),
        (("spec", "size"), "schema.unknownField"),
        (("spec", "volumeMode"), "schema.type"),
    ]
    with pytest.raises(kubernetes_validate.ValidationError) as first:
        kubernetes_validate.validate(pvc, schemas.KUBERNETES_VERSION, strict=True)
    assert tuple(first.value.path)[:1] in {p.path[:1] for p in problems}


def test_a_kind_kubernetes_does_not_know() -> None:
    assert [(p.path, p.rule) for p in core_problems({"apiVersion": "v1", "kind": "Claim"})] == [
        (("kind",), "schema.kind")
    ]
