"""Table-driven cases: one folder per rule of DESIGN.md (and of POLICY.md: ``policy-*``) in ``tests/cases/``.

Each folder holds ``templates/`` (a tiny org) and ``case.yaml``::

    description: the rule
    preview: {project?, department?, template, vars?}
    expect:
      combinedSpec / combinedMasterSpec   compared exactly (the engine omits empty lists and mappings)
      masterSpecSameAsWorker, isRunnable
      issues                              [{replica, field, message}], exactly and in order; a compliance
                                          issue (POLICY.md, policy-*) also has rule and source ("file:line")
      warningsInclude                     substrings, each found in some warning (none expected without it)
      error: {type, messageIncludes, file?, line?}

Adding a case is adding a folder.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import template_engine
from template_engine import TemplateEngineError

CASES = Path(__file__).resolve().parent / "cases"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "case.yaml").is_file())

EXPECT_KEYS = {
    "combinedSpec",
    "combinedMasterSpec",
    "masterSpecSameAsWorker",
    "isRunnable",
    "issues",
    "warningsInclude",
    "error",
}
ERROR_KEYS = {"type", "messageIncludes", "file", "line"}
ERROR_TYPES = {"CompositionError", "InputError", "RenderError", "NotFoundError"}


def load_case(case_dir: Path) -> dict[str, Any]:
    case = yaml.safe_load((case_dir / "case.yaml").read_text(encoding="utf-8"))
    assert isinstance(case, dict)
    return case


def test_there_are_cases() -> None:
    assert len(CASE_DIRS) >= 80


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=lambda p: p.name)
def test_case_file_is_well_formed(case_dir: Path) -> None:
    case = load_case(case_dir)
    assert set(case) == {"description", "preview", "expect"}
    assert isinstance(case["description"], str) and case["description"].strip()
    assert set(case["preview"]) <= {"project", "department", "template", "vars"}
    assert case["preview"]["template"]
    expect = case["expect"]
    assert expect and set(expect) <= EXPECT_KEYS, set(expect) - EXPECT_KEYS
    if "error" in expect:
        assert set(expect) == {"error"}, "an error case expects nothing else"
        assert set(expect["error"]) <= ERROR_KEYS
        assert expect["error"]["type"] in ERROR_TYPES
        assert expect["error"]["messageIncludes"]
    assert (case_dir / "templates" / "org.yaml").is_file()


Preview = Callable[..., template_engine.Composition]


def _compose(preview: Preview, case_dir: Path, case: dict[str, Any]) -> template_engine.Composition:
    pv = case["preview"]
    variables = {str(k): str(v) for k, v in (pv.get("vars") or {}).items()}
    return preview(case_dir / "templates", pv["template"], pv.get("project"), pv.get("department"), variables)


def _check_error(preview: Preview, case_dir: Path, case: dict[str, Any]) -> None:
    want = case["expect"]["error"]
    with pytest.raises(TemplateEngineError) as caught:
        _compose(preview, case_dir, case)
    error = caught.value
    assert type(error).__name__ == want["type"], error.render()
    text = error.render()
    for part in want["messageIncludes"]:
        assert part in text, f"{part!r} not in:\n{text}"
    if "file" in want:
        places = [(p.location.file, p.location.line) for p in error.problems if p.location is not None]
        if "line" in want:
            assert (want["file"], want["line"]) in places, text
        else:
            assert want["file"] in [file for file, _ in places], text


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=lambda p: p.name)
def test_case(preview: Preview, case_dir: Path) -> None:
    case = load_case(case_dir)
    expect = case["expect"]
    if "error" in expect:
        _check_error(preview, case_dir, case)
        return
    composition = _compose(preview, case_dir, case)
    response = composition.to_response()
    if "combinedSpec" in expect:
        assert response["combinedSpec"] == expect["combinedSpec"]
    if "combinedMasterSpec" in expect:
        assert response["combinedMasterSpec"] == expect["combinedMasterSpec"]
    if "masterSpecSameAsWorker" in expect:
        assert response["masterSpecSameAsWorker"] is expect["masterSpecSameAsWorker"]
    runnable = response["runnable"]
    if "isRunnable" in expect:
        assert runnable["isRunnable"] is expect["isRunnable"], runnable["issues"]
        assert (runnable["issue"] is None) is expect["isRunnable"]
    if "issues" in expect:
        # Issues that are not about a policy have `rule: null` (POLICY.md); the cases leave it out.
        assert runnable["issues"] == [{"rule": None, **issue} for issue in expect["issues"]]
        if expect["issues"]:
            assert runnable["issue"] == expect["issues"][0]["message"]
    warnings = [f"{w['field']}: {w['message']}" for w in runnable["warnings"]]
    for part in expect.get("warningsInclude", []):
        assert any(part in w for w in warnings), f"{part!r} not in {warnings}"
    if "warningsInclude" not in expect:
        assert warnings == [], "a case that expects no warnings got some"
