"""One wording of what a rule object says (``policy/wording.rule_phrases``): ``explain``'s
``[governed by ...]`` and the service UI's policy page both say it."""

from __future__ import annotations

from decimal import Decimal

from template_engine.errors import Location
from template_engine.explain import rule_text
from template_engine.org import SYSTEM
from template_engine.policy.document import DefaultFrom, FieldRules
from template_engine.policy.wording import rule_phrases

AT = Location("system/policy.yaml", 3)


def rules(**given: object) -> FieldRules:
    written = given.pop("written", {})
    return FieldRules("worker", ("numWorkers",), SYSTEM, AT, written, **given)  # type: ignore[arg-type]


def test_each_rule_is_one_phrase_in_rule_order() -> None:
    found = rules(required=True, minimum=Decimal(1), maximum=Decimal(4), step=Decimal(1), options=("a", "b"))
    assert rule_phrases(found) == ("required", "between 1 and 4", "in steps of 1", "one of a, b")


def test_a_bound_is_shown_as_the_policy_wrote_it() -> None:
    found = rules(maximum=Decimal(2**40), written={"max": "1Ti"})
    assert rule_phrases(found) == ("at most 1Ti",)


def test_a_default_from_and_the_instances_rules_are_said_in_words() -> None:
    derived = rules(default_from=DefaultFrom("terminationGracePeriodSeconds", Decimal(60)))
    assert rule_phrases(derived) == ("default 60 x terminationGracePeriodSeconds",)
    instances = rules(instances=True, can_add=False, locked=("PIP_INDEX_URL",))
    assert rule_phrases(instances) == ("no items can be added", "locked: PIP_INDEX_URL")


def test_explain_says_each_phrase_with_the_rule_s_source() -> None:
    found = rules(minimum=Decimal(1), maximum=Decimal(4))
    assert rule_text(found) == ["between 1 and 4 (system policy, system/policy.yaml:3)"]
    assert rule_text(rules()) == []
