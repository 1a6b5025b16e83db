"""Applying Run:ai's attribute defaults (issue 31): properties of :func:`apply_attribute_defaults`."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.errors import Location
from template_engine.merge.plan import SPEC_PLAN
from template_engine.org import SYSTEM
from template_engine.paths import Match
from template_engine.policy.attribute_defaults import AttributeDefault, apply_attribute_defaults

QUANTITY = AttributeDefault(
    "worker", ("compute", "extendedResources"), ("quantity",), 3, SYSTEM, Location("system/policy.yaml", 6)
)

items = st.lists(
    st.fixed_dictionaries(
        {"resource": st.sampled_from(["a/cpu", "b/cpu", "c/mem", "d/mem"])},
        optional={"quantity": st.one_of(st.none(), st.just(""), st.integers(1, 9), st.just("5M"))},
    ),
    unique_by=lambda item: item["resource"],
    max_size=4,
)


@settings(max_examples=60, derandomize=True, deadline=None)
@given(items)
def test_an_items_own_value_wins_and_the_default_fills_the_rest(listed: list[dict[str, Any]]) -> None:
    spec = {"image": "ubuntu", "compute": {"extendedResources": listed}}
    before = copy.deepcopy(spec)
    out, applied = apply_attribute_defaults(spec, [QUANTITY], SPEC_PLAN)
    assert spec == before  # the input is never changed
    result = out["compute"]["extendedResources"]
    assert [i["resource"] for i in result] == [i["resource"] for i in listed]  # same items, same order
    for old, new in zip(listed, result, strict=True):
        own = old.get("quantity")
        path = ("compute", "extendedResources", Match("resource", old["resource"]), "quantity")
        if own in (None, ""):
            assert new["quantity"] == 3 and applied[path] is QUANTITY
        else:
            assert new["quantity"] == own and path not in applied
    assert out["image"] == "ubuntu"


def test_no_list_no_change() -> None:
    spec = {"image": "ubuntu"}
    assert apply_attribute_defaults(spec, [QUANTITY], SPEC_PLAN) == (spec, {})
