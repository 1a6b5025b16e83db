"""Laws of the keyed merge (DESIGN.md "Merge rules"), checked with hypothesis on ``merge_layers``.

Layers are generated spec fragments: scalars, nested mappings (``compute``, ``security``), keyed lists
(``environmentVariables``, ``labels``, ``compute.extendedResources``) whose items may carry ``exclude: true``,
and scalar lists (``nodePools``) that are replaced whole.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.merge.engine import Layer, MergeResult, merge_layers
from template_engine.merge.plan import SPEC_PLAN

KEYS = ["A", "B", "C", "D", "E"]
#: (path to the keyed list, its key field)
KEYED: list[tuple[tuple[str, ...], str]] = [
    (("environmentVariables",), "name"),
    (("labels",), "name"),
    (("compute", "extendedResources"), "resource"),
]
SCALARS: list[tuple[str, ...]] = [
    ("image",),
    ("workingDir",),
    ("backoffLimit",),
    ("compute", "cpuCoreRequest"),
    ("compute", "gpuDevicesRequest"),
    ("security", "runAsUid"),
    ("security", "runAsNonRoot"),
]

LAWS = settings(max_examples=50, deadline=None)

words = st.sampled_from(["a", "b", "c", "img:1", "img:2", "/w", "x y"])
maybe = st.one_of(st.none(), words)


def _item(key_field: str) -> st.SearchStrategy[dict[str, Any]]:
    value_field = "quantity" if key_field == "resource" else "value"
    return st.builds(
        lambda key, value, exclude: {
            key_field: key,
            **({value_field: value} if value is not None else {}),
            **({"exclude": exclude} if exclude is not None else {}),
        },
        st.sampled_from(KEYS),
        maybe,
        st.sampled_from([None, None, True, False]),
    )


def _keyed_list(key_field: str) -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(_item(key_field), max_size=4, unique_by=lambda item: item[key_field])


@st.composite
def fragments(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if draw(st.booleans()):
        spec["image"] = draw(maybe)
    if draw(st.booleans()):
        spec["workingDir"] = draw(maybe)
    if draw(st.booleans()):
        spec["backoffLimit"] = draw(st.one_of(st.none(), st.integers(0, 9)))
    if draw(st.booleans()):
        spec["environmentVariables"] = draw(_keyed_list("name"))
    if draw(st.booleans()):
        spec["labels"] = draw(_keyed_list("name"))
    if draw(st.booleans()):
        spec["nodePools"] = draw(st.lists(st.sampled_from(["p1", "p2", "p3"]), max_size=3))
    if draw(st.booleans()):
        compute: dict[str, Any] = {}
        if draw(st.booleans()):
            compute["cpuCoreRequest"] = draw(st.one_of(st.none(), st.integers(0, 8)))
        if draw(st.booleans()):
            compute["gpuDevicesRequest"] = draw(st.one_of(st.none(), st.integers(0, 8)))
        if draw(st.booleans()):
            compute["extendedResources"] = draw(_keyed_list("resource"))
        spec["compute"] = compute or draw(st.sampled_from([{}, None]))
    if draw(st.booleans()):
        spec["security"] = draw(
            st.one_of(
                st.none(),
                st.fixed_dictionaries(
                    {},
                    optional={
                        "runAsUid": st.one_of(st.none(), st.integers(0, 2000)),
                        "runAsNonRoot": st.one_of(st.none(), st.booleans()),
                        "capabilities": st.lists(st.sampled_from(["CHOWN", "KILL", "NET_RAW"]), max_size=2),
                    },
                ),
            )
        )
    return spec


stacks = st.lists(fragments(), min_size=1, max_size=5)


def layers_of(specs: Sequence[Mapping[str, Any]]) -> list[Layer]:
    return [Layer(f"layer {i}", f"layer{i}.yaml", spec) for i, spec in enumerate(specs)]


def merge(specs: Sequence[Mapping[str, Any]]) -> MergeResult:
    return merge_layers(SPEC_PLAN, layers_of(specs))


def get(spec: Mapping[str, Any], path: Sequence[str]) -> Any:
    value: Any = spec
    for part in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def model_keyed(specs: Sequence[Mapping[str, Any]], path: tuple[str, ...], key: str) -> list[str]:
    """The surviving keys, in order, by the contract: first appearance, exclusion removes, re-add appends."""
    order: list[str] = []
    for spec in specs:
        for item in get(spec, path) or []:
            name = item[key]
            if item.get("exclude") is True:
                if name in order:
                    order.remove(name)
            elif name not in order:
                order.append(name)
    return order


def model_scalar(specs: Sequence[Mapping[str, Any]], path: tuple[str, ...]) -> Any:
    """The highest layer's non-null value, or None."""
    found = None
    for spec in specs:
        value = get(spec, path)
        if value is not None:
            found = value
    return found


@LAWS
@given(specs=stacks, position=st.integers(0, 5), nulls=st.booleans())
def test_an_empty_layer_changes_nothing(specs: list[dict[str, Any]], position: int, nulls: bool) -> None:
    empty: dict[str, Any] = {"image": None, "compute": None, "labels": None} if nulls else {}
    position = min(position, len(specs))
    with_empty = [*specs[:position], empty, *specs[position:]]
    assert merge(with_empty).spec == merge(specs).spec


@LAWS
@given(specs=stacks)
def test_inputs_are_not_mutated(specs: list[dict[str, Any]]) -> None:
    before = copy.deepcopy(specs)
    layers = layers_of(specs)
    result = merge_layers(SPEC_PLAN, layers)
    assert specs == before
    assert [layer.spec for layer in layers] == before
    # the result shares no containers with the inputs: changing it leaves them alone
    for items in (result.spec.get("environmentVariables") or [], result.spec.get("labels") or []):
        for item in items:
            item["value"] = "changed"
    if isinstance(result.spec.get("nodePools"), list):
        result.spec["nodePools"].append("changed")
    if isinstance(result.spec.get("compute"), dict):
        result.spec["compute"]["cpuCoreRequest"] = 99
    assert specs == before


@LAWS
@given(specs=stacks)
def test_merge_is_deterministic(specs: list[dict[str, Any]]) -> None:
    first, second = merge(specs), merge(copy.deepcopy(specs))
    assert first.spec == second.spec
    assert json.dumps(first.spec, sort_keys=True) == json.dumps(second.spec, sort_keys=True)
    assert [w.message for w in first.warnings] == [w.message for w in second.warnings]


@LAWS
@given(specs=stacks)
def test_excluded_keys_are_absent_unless_re_added_above(specs: list[dict[str, Any]]) -> None:
    result = merge(specs).spec
    for path, key in KEYED:
        survivors = [item[key] for item in get(result, path) or []]
        for name in KEYS:
            last = None
            for spec in specs:
                for item in get(spec, path) or []:
                    if item[key] == name:
                        last = item
            if last is None:
                assert name not in survivors
            elif last.get("exclude") is True:
                assert name not in survivors, (path, name)
            else:
                assert name in survivors, (path, name)
        assert not any(item.get("exclude") is True for item in get(result, path) or [])


@LAWS
@given(specs=stacks)
def test_surviving_keys_keep_their_first_appearance_order(specs: list[dict[str, Any]]) -> None:
    result = merge(specs).spec
    for path, key in KEYED:
        assert [item[key] for item in get(result, path) or []] == model_keyed(specs, path, key), path


@LAWS
@given(specs=stacks)
def test_the_last_layers_scalar_wins(specs: list[dict[str, Any]]) -> None:
    result = merge(specs).spec
    for path in SCALARS:
        assert get(result, path) == model_scalar(specs, path), path


@LAWS
@given(specs=stacks)
def test_scalar_lists_are_replaced_whole(specs: list[dict[str, Any]]) -> None:
    result = merge(specs).spec
    for path in (("nodePools",), ("security", "capabilities")):
        assert get(result, path) == model_scalar(specs, path), path


@LAWS
@given(specs=stacks)
def test_keyed_item_fields_come_from_the_highest_layer_since_the_last_exclusion(
    specs: list[dict[str, Any]],
) -> None:
    result = merge(specs).spec
    for path, key in KEYED:
        field = "quantity" if key == "resource" else "value"
        merged = {item[key]: item for item in get(result, path) or []}
        for name, item in merged.items():
            since: list[dict[str, Any]] = []
            for spec in specs:
                for written in get(spec, path) or []:
                    if written[key] == name:
                        since = [] if written.get("exclude") is True else [*since, written]
            assert item.get(field) == model_scalar(since, (field,)), (path, name)


@LAWS
@given(specs=stacks)
def test_an_exclusion_matching_nothing_is_a_warning(specs: list[dict[str, Any]]) -> None:
    labels = model_keyed(specs, ("labels",), "name")
    ghost = [*specs, {"labels": [{"name": "ghost", "exclude": True}]}]
    result = merge(ghost)
    assert [item["name"] for item in result.spec.get("labels") or []] == labels
    assert any("labels[name=ghost]" in w.message for w in result.warnings)
