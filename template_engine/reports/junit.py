"""``check -o junit``: JUnit XML, as GitLab (``artifacts:reports:junit``) and Jenkins (``junit``) read it.

The shape is Apache Ant's JUnit report (the XSD of windyroad/JUnit-Schema, vendored in the tests): a
``testsuites`` root, one ``testsuite`` per view (a project, a department, the system) and one ``testcase``
per (project, template) pair, with ``classname`` the view and ``name`` the template (with its workload kind
after it, ``serve (inference)``, when it is not a distributed training).  A pair that is not
runnable has one ``failure`` whose text names every issue as ``file:line: replica field: message``; a pair
that does not compose has an ``error``.  The org's other problems are a suite ``org`` with a test case per
file.  Written with the standard library's ``xml.etree`` (docs/decisions.md says why).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.etree import ElementTree as ET

from template_engine.reports.model import CheckReport, Finding, PairResult


@dataclass(frozen=True, slots=True)
class _Case:
    classname: str
    name: str
    #: ``failure``, ``error`` or ``None`` (passed).
    outcome: str | None
    summary: str
    findings: tuple[Finding, ...]


def _pair_case(pair: PairResult) -> _Case:
    # The test case's name is the template's, with its kind after it when it is not a distributed training
    # (the Ant schema gives a test case no properties): ``serve (inference)``.
    name = pair.template if pair.workload_type is None else f"{pair.template} ({pair.kind})"
    if pair.status == "runnable":
        return _Case(pair.view, name, None, "", ())
    count = len(pair.findings)
    if pair.status == "error":
        summary = f"{pair.title} does not compose: {count} problem{'s' * (count != 1)}"
        return _Case(pair.view, name, "error", summary, pair.findings)
    summary = f"{pair.title} is not runnable: {count} issue{'s' * (count != 1)}"
    return _Case(pair.view, name, "failure", summary, pair.findings)


def _org_cases(problems: Sequence[Finding]) -> list[_Case]:
    by_file: dict[str, list[Finding]] = {}
    for problem in problems:
        by_file.setdefault(problem.location.file if problem.location else "(org)", []).append(problem)
    return [
        _Case("org", file, "failure", f"{file}: {len(found)} problem{'s' * (len(found) != 1)}", tuple(found))
        for file, found in by_file.items()
    ]


def _text(report: CheckReport, findings: Sequence[Finding]) -> str:
    lines = []
    for finding in findings:
        place = report.uri(finding.location) if finding.location is not None else ""
        if finding.location is not None and finding.location.line is not None:
            place += f":{finding.location.line}"
        what = " ".join(part for part in (finding.replica or "", finding.field or "") if part)
        lines.append(": ".join(part for part in (place, what, f"{finding.message} [{finding.rule}]") if part))
    return "\n".join(lines)


def _suite(
    root: ET.Element,
    report: CheckReport,
    name: str,
    cases: Sequence[_Case],
    index: int,
    stamp: str,
    host: str,
) -> None:
    failures = sum(case.outcome == "failure" for case in cases)
    errors = sum(case.outcome == "error" for case in cases)
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": name,
            "timestamp": stamp,
            "hostname": host,
            "tests": str(len(cases)),
            "failures": str(failures),
            "errors": str(errors),
            "time": "0",
            "package": report.base,
            "id": str(index),
        },
    )
    ET.SubElement(suite, "properties")
    for case in cases:
        element = ET.SubElement(
            suite, "testcase", {"name": case.name, "classname": case.classname, "time": "0"}
        )
        if case.outcome is not None:
            kinds = sorted({finding.rule for finding in case.findings})
            outcome = ET.SubElement(
                element, case.outcome, {"message": case.summary, "type": ", ".join(kinds) or case.outcome}
            )
            outcome.text = _text(report, case.findings)
    ET.SubElement(suite, "system-out")
    ET.SubElement(suite, "system-err")


def junit_xml(report: CheckReport, timestamp: str, hostname: str) -> str:
    """The JUnit XML of ``report``.  ``timestamp`` (``YYYY-MM-DDTHH:MM:SS``) and ``hostname`` are the
    schema's required attributes of each suite, given by the caller (the core reads no clock)."""
    suites: dict[str, list[_Case]] = {}
    for pair in report.pairs:
        suites.setdefault(pair.view, []).append(_pair_case(pair))
    if report.problems:
        suites["org"] = _org_cases(report.problems)
    root = ET.Element("testsuites")
    for index, (name, cases) in enumerate(suites.items()):
        _suite(root, report, name, cases, index, timestamp, hostname or "localhost")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


__all__ = ["junit_xml"]
