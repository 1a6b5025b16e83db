"""The one wording of a problem on a line: ``field: message (expected ...)``."""

from __future__ import annotations

from template_engine.errors import Problem
from template_engine.reports.findings import problem_finding


def test_a_problem_says_what_was_expected_after_its_message() -> None:
    problem = Problem("not a number", ("spec", "gpu"), None, "a number")
    assert problem.with_expected() == "not a number (expected a number)"
    assert Problem("missing").with_expected() == "missing"


def test_a_problem_line_names_its_field_or_the_one_it_is_given() -> None:
    problem = Problem("not a number", ("policy", "rules", "gpu"), None, "a number")
    assert problem.field_line() == "policy.rules.gpu: not a number (expected a number)"
    assert problem.field_line(("rules", "gpu")) == "rules.gpu: not a number (expected a number)"
    assert Problem("the document is empty").field_line() == "the document is empty"


def test_a_finding_of_a_problem_words_it_as_the_problem_does() -> None:
    problem = Problem("not a number", ("spec", "gpu"), None, "a number")
    assert problem_finding(problem, "files/invalid").message == problem.with_expected()
