"""``check -o sarif``: SARIF 2.1.0 (OASIS), as GitHub code scanning and pull-request annotators read it.

One run of the driver ``template-engine``; one result per finding, with its rule id (:mod:`.rules`), level,
message and location: the file relative to the directory the command ran in under ``uriBaseId``
``%SRCROOT%`` (the repository root in CI, as ``github/codeql-action/upload-sarif`` expects), and the line and
column the loader recorded.  A compliance issue's rule is a related location.  ``tool.driver.rules`` holds
every rule of the catalogue and every other rule a result names, each with a short and a full description
and, given a docs URL, a ``helpUri``.  Plain dicts: the schema (``sarif-schema-2.1.0.json``) is the contract,
and the tests validate against it.
"""

from __future__ import annotations

from typing import Any

from template_engine.errors import Location
from template_engine.reports.model import CheckReport, Finding, PairResult
from template_engine.reports.rules import CATALOGUE, DOCS_ANCHOR, Rule, rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"


def _rule_object(found: Rule, level: str, docs_url: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": found.id,
        "name": found.name,
        "shortDescription": {"text": found.short},
        "fullDescription": {"text": found.full},
        "help": {"text": found.full, "markdown": found.full},
        "defaultConfiguration": {"level": level},
    }
    if docs_url:
        out["helpUri"] = f"{docs_url}#{DOCS_ANCHOR}"
    return out


def _physical(report: CheckReport, location: Location) -> dict[str, Any]:
    uri = report.uri(location)
    # A --root given as an absolute path: a file URI of its own (no base the repository could supply).
    artifact = {"uri": f"file://{uri}"} if uri.startswith("/") else {"uri": uri, "uriBaseId": SRCROOT}
    physical: dict[str, Any] = {"artifactLocation": artifact}
    if location.line is not None:
        region: dict[str, Any] = {"startLine": location.line}
        if location.column is not None:
            region["startColumn"] = location.column
        physical["region"] = region
    return physical


def _result(report: CheckReport, finding: Finding, index: int, pair: PairResult | None) -> dict[str, Any]:
    where = f"{pair.title}: " if pair is not None else ""
    what = " ".join(part for part in (finding.replica or "", finding.field or "") if part)
    text = where + (f"{what}: " if what else "") + finding.message
    out: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": index,
        "level": finding.level,
        "message": {"text": text},
    }
    if finding.location is not None:
        location: dict[str, Any] = {"physicalLocation": _physical(report, finding.location)}
        if pair is not None:
            location["logicalLocations"] = [{"name": pair.template, "fullyQualifiedName": pair.name}]
        out["locations"] = [location]
    if finding.related:
        out["relatedLocations"] = [
            {
                "id": n,
                "physicalLocation": _physical(report, other),
                "message": {"text": other.layer or "related"},
            }
            for n, other in enumerate(finding.related, start=1)
        ]
    properties: dict[str, Any] = {}
    if pair is not None:
        properties.update({"view": pair.view, "template": pair.template, "templateScope": pair.scope})
        if pair.workload_type is not None:
            properties["workloadType"] = pair.workload_type
    if finding.field is not None:
        properties["field"] = finding.field
    if properties:
        out["properties"] = properties
    return out


def sarif_log(report: CheckReport, version: str, docs_url: str | None = None) -> dict[str, Any]:
    """The SARIF log of ``report``: one run, one result per finding of every pair, then the org's problems."""
    findings: list[tuple[Finding, PairResult | None]] = [
        (finding, pair) for pair in report.pairs for finding in (*pair.findings, *pair.warnings)
    ]
    findings += [(problem, None) for problem in report.problems]
    ids = list(CATALOGUE)
    levels = dict.fromkeys(ids, "error")
    for finding, _ in findings:
        if finding.rule not in levels:
            ids.append(finding.rule)
            levels[finding.rule] = finding.level
    index = {rule_id: n for n, rule_id in enumerate(ids)}
    driver: dict[str, Any] = {
        "name": "template-engine",
        "version": version,
        "rules": [_rule_object(rule(rule_id), levels[rule_id], docs_url) for rule_id in ids],
    }
    if docs_url:
        driver["informationUri"] = docs_url
    results = [_result(report, finding, index[finding.rule], pair) for finding, pair in findings]
    run = {"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


__all__ = ["SCHEMA_URI", "SRCROOT", "sarif_log"]
