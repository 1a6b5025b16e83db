"""Numbers in policy rules within what the ruled field can hold (issue 17: a 400-digit ``slotsPerWorker.max``
was stored, exported and validated).

The field's bounds come from the spec models' annotations (``policy/bounds.py`` reads them; here the model
itself is asked), within Run:ai's schema of the rule, whose formats are read from Run:ai's document.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import ValidationError

from template_engine.models.spec import MasterSpec, WorkerSpec
from template_engine.models.spec_items import INT32_MAX, INT32_MIN
from template_engine.org import SYSTEM
from template_engine.policy.bounds import FLOAT_MAX, RULE_INTEGER, RULE_NUMBER, field_bounds, model_type
from template_engine.policy.document import read_policy
from template_engine.policy.vocabulary import ItemsFamily, Node, Replica, RuleFamily, Section, vocabulary
from template_engine.views.schema import policy_schema

RUNAI = Path(__file__).resolve().parent / "fixtures" / "runai" / "runai-openapi-subset.json"
SCHEMAS: dict[str, Any] = json.loads(RUNAI.read_text())["components"]["schemas"]
MODELS = {"worker": WorkerSpec, "master": MasterSpec}
BIG = 10**400 - 1

Ruled = tuple[Replica, tuple[str, ...], tuple[str, ...], RuleFamily]


def _ruled() -> Iterator[Ruled]:
    """Every integer and number field that may carry rules: replica, path, attribute, rule family."""

    def walk(
        replica: Replica, node: Node, path: tuple[str, ...], attribute: tuple[str, ...]
    ) -> Iterator[Ruled]:
        if isinstance(node, Section):
            for name, child in node.fields.items():
                if attribute:
                    yield from walk(replica, child, path, (*attribute, name))
                else:
                    yield from walk(replica, child, (*path, name), ())
        elif isinstance(node, ItemsFamily):
            for name, child in node.attributes.items():
                yield from walk(replica, child, path, (name,))
        elif node.value_kind in ("integer", "number"):
            yield replica, path, attribute, node

    for replica, section in vocabulary().items():
        yield from walk(replica, section, (), ())


RULED = list(_ruled())
IDS = [f"{r}.{'.'.join(p)}{'.attributes.' + '.'.join(a) if a else ''}" for r, p, a, _ in RULED]


def _spec(path: tuple[str, ...], attribute: tuple[str, ...], value: Any) -> dict[str, Any]:
    leaf: Any = value
    for name in reversed(attribute):
        leaf = {name: leaf}
    if attribute:
        leaf = [leaf]
    for name in reversed(path):
        leaf = {name: leaf}
    return dict(leaf)


def _model_takes(replica: Replica, path: tuple[str, ...], attribute: tuple[str, ...], value: Any) -> bool:
    try:
        MODELS[replica].model_validate(_spec(path, attribute, value))
    except ValidationError:
        return False
    return True


def _rules(path: tuple[str, ...], attribute: tuple[str, ...], rules: dict[str, Any]) -> dict[str, Any]:
    if attribute:
        inner: Any = rules
        for name in reversed(attribute):
            inner = {name: inner}
        rules = {"attributes": inner}
    for name in reversed(path):
        rules = {name: rules}
    return rules


def _read(replica: Replica, rules: dict[str, Any]) -> list[tuple[str, str]]:
    document, problems = read_policy({"rules": {replica: rules}}, "policy.yaml", {}, SYSTEM)
    assert (document is None) == bool(problems)
    return [(".".join(str(p) for p in problem.path), str(problem.expected)) for problem in problems]


def test_the_rule_schemas_formats_are_run_ais() -> None:
    families = {family.family for _, _, _, family in RULED}
    assert families == {"IntegerRules", "IntegerRulesOptional", "NumberRules"}
    for family in families:
        for key in ("min", "max", "step"):
            schema = SCHEMAS[family]["properties"][key]
            if family == "NumberRules":
                assert (schema["type"], schema.get("format")) == ("number", None)  # a double: RULE_NUMBER
            else:
                assert (schema["type"], schema["format"]) == ("integer", "int32")
    assert RULE_INTEGER == (INT32_MIN, INT32_MAX)
    assert RULE_NUMBER == (-FLOAT_MAX, FLOAT_MAX) and float(FLOAT_MAX) == 1.7976931348623157e308
    assert SCHEMAS["DefaultFromRule"]["properties"]["factor"]["format"] == "double"


@pytest.mark.parametrize(("replica", "path", "attribute", "family"), RULED, ids=IDS)
def test_every_ruled_number_has_the_model_s_bounds(
    replica: Replica, path: tuple[str, ...], attribute: tuple[str, ...], family: RuleFamily
) -> None:
    """The bounds are the model's: it takes both ends, and refuses just beyond them unless the rule's own
    schema (int32, a double) is what stops there."""
    kind = family.value_kind
    assert model_type(replica, path, attribute) is (int if kind == "integer" else float)
    bounds = field_bounds(replica, path, attribute, kind)
    assert bounds is not None
    low, high = (int(bounds.low), int(bounds.high)) if kind == "integer" else (bounds.low, bounds.high)
    assert _model_takes(replica, path, attribute, low) and _model_takes(replica, path, attribute, high)
    if kind == "integer":
        assert bounds.low == INT32_MIN or not _model_takes(replica, path, attribute, low - 1)
        assert bounds.high == INT32_MAX or not _model_takes(replica, path, attribute, high + 1)
    else:
        assert bounds.low == -FLOAT_MAX or not _model_takes(replica, path, attribute, float(low) - 0.001)
        assert bounds.high == FLOAT_MAX or not _model_takes(replica, path, attribute, float(high) + 0.001)


def _plain(number: Decimal, kind: str) -> int | float:
    return int(number) if kind == "integer" else float(number)


@pytest.mark.parametrize(("replica", "path", "attribute", "family"), RULED, ids=IDS)
def test_rule_numbers_at_the_bounds_are_read_and_beyond_them_refused(
    replica: Replica, path: tuple[str, ...], attribute: tuple[str, ...], family: RuleFamily
) -> None:
    kind = family.value_kind
    bounds = field_bounds(replica, path, attribute, kind)
    assert bounds is not None
    low, high = _plain(bounds.low, kind), _plain(bounds.high, kind)
    step_max = INT32_MAX if kind == "integer" else float(FLOAT_MAX)
    assert _read(replica, _rules(path, attribute, {"min": low, "max": high, "step": step_max})) == []
    where = ".".join(("rules", replica, *path, *(("attributes", *attribute) if attribute else ())))
    expected = bounds.expected
    beyond_low = low - 1 if kind == "integer" else (-BIG if bounds.low == -FLOAT_MAX else float(low) - 0.5)
    beyond_high = high + 1 if kind == "integer" else (BIG if bounds.high == FLOAT_MAX else float(high) + 0.5)
    assert _read(replica, _rules(path, attribute, {"min": beyond_low})) == [(f"{where}.min", expected)]
    assert _read(replica, _rules(path, attribute, {"max": beyond_high})) == [(f"{where}.max", expected)]
    assert _read(replica, _rules(path, attribute, {"max": BIG, "min": -BIG})) == [
        (f"{where}.max", expected),
        (f"{where}.min", expected),
    ]
    too_big_a_step = INT32_MAX + 1 if kind == "integer" else BIG
    [(field, _)] = _read(replica, _rules(path, attribute, {"step": too_big_a_step}))
    assert field == f"{where}.step"


def test_a_400_digit_number_is_named_by_its_digits_not_quoted() -> None:
    document, problems = read_policy(
        {"rules": {"worker": {"slotsPerWorker": {"max": BIG}}}}, "policy.yaml", {}, SYSTEM
    )
    assert document is None
    [problem] = problems
    assert problem.message == "max (a 400-digit number) is outside what slotsPerWorker can hold"
    assert problem.expected == f"a whole number from 1 to {INT32_MAX}"


@pytest.mark.parametrize("factor", [BIG, 0, -1])
def test_default_from_s_factor_is_a_double_above_0(factor: int) -> None:
    rules = {"compute": {"cpuCoreLimit": {"defaultFrom": {"field": "cpuCoreRequest", "factor": factor}}}}
    assert _read("worker", rules) == [
        (
            "rules.worker.compute.cpuCoreLimit.defaultFrom.factor",
            "a number above 0, at most 1.797e308 (Run:ai's factor is a double)",
        )
    ]
    rules["compute"]["cpuCoreLimit"]["defaultFrom"]["factor"] = 1.7976931348623157e308
    assert _read("worker", rules) == []


@pytest.mark.parametrize(("replica", "path", "attribute", "family"), RULED, ids=IDS)
def test_the_policy_schema_states_the_same_bounds(
    replica: Replica, path: tuple[str, ...], attribute: tuple[str, ...], family: RuleFamily
) -> None:
    """``template-engine schema``'s policy schema takes what ``read_policy`` takes and refuses beyond it."""
    kind = family.value_kind
    bounds = field_bounds(replica, path, attribute, kind)
    assert bounds is not None
    validator = jsonschema.Draft202012Validator(policy_schema())
    low, high = _plain(bounds.low, kind), _plain(bounds.high, kind)
    step_max = INT32_MAX if kind == "integer" else float(FLOAT_MAX)
    taken = {"rules": {replica: _rules(path, attribute, {"min": low, "max": high, "step": step_max})}}
    assert list(validator.iter_errors(taken)) == []
    for key, value in (("min", -BIG), ("max", BIG), ("step", BIG), ("step", 0)):
        refused = {"rules": {replica: _rules(path, attribute, {key: value})}}
        assert list(validator.iter_errors(refused)), refused
        assert _read(replica, refused["rules"][replica]), refused
