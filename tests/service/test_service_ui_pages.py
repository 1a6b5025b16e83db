"""The UI's words: the preview's ``why`` column says a change's cause as ``diff`` does
(``FieldChange.cause``), the policy page a rule as ``explain`` does (``policy/wording.rule_phrases``)."""

from __future__ import annotations

from decimal import Decimal

from template_engine.diffing.fields import FieldChange
from template_engine.errors import Location
from template_engine.org import SYSTEM
from template_engine.policy.document import FieldRules
from template_engine.policy.wording import rule_phrases
from template_engine.service.ui.pages import Edited, rule_text, why

STORED = Location("db:defaults/system", 3, None, "system defaults")
LABELS = {"db:defaults/system": "defaults of the system, version 1"}


def test_an_item_excluded_is_said_as_diff_says_it() -> None:
    change = FieldChange("combinedSpec", ("x",), "removed", old=1, excluded_by=STORED, excluded_item=True)
    assert why(change, LABELS) == "its item was excluded by defaults of the system, version 1, line 3"


def test_a_value_no_longer_set_names_the_version_the_form_was_read_at() -> None:
    edited = Edited("db:defaults/system", "defaults", "the system", 1)
    change = FieldChange("combinedSpec", ("image",), "removed", old="a", was_set_by=STORED)
    assert why(change, LABELS, edited) == "no longer set by the defaults of the system, version 1"
    added = FieldChange("combinedSpec", ("image",), "added", new="a", set_by=STORED, also_master=True)
    assert why(added, LABELS, edited) == "set by your edit; the master too"


def test_a_removal_no_layer_names_and_a_reordering_say_so() -> None:
    assert why(FieldChange("combinedSpec", ("x",), "removed", old=1), LABELS) == "no longer set"
    reordered = FieldChange("combinedSpec", ("p",), "reordered", old=[1, 2], new=[2, 1])
    assert why(reordered, LABELS) == "order changed"


def test_the_policy_page_says_a_rule_as_explain_does() -> None:
    found = FieldRules("worker", ("numWorkers",), SYSTEM, STORED, {}, minimum=Decimal(1), maximum=Decimal(4))
    assert rule_text(found) == rule_phrases(found) == ("between 1 and 4",)
    assert rule_text(FieldRules("worker", ("numWorkers",), SYSTEM, STORED, {})) == ("no constraint",)
