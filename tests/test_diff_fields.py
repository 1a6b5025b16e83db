"""What a field change says about the layer it comes from (``FieldChange.cause``), the one wording of
``diff`` lines and of the service's preview."""

from __future__ import annotations

from template_engine.diffing.fields import FieldChange
from template_engine.errors import Location

RESEARCH = Location("departments/research/defaults.yaml", 12, None, "department research defaults")
NAMED = "departments/research/defaults.yaml:12, department research defaults"


def test_a_removed_value_names_the_layer_that_no_longer_sets_it() -> None:
    change = FieldChange("combinedSpec", ("image",), "removed", old="a", was_set_by=RESEARCH)
    assert change.cause() == f"no longer set by {NAMED}"
    assert change.render() == f'combinedSpec.image: removed (was "a"; {change.cause()})'


def test_an_item_excluded_around_a_field_says_its_item_was_excluded() -> None:
    change = FieldChange("combinedSpec", ("x",), "removed", old=1, excluded_by=RESEARCH, excluded_item=True)
    assert change.cause().startswith("its item was excluded by departments/research/defaults.yaml:12")


def test_a_set_value_names_its_layer_on_the_new_side() -> None:
    sides: list[str] = []

    def name(location: Location, side: str) -> str:
        sides.append(side)
        return location.file

    change = FieldChange("combinedSpec", ("image",), "changed", old="a", new="b", set_by=RESEARCH)
    assert change.cause(name) == "set by departments/research/defaults.yaml"
    assert sides == ["new"]
    assert change.render().endswith(f"(set by {NAMED})")


def test_a_reordering_and_an_unnamed_value_have_no_cause() -> None:
    assert FieldChange("combinedSpec", ("ports",), "reordered", old=[1, 2], new=[2, 1]).cause() == ""
    assert FieldChange("combinedSpec", ("x",), "removed", old=1).cause() == ""
