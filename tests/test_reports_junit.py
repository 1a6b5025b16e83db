"""``check -o junit``: valid against the Ant JUnit XSD, a test case per pair, failures naming every issue."""

from __future__ import annotations

import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from lxml import etree
from reports_helpers import FORMATS, REPO, at_repo, broken_copy, check_json, run

__all__ = ["at_repo"]

XSD = etree.XMLSchema(etree.parse(str(FORMATS / "JUnit.xsd")))


def _junit(root: str = "templates") -> tuple[int, ET.Element, bytes]:
    result = run("check", "--root", root, "-o", "junit")
    data = result.stdout.encode("utf-8")
    return result.exit_code, ET.fromstring(data), data


def _valid(data: bytes) -> None:
    document = etree.fromstring(data)
    assert XSD.validate(document), XSD.error_log


def test_valid_with_a_case_per_pair(at_repo: Path) -> None:
    code, root, data = _junit()
    assert code == 1
    _valid(data)
    answer = check_json()
    cases = [(c.get("classname"), c.get("name")) for c in root.iter("testcase")]
    expected = [
        (
            r["project"] or f"({r['department'] or 'system'})",
            r["template"] + ("" if r["workloadType"] == "Distributed" else f" ({r['workloadType'].lower()})"),
        )
        for r in answer["results"]
    ]
    assert sorted(cases) == sorted(expected) and len(cases) == 23
    failed = {
        (c.get("classname"), c.get("name")) for c in root.iter("testcase") if c.find("failure") is not None
    }
    assert failed == {("nlp", "mpi-horovod"), ("vision", "mpi-horovod"), ("speech", "asr-sweep-draft")}
    assert sum(int(s.get("failures", "0")) for s in root.iter("testsuite")) == 3
    assert all(int(s.get("tests", "0")) == len(s.findall("testcase")) for s in root.iter("testsuite"))


def test_a_failure_names_every_issue_with_file_and_line(at_repo: Path) -> None:
    _, root, _ = _junit()
    case = next(c for c in root.iter("testcase") if c.get("name") == "asr-sweep-draft")
    failure = case.find("failure")
    assert failure is not None and failure.text is not None
    issues = next(r for r in check_json()["results"] if r["template"] == "asr-sweep-draft")["issues"]
    lines = failure.text.splitlines()
    assert len(lines) == len(issues) == 7
    for line, issue in zip(lines, issues, strict=True):
        assert issue["message"] in line
        file, number = re.match(r"([^:]+):(\d+): ", line).groups()  # type: ignore[union-attr]
        assert (REPO / file).is_file() and int(number) >= 1
    assert "7 issues" in (failure.get("message") or "")
    assert "policy/required" in (failure.get("type") or "")


def test_an_invalid_default_file_is_an_error_of_every_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pair reads system/defaults.yaml: each is an ``error`` naming its line (check says it once per
    pair, not again as a problem of the org)."""
    broken_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    code, root, data = _junit()
    assert code == 1
    _valid(data)
    errors = [c.find("error") for c in root.iter("testcase")]
    assert len(errors) == 23 and all(e is not None for e in errors)
    for error in errors:
        assert error is not None and error.text is not None
        assert error.text.startswith("templates/system/defaults.yaml:3: spec.numWorker: unknown field")
        assert error.get("type") == "files/invalid"
    assert sum(int(s.get("errors", "0")) for s in root.iter("testsuite")) == 23
    assert [s.get("name") for s in root.iter("testsuite")][-1] != "org"
