"""Messages of the command line that point at the fix: a field ``explain`` cannot find gets the closest path
of the composition or field of the spec, as a file's unknown field does."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from template_engine.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"


@pytest.mark.parametrize(
    ("field", "meant"),
    [
        ("labelz", "labels"),  # a field of the spec
        ("compute.gpuDevicesRequests", "compute.gpuDevicesRequest"),  # a path the composition sets
    ],
)
def test_explain_of_a_misspelt_field_says_what_was_meant(field: str, meant: str) -> None:
    args = ["explain", "--root", str(EXAMPLE), "--project", "vision", "--template", "vit-finetune", field]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert (
        f"error: {field} is neither set nor excluded by any layer (did you mean {meant!r}?)" in result.output
    )


@pytest.mark.parametrize("field", ["zzzzqqq", "nodeType"])  # close to nothing; a field no layer sets
def test_explain_of_a_field_with_nothing_to_suggest_says_only_that(field: str) -> None:
    args = ["explain", "--root", str(EXAMPLE), "--project", "vision", "--template", "vit-finetune", field]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1
    assert f"{field} is neither set nor excluded by any layer\n" in result.output
    assert "did you mean" not in result.output


def test_a_problem_line_names_its_place_field_and_message_whatever_the_message_says() -> None:
    # The line is made from the problem's parts, never by reading its message (issue 33).
    from template_engine.cli.compose_commands import _describe
    from template_engine.errors import Location, Problem

    at = Location("projects/vision/templates/job.yaml", 4, 3, "template job")
    assert _describe(Problem("spec.x is odd", ("spec", "x"), at)) == (
        "projects/vision/templates/job.yaml:4: spec.x: spec.x is odd"
    )
    assert _describe(Problem("not a number", ("spec", "x"))) == "spec.x: not a number"
