"""The fast validators say yes exactly when the full ones find nothing (issue 20: one rule, two twins).

``schemas.fast_accepts`` (jsonschema_rs on the CRD as ``fastpath.structural_schema`` spells it) against
``schemas.full_schema_problems`` (jsonschema with Kubernetes' keywords), and ``fast_core_accepts`` against
``full_core_problems``, on objects generated around valid ones: values replaced by others of a wrong type,
unknown fields, int-or-string values, duplicate list-map items, nulls, integers past int32 and int64,
patterns with a final newline, dates. Values are JSON (string keys); a value that is no JSON is refused by
the fast path and so always explained by the full one (``test_a_value_that_is_no_json_goes_to_the_full_...``).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_schemas import VALID, minimal

from template_engine.cluster import fastpath, schemas
from template_engine.cluster.schemas import (
    KINDS,
    crd_schema,
    fast_accepts,
    fast_core_accepts,
    full_core_problems,
    full_schema_problems,
    schema_problems,
)

PROPERTIES = settings(max_examples=300, derandomize=True, deadline=None)

Path = tuple[str | int, ...]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2, 2**31 - 1, 2**31, -(2**31), -(2**31) - 1, 2**63 - 1, 2**63, 2**70]),
    st.sampled_from([2.0, 2.5, -0.0, 1e10, 3e9]),
    st.sampled_from(
        [
            "",
            "x",
            "pytorch",
            "1Gi",
            "1Gi\n",
            "500m",
            "lots",
            "TCP",
            "UDP",
            "Never",
            "OnFailure",
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05Z\n",
            "2024-13-02T03:04:05Z",
            "MPICH",
            "LAM",
        ]
    ),
    st.text(max_size=4),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["name", "image", "containerPort", "protocol", "x", "cpu"]), inner, max_size=3
        ),
    ),
    max_leaves=6,
)


def _places(value: Any, path: Path = ()) -> Iterator[Path]:
    yield path
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _places(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _places(inner, (*path, index))


def _at(obj: Any, path: Path) -> Any:
    for step in path:
        obj = obj[step]
    return obj


@st.composite
def mutated(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """``base`` with one to three changes, each at a place it has: replace, remove, add a field, or repeat
    a list item (a duplicate by its keys, or the same item with one key changed)."""
    obj = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        places = list(_places(obj))
        path = draw(st.sampled_from(places))
        node = _at(obj, path)
        action = draw(st.sampled_from(["replace", "remove", "add", "repeat"]))
        if action == "replace" and path:
            _at(obj, path[:-1])[path[-1]] = draw(VALUES)
        elif action == "remove" and path:
            parent = _at(obj, path[:-1])
            del parent[path[-1]]
        elif action == "add" and isinstance(node, dict):
            name = draw(
                st.sampled_from(["extra", "protocol", "ports", "env", "resources", "limits", "status"])
            )
            node[name] = draw(VALUES)
        elif action == "repeat" and isinstance(node, list) and node:
            item = copy.deepcopy(draw(st.sampled_from(node)))
            if isinstance(item, dict) and item and draw(st.booleans()):
                key = draw(st.sampled_from(sorted(item)))
                item[key] = draw(SCALARS)
            node.append(item)
    return obj


def _with_lists(kind: str) -> dict[str, Any]:
    """A valid job of ``kind`` with the list-maps the mapping writes: ports, env, volume mounts, volumes."""
    obj = minimal(kind)
    replicas = obj["spec"][schemas_replicas_key(kind)]
    for replica in replicas.values():
        pod = replica["template"]["spec"]
        container = pod["containers"][0]
        container["ports"] = [{"containerPort": 80}, {"containerPort": 80, "protocol": "UDP", "name": "b"}]
        container["env"] = [
            {"name": "A", "value": "1"},
            {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "x"}}},
        ]
        container["resources"] = {"limits": {"cpu": 2, "memory": "1Gi"}, "requests": {"cpu": "500m"}}
        container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        pod["volumes"] = [{"name": "data", "emptyDir": {}}]
        pod["tolerations"] = [{"key": "k", "operator": "Exists"}]
    obj["spec"]["runPolicy"] = {"activeDeadlineSeconds": 60, "schedulingPolicy": {"queue": "q"}}
    return obj


def schemas_replicas_key(kind: str) -> str:
    from template_engine.cluster.validity import REPLICAS_KEY

    return REPLICAS_KEY[kind][0]


BASES = {
    **{name: make() for name, make in sorted(VALID.items())},
    **{f"lists-{kind}": _with_lists(kind) for kind in KINDS},
}


def test_the_bases_are_valid_and_every_vendored_kind_has_a_fast_validator() -> None:
    for name, obj in BASES.items():
        assert full_schema_problems(obj) == [], name
        assert fast_accepts(obj), name
    assert all(schemas._fast_crd(kind) is not None for kind in KINDS)


@PROPERTIES
@given(data=st.data(), name=st.sampled_from(sorted(BASES)))
def test_the_fast_validator_accepts_exactly_what_the_full_one_finds_nothing_in(
    data: st.DataObject, name: str
) -> None:
    obj = data.draw(mutated(BASES[name]))
    problems = full_schema_problems(obj)
    assert fast_accepts(obj) == (problems == []), problems
    assert schema_problems(obj) == problems


def _pvc() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "labels": {"a": "b"}},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast",
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }


@PROPERTIES
@given(data=st.data())
def test_the_fast_core_validator_accepts_exactly_what_the_full_one_finds_nothing_in(
    data: st.DataObject,
) -> None:
    obj = data.draw(mutated(_pvc()))
    problems = full_core_problems(obj)
    assert fast_core_accepts(obj) == (problems == []), problems


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("metadata", "labels"), {1: "a"}),
        (("spec", "runPolicy"), {"activeDeadlineSeconds": __import__("datetime").date(2024, 1, 2)}),
    ],
)
def test_a_value_that_is_no_json_goes_to_the_full_validator(path: Path, value: Any) -> None:
    obj = minimal("PyTorchJob")
    _at(obj, path[:-1])[path[-1]] = value
    assert not fast_accepts(obj)
    assert schema_problems(obj) == full_schema_problems(obj)  # whatever it finds


def test_a_final_newline_does_not_match_as_go_reads_a_pattern() -> None:
    obj = minimal("PyTorchJob")
    obj["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"memory": "1Gi\n"}
    }
    assert [p.rule for p in full_schema_problems(obj)] == ["schema.pattern"]
    assert not fast_accepts(obj)
    assert schemas.go_regex("^a$").search("a\n") is None
    assert schemas.go_regex(r"^[$]\$$").search("$$") is not None


SMALL_DECLINED = [
    {"type": "object", "properties": {"a": {"type": "string", "nullable": True}}},
    {"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
    {"type": "object", "properties": {"a": {"type": "object", "x-kubernetes-embedded-resource": True}}},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 1}}},
]


@pytest.mark.parametrize("schema", SMALL_DECLINED)
def test_what_the_rewriting_does_not_know_it_declines(schema: dict[str, Any]) -> None:
    assert fastpath.structural_schema(schema, {}, "^$") is None


def test_the_rewriting_of_a_crd() -> None:
    schema = fastpath.structural_schema(crd_schema("PyTorchJob"), {"int32": (-1, 1)}, "^D$")
    assert schema is not None
    assert schema["additionalProperties"] is False
    assert schema["properties"]["metadata"] == {}
    replica = schema["properties"]["spec"]["properties"]["pytorchReplicaSpecs"]["additionalProperties"]
    assert replica["properties"]["replicas"] == {"type": ["integer", "null"], "minimum": -1, "maximum": 1}
    container = replica["properties"]["template"]["properties"]["spec"]["properties"]["containers"]
    assert container[fastpath.LIST_KEYWORD] == {"kind": "map", "keys": ["name"], "defaults": {}}
    assert "name" in container["items"]["required"]
    ports = container["items"]["properties"]["ports"]
    assert ports[fastpath.LIST_KEYWORD]["defaults"] == {"protocol": "TCP"}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_packaged_fast_schema_is_the_rewrite_of_the_vendored_crd(kind: str) -> None:
    """The fast validator reads its schema from ``fast_schemas/*.fast.json`` (one ``json.loads``, not the
    YAML CRD): it must be what ``structural_schema`` makes of the vendored CRD now, key order included
    (``schemas.write_fast_schemas`` rewrites the files)."""
    folder = resources.files("template_engine.cluster").joinpath("fast_schemas")
    packaged = folder.joinpath(schemas.fast_schema_file(kind))
    text = packaged.read_text(encoding="utf-8")
    assert text == json.dumps(schemas.fast_crd_schema(kind)) + "\n"


def test_a_missing_packaged_fast_schema_is_computed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(schemas, "fast_schema_file", lambda kind: "no-such-file.fast.json")
    assert schemas._packaged_fast_schema("PyTorchJob") == schemas.fast_crd_schema("PyTorchJob")
