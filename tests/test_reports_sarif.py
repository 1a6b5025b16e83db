"""``check -o sarif``: valid SARIF 2.1.0, one result per issue, each at the line that wrote its value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from reports_helpers import FORMATS, REPO, at_repo, broken_copy, check_json, run

from template_engine.cli import main
from template_engine.reports.rules import CATALOGUE

__all__ = ["at_repo"]

SCHEMA = json.loads((FORMATS / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


@pytest.fixture
def sarif(at_repo: Path) -> dict[str, Any]:
    result = run("check", "--root", "templates", "-o", "sarif", "--docs-url", "https://docs.example/cli.md")
    assert result.exit_code == 1  # as text: the example org has pairs that are not runnable
    log: dict[str, Any] = json.loads(result.stdout)
    return log


def _line(uri: str, line: int) -> str:
    return (REPO / uri).read_text(encoding="utf-8").splitlines()[line - 1]


def test_valid_against_the_vendored_schema(sarif: dict[str, Any]) -> None:
    jsonschema.Draft4Validator(SCHEMA).validate(sarif)
    assert sarif["version"] == "2.1.0"
    assert sarif["runs"][0]["tool"]["driver"]["name"] == "template-engine"


def test_one_result_per_issue_and_warning(sarif: dict[str, Any], at_repo: Path) -> None:
    answer = check_json()
    issues = [(r["project"], r["template"], i["message"]) for r in answer["results"] for i in r["issues"]]
    warnings = sum(len(r.get("warnings", [])) for r in answer["results"])
    results = sarif["runs"][0]["results"]
    errors = [r for r in results if r["level"] == "error"]
    assert len(errors) == len(issues) + len(answer["problems"]) == 9
    assert sum(r["level"] == "warning" for r in results) == warnings
    for project, template, message in issues:
        assert (
            sum(
                r["message"]["text"].endswith(message) and f"{project} / {template}" in r["message"]["text"]
                for r in errors
            )
            >= 1
        )


def test_each_rule_id_is_described_and_indexed(sarif: dict[str, Any]) -> None:
    driver = sarif["runs"][0]["tool"]["driver"]
    rules = driver["rules"]
    assert [r["id"] for r in rules][: len(CATALOGUE)] == list(CATALOGUE)
    for result in sarif["runs"][0]["results"]:
        described = rules[result["ruleIndex"]]
        assert described["id"] == result["ruleId"]
        assert described["shortDescription"]["text"] and described["fullDescription"]["text"]
        assert described["helpUri"] == "https://docs.example/cli.md#rules-of-the-ci-formats"
    ids = {r["ruleId"] for r in sarif["runs"][0]["results"]}
    assert {"policy/locked", "policy/required", "policy/options", "runnable/mandatory"} <= ids
    assert "runnable/consistency" in ids


def test_locations_are_the_lines_that_wrote_the_values(sarif: dict[str, Any]) -> None:
    results = sarif["runs"][0]["results"]
    for result in results:
        for location in result.get("locations", []) + result.get("relatedLocations", []):
            artifact = location["physicalLocation"]["artifactLocation"]
            assert artifact["uriBaseId"] == "%SRCROOT%"
            assert (REPO / artifact["uri"]).is_file()  # relative to the repository root
    locked = next(r for r in results if r["ruleId"] == "policy/locked")
    where = locked["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "templates/system/templates/mpi-horovod.yaml"
    assert "containerPath: /mnt/datasets" in _line(
        where["artifactLocation"]["uri"], where["region"]["startLine"]
    )
    rule = locked["relatedLocations"][0]["physicalLocation"]
    assert rule["artifactLocation"]["uri"] == "templates/departments/research/policy.yaml"
    assert _line(rule["artifactLocation"]["uri"], rule["region"]["startLine"]).strip() == "- datasets"
    above = next(r for r in results if "cpuCoreRequest 16" in r["message"]["text"])
    region = above["locations"][0]["physicalLocation"]["region"]
    text = _line("templates/projects/speech/templates/asr-sweep-draft.yaml", region["startLine"])
    assert text.strip().startswith("cpuCoreRequest: 16")
    assert region["startColumn"] == text.index("cpuCoreRequest") + 1
    missing = next(r for r in results if r["ruleId"] == "runnable/mandatory")
    where = missing["locations"][0]["physicalLocation"]
    assert _line(where["artifactLocation"]["uri"], where["region"]["startLine"]) == "spec:"


def test_an_invalid_file_is_a_result_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = run("check", "--root", "templates", "-o", "sarif")
    assert result.exit_code == 1
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    invalid = [r for r in log["runs"][0]["results"] if r["ruleId"] == "files/invalid"]
    assert invalid, log["runs"][0]["results"]
    where = invalid[0]["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == "templates/system/defaults.yaml"
    assert where["region"]["startLine"] == 3
    assert "helpUri" not in log["runs"][0]["tool"]["driver"]["rules"][0]  # no --docs-url


def test_a_runnable_org_exits_0_with_no_error_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = run("check", "--root", "templates", "-p", "recsys", "-o", "sarif")
    assert result.exit_code == 0
    log = json.loads(result.stdout)
    assert [r for r in log["runs"][0]["results"] if r["level"] == "error"] == []


def test_policy_has_no_sarif() -> None:
    """``policy`` prints rules, not findings (docs/cli.md): its -o refuses the CI formats."""
    result = CliRunner().invoke(main, ["policy", "--root", str(REPO / "templates"), "-o", "sarif"])
    assert result.exit_code == 2
    assert "'sarif' is not one of" in result.output
