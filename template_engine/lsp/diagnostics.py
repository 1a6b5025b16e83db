"""``check``'s and ``validate``'s problems as an editor shows them: at the place that caused each, with the
pairs it affects.

Each pair's runnable issues (or the problems that stopped its composition) become findings at the place
their value is written (``reports.findings``, the same places SARIF gives); the org's own problems (broken
files, references: ``validate``) at theirs.  A finding that several pairs share is one diagnostic naming
them: ``not runnable in 3 of 5 pairs: vision/vit-finetune, ...``, where 5 is the number of pairs that use
the file it is in.  Plain values: :mod:`.server` turns them into the protocol's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from template_engine.errors import Location, Problem
from template_engine.lsp.analysis import Analysis, PairState
from template_engine.paths import Path
from template_engine.reports.findings import issue_finding, problem_finding, warning_finding
from template_engine.reports.model import Finding

__all__ = ["Diagnostic", "by_file", "pair_findings"]

#: How many pair names a diagnostic lists before ``and N more``.
SHOWN_PAIRS = 5


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem at one place of one file (``line`` and ``column`` from 1, as the loader counts)."""

    file: str
    line: int
    column: int
    level: str
    rule: str
    message: str
    #: The ids of the pairs it is found in (none for a problem of the file itself).
    pairs: tuple[str, ...] = ()
    related: tuple[Location, ...] = ()
    #: The finding's own sentence, without the pairs (``replica field: message``).
    text: str = ""
    #: For a problem of a file: the path of the value in the document (a did-you-mean's place).
    path: Path = ()


def pair_findings(state: PairState, broken: Mapping[str, Iterable[Problem]]) -> list[Finding]:
    """What ``check`` reports of one pair: its runnable issues, or the problems that stopped it (a broken
    file's problem under the file's rule, as ``check -o sarif`` says it); then its composition's
    warnings."""
    outcome = state.outcome
    composition = outcome.composition
    if composition is None:
        invalid = {p for problems in broken.values() for p in problems}
        return [
            problem_finding(p, "files/invalid" if p in invalid else "compose/failed")
            for p in outcome.problems
        ]
    found = [issue_finding(issue, composition) for issue in composition.runnable.issues]
    return found + [warning_finding(w) for w in composition.runnable.warnings]


def _text(finding: Finding) -> str:
    what = " ".join(part for part in (finding.replica or "", finding.field or "") if part)
    return f"{what}: {finding.message}" if what else finding.message


def _pairs_text(analysis: Analysis, file: str, ids: tuple[str, ...], rule: str, level: str) -> str:
    users = analysis.users_of(file)
    total = max(len(users), len(ids))
    how = (
        "not runnable"
        if level == "error" and not rule.startswith(("compose/", "files/"))
        else "fails to compose"
        if level == "error"
        else "found"
    )
    names = [analysis.pairs[pid].name for pid in ids[:SHOWN_PAIRS]]
    more = f" and {len(ids) - SHOWN_PAIRS} more" if len(ids) > SHOWN_PAIRS else ""
    return f"{how} in {len(ids)} of {total} pair{'s' * (total != 1)}: {', '.join(names)}{more}"


def by_file(analysis: Analysis) -> dict[str, list[Diagnostic]]:
    """Every diagnostic of the org's state, by file (relative to the templates folder), in a stable order."""
    grouped: dict[tuple[str, int, int, str, str, str], tuple[Finding, list[str]]] = {}
    paths: dict[tuple[str, int, int, str, str, str], Path] = {}

    def add(finding: Finding, pair: str | None, fallback: str, path: Path = ()) -> None:
        location = finding.location
        file = location.file if location is not None else fallback
        line = location.line if location is not None and location.line is not None else 1
        column = location.column if location is not None and location.column is not None else 1
        key = (file, line, column, finding.level, finding.rule, _text(finding))
        entry = grouped.setdefault(key, (finding, []))
        if path:
            paths.setdefault(key, path)
        if pair is not None and pair not in entry[1]:
            entry[1].append(pair)

    for problem in analysis.problems:
        rule = _problem_rule(problem, analysis.org.broken)
        add(problem_finding(problem, rule), None, "org.yaml", problem.path)
    for warning in analysis.warnings:
        add(_warning(warning), None, "org.yaml")
    for pid, state in analysis.pairs.items():
        for finding in pair_findings(state, analysis.org.broken):
            add(finding, pid, state.pair.template.file)
    out: dict[str, list[Diagnostic]] = {}
    for key, (finding, ids) in grouped.items():
        file, line, column, level, rule, text = key
        shown = f"{text} ({_pairs_text(analysis, file, tuple(ids), rule, level)})" if ids else text
        out.setdefault(file, []).append(
            Diagnostic(
                file, line, column, level, rule, shown, tuple(ids), finding.related, text, paths.get(key, ())
            )
        )
    for found in out.values():
        found.sort(key=lambda d: (d.line, d.column, d.level, d.message))
    return out


def _problem_rule(problem: Problem, broken: Mapping[str, Iterable[Problem]]) -> str:
    for problems in broken.values():
        if problem in problems:
            return "files/invalid"
    return "files/reference"


def _warning(warning: Problem) -> Finding:
    finding = problem_finding(warning, "files/layout")
    return Finding(finding.rule, finding.message, "warning", finding.field, None, finding.location)
