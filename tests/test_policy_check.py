"""Evaluating rules on combined specs (POLICY.md "Rules"), one rule at a time, as pure functions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from template_engine.loader.yaml_safe import load_yaml
from template_engine.merge.plan import build_plan
from template_engine.models.spec import WorkerSpec
from template_engine.org import SYSTEM
from template_engine.paths import Match
from template_engine.policy.check import apply_default_from, check_rules
from template_engine.policy.document import FieldRules, read_policy

PLAN = build_plan(WorkerSpec)


def rules(text: str) -> tuple[FieldRules, ...]:
    loaded = load_yaml(text, "system/policy.yaml")
    doc, problems = read_policy(loaded.data, "system/policy.yaml", loaded.lines, SYSTEM)
    assert problems == [] and doc is not None
    return doc.rules


def issues(
    policy: str, combined: dict[str, Any], policy_side: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    found = check_rules("worker", combined, policy_side or {}, rules(policy), PLAN)
    return [(i.field, i.rule) for i in found]


W = "rules:\n  worker:\n"


@pytest.mark.parametrize(
    ("policy", "combined", "policy_side", "expected"),
    [
        (W + "    numWorkers: {min: 1, max: 4}", {"numWorkers": 8}, {}, [("numWorkers", "max")]),
        (W + "    numWorkers: {min: 2, max: 4}", {"numWorkers": 1}, {}, [("numWorkers", "min")]),
        (W + "    numWorkers: {min: 1, max: 4}", {"numWorkers": 4}, {}, []),
        (W + "    numWorkers: {min: 1, max: 4}", {}, {}, []),  # bounds apply to a value, when present
        (W + "    numWorkers: {min: 1, step: 2}", {"numWorkers": 4}, {}, [("numWorkers", "step")]),
        (W + "    numWorkers: {min: 1, step: 2}", {"numWorkers": 5}, {}, []),
        (W + "    numWorkers: {step: 4}", {"numWorkers": 8}, {}, []),
        (
            W + "    compute: {cpuMemoryRequest: {max: 64Gi}}",
            {"compute": {"cpuMemoryRequest": "80G"}},
            {},
            [("compute.cpuMemoryRequest", "max")],
        ),
        (
            W + "    compute: {cpuMemoryRequest: {max: 64Gi}}",
            {"compute": {"cpuMemoryRequest": "68G"}},
            {},
            [],
        ),
        (
            W + "    compute: {cpuCoreRequest: {max: 0.5}}",
            {"compute": {"cpuCoreRequest": 0.75}},
            {},
            [("compute.cpuCoreRequest", "max")],
        ),
        (W + "    image: {required: true}", {}, {}, [("image", "required")]),
        (W + "    image: {required: true}", {"image": ""}, {}, [("image", "required")]),
        (W + "    nodePools: {required: true}", {"nodePools": []}, {}, [("nodePools", "required")]),
        (W + "    image: {canEdit: false}", {"image": "b"}, {"image": "a"}, [("image", "canEdit")]),
        (W + "    image: {canEdit: false}", {"image": "a"}, {"image": "a"}, []),
        (W + "    image: {canEdit: false}", {}, {}, []),  # absent stays absent
        (W + "    image: {canEdit: false}", {"image": "a"}, {}, [("image", "canEdit")]),
        (
            W + "    nodePools: {required: true}",
            {"nodePools": ["h100"]},
            {"nodePools": ["a100"]},
            [("nodePools", "canEdit")],
        ),
        (W + "    nodePools: {canEdit: true}", {"nodePools": ["h100"]}, {"nodePools": ["a100"]}, []),
        (W + "    image: {options: [{value: a}, {value: b}]}", {"image": "c"}, {}, [("image", "options")]),
        (
            W + "    nodePools: {canEdit: true, options: [{value: a}]}",
            {"nodePools": ["a", "b"]},
            {},
            [("nodePools", "options")],
        ),
        (
            W + "    environmentVariables: {instances: {locked: [HTTP_PROXY]}}",
            {"environmentVariables": [{"name": "TZ", "value": "UTC"}]},
            {"environmentVariables": [{"name": "HTTP_PROXY", "value": "p"}, {"name": "TZ", "value": "UTC"}]},
            [("environmentVariables[name=HTTP_PROXY]", "locked")],
        ),
        (
            W + "    environmentVariables: {instances: {locked: [HTTP_PROXY]}}",
            {"environmentVariables": [{"name": "HTTP_PROXY", "value": "q"}]},
            {"environmentVariables": [{"name": "HTTP_PROXY", "value": "p"}]},
            [("environmentVariables[name=HTTP_PROXY]", "locked")],
        ),
        (
            W + "    environmentVariables: {instances: {locked: [HTTP_PROXY]}}",
            {"environmentVariables": [{"name": "HTTP_PROXY", "value": "p"}, {"name": "X", "value": "1"}]},
            {"environmentVariables": [{"name": "HTTP_PROXY", "value": "p"}]},
            [],
        ),
        (
            W + "    environmentVariables: {instances: {canAdd: false}}",
            {"environmentVariables": [{"name": "TZ", "value": "UTC"}, {"name": "X", "value": "1"}]},
            {"environmentVariables": [{"name": "TZ", "value": "UTC"}]},
            [("environmentVariables[name=X]", "canAdd")],
        ),
        (
            W + "    ports: {attributes: {serviceType: {options: [{value: ClusterIP}]}}}",
            {
                "ports": [
                    {"name": "web", "container": 80, "serviceType": "NodePort"},
                    {"name": "m", "container": 90, "serviceType": "ClusterIP"},
                ]
            },
            {},
            [("ports[name=web].serviceType", "options")],
        ),
        (
            W + "    ports: {attributes: {serviceType: {canEdit: false}}}",
            {
                "ports": [
                    {"name": "web", "container": 80, "serviceType": "NodePort"},
                    {"name": "new", "container": 90, "serviceType": "ClusterIP"},
                ]
            },
            {"ports": [{"name": "web", "container": 80, "serviceType": "ClusterIP"}]},
            [("ports[name=new].serviceType", "canEdit"), ("ports[name=web].serviceType", "canEdit")],
        ),
    ],
)
def test_each_rule(
    policy: str, combined: dict[str, Any], policy_side: dict[str, Any], expected: list[Any]
) -> None:
    assert issues(policy, combined, policy_side) == expected


def test_every_broken_rule_is_reported_at_once_in_a_stable_order() -> None:
    policy = W + "    numWorkers: {max: 2, step: 3}\n    image: {required: true, canEdit: false}\n"
    found = issues(policy, {"numWorkers": 4}, {"image": "a"})
    assert found == [
        ("image", "required"),
        ("image", "canEdit"),
        ("numWorkers", "max"),
        ("numWorkers", "step"),
    ]


def test_default_from_fills_an_unset_field_and_keeps_units() -> None:
    policy = W + (
        "    compute:\n"
        "      cpuCoreLimit: {defaultFrom: {field: cpuCoreRequest, factor: 2}}\n"
        "      cpuMemoryLimit: {defaultFrom: {field: cpuMemoryRequest, factor: 1.5}}\n"
        "      gpuDevicesRequest: {defaultFrom: {field: cpuCoreRequest, factor: 0.5}}\n"
    )
    spec = {"compute": {"cpuCoreRequest": 3, "cpuMemoryRequest": "8Gi"}}
    out, applied, _ = apply_default_from(spec, rules(policy), PLAN)
    assert out["compute"] == {
        "cpuCoreRequest": 3,
        "cpuCoreLimit": 6,
        "cpuMemoryRequest": "8Gi",
        "cpuMemoryLimit": "12Gi",
        "gpuDevicesRequest": 1,  # an integer field rounds down
    }
    assert set(applied) == {
        ("compute", "cpuCoreLimit"),
        ("compute", "cpuMemoryLimit"),
        ("compute", "gpuDevicesRequest"),
    }
    assert spec == {"compute": {"cpuCoreRequest": 3, "cpuMemoryRequest": "8Gi"}}  # the input is untouched
    kept, none, _ = apply_default_from(
        {"compute": {"cpuCoreRequest": 3, "cpuCoreLimit": 4}}, rules(policy), PLAN
    )
    assert kept["compute"]["cpuCoreLimit"] == 4 and ("compute", "cpuCoreLimit") not in none


@pytest.mark.parametrize(
    ("rule", "spec", "field", "said"),
    [
        (
            "cpuCoreRequest: {defaultFrom: {field: cpuCoreLimit, factor: 2}}",
            {"cpuCoreLimit": 1.0e308},
            "cpuCoreRequest",
            "would be 2.0000e+308",
        ),
        (
            "gpuPortionLimit: {defaultFrom: {field: gpuPortionRequest, factor: 1.0e+308}}",
            {"gpuPortionRequest": 0.5},
            "gpuPortionLimit",
            "expected a number from 0 to 1",
        ),
        (
            "gpuDevicesRequest: {defaultFrom: {field: cpuCoreLimit, factor: 1.0e+300}}",
            {"cpuCoreLimit": 4},
            "gpuDevicesRequest",
            "expected a whole number from",
        ),
        (
            "cpuMemoryLimit: {defaultFrom: {field: cpuMemoryRequest, factor: 1.0e+300}}",
            {"cpuMemoryRequest": "8Gi"},
            "cpuMemoryLimit",
            "expected a quantity of at most 64 characters",
        ),
    ],
)
def test_a_default_from_value_out_of_its_field_s_bounds_is_left_unset_with_an_issue(
    rule: str, spec: dict[str, Any], field: str, said: str
) -> None:
    """What ``defaultFrom`` computes is held to the bounds of the field written directly (the spec models');
    beyond them it is not set, and the issue names the rule, the field, the value and the bound."""
    out, applied, (refused,) = apply_default_from(
        {"compute": spec}, rules(W + f"    compute:\n      {rule}\n"), PLAN
    )
    assert out == {"compute": spec} and applied == {}
    assert refused.field == f"compute.{field}" and refused.rule == "max"
    assert said in refused.message and "by the defaultFrom rule of the system policy" in refused.message


def test_an_imposed_item_is_protected_like_a_locked_one() -> None:
    from template_engine.errors import Location
    from template_engine.policy.document import ImposedAsset

    asset = ImposedAsset("shared", "worker", SYSTEM, Location("system/policy.yaml", 3, 5))
    protected = {(("storage", "pvc"), Match("name", "shared")): asset}
    before = {"storage": {"pvc": [{"name": "shared", "claimName": "c", "path": "/shared"}]}}
    after = {"storage": {"pvc": [{"name": "shared", "claimName": "c", "path": "/mine"}]}}
    found = check_rules("worker", after, before, (), PLAN, protected)
    assert [(i.field, i.rule, str(i.source)) for i in found] == [
        ("storage.pvc[name=shared]", "locked", "system/policy.yaml:3:5")
    ]
    assert check_rules("worker", before, before, (), PLAN, protected) == []


NAMES = st.sampled_from(["A", "B", "C", "HTTP_PROXY"])
ITEMS = st.lists(st.tuples(NAMES, st.sampled_from(["1", "2"])), unique_by=lambda t: t[0], max_size=4).map(
    lambda pairs: [{"name": n, "value": v} for n, v in pairs]
)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(ITEMS, ITEMS)
def test_locking_a_key_the_request_does_not_touch_changes_nothing(
    policy_side: Any, request_side: Any
) -> None:
    untouched = {"name": "LOCKED", "value": "x"}
    before = {"environmentVariables": [*policy_side, untouched]}
    after = {"environmentVariables": [*request_side, untouched]}
    base = issues(W + "    environmentVariables: {instances: {canAdd: true}}", after, before)
    locked = issues(W + "    environmentVariables: {instances: {locked: [LOCKED]}}", after, before)
    assert base == locked == []
