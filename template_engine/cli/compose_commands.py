"""``preview``, ``check``, ``explain`` and ``validate``: one templates folder, composed or checked."""

from __future__ import annotations

import functools
import gc
import platform
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any

import click

from template_engine.cli.conventions import current, error_prefix, phase, say, status_word, warn
from template_engine.cli.fanout import available_cpus, map_runs, plan_processes
from template_engine.cli.options import (
    CHECK_REPORTS,
    EXIT_FINDINGS,
    docs_url_option,
    dump_json,
    dump_yaml,
    emit,
    fail,
    org_counts,
    output_option,
    parse_vars,
    root_option,
    vars_option,
)
from template_engine.cli.pick import cluster_option, compose_one, org_problems
from template_engine.compose import Composition, MergeCache, compose, unused_variable
from template_engine.errors import CompositionWarning, Location, Problem, TemplateEngineError, WarningKind
from template_engine.explain import explain, not_applied
from template_engine.kinds import DISTRIBUTED, KIND_BY_NAME, KINDS, WorkloadKind
from template_engine.loader.tree import load_org, reference_problems, resolve_root
from template_engine.org import Org, Scope, Template, TemplateRef, View
from template_engine.paths import format_path, parse_path
from template_engine.runnable import RunnableIssue

if TYPE_CHECKING:  # the CI formats are imported when one is asked for (tests/test_cli_lazy.py)
    from template_engine.reports import CheckReport, Finding, JobRef

__all__ = ["check", "explain_command", "preview", "validate"]


def _load(root: FsPath, jobs: int = 1) -> Org:
    """The org in ``root``; with ``-v``, what was read and how long it took.  ``jobs`` as ``check --jobs``:
    the files read in that many processes (0: one per core, when there are enough files to gain)."""

    def spread(work: Callable[[Sequence[Any]], Any], items: Sequence[Any]) -> list[Any]:
        processes = plan_processes(jobs, len(items), available_cpus())
        if processes > 1:
            said.append(f"{processes} processes")
        return map_runs(work, items, processes)

    with phase(f"loaded {root}") as said:
        try:
            org = load_org(resolve_root(root), spread=None if jobs == 1 else spread)
        except TemplateEngineError as exc:
            fail(exc)
        said.insert(0, org_counts(org))
    return org


@click.command()
@root_option
@click.option("--project", "-p", help="Preview as seen from this project.")
@click.option("--department", "-d", help="Preview as seen from this department (no project).")
@cluster_option
@click.option("--template", "-t", required=True, help="The template's name.")
@vars_option
@output_option("json")
def preview(
    root: FsPath,
    project: str | None,
    department: str | None,
    cluster: str | None,
    template: str,
    variables: tuple[str, ...],
    output: str,
) -> None:
    """Print the composed template: meta, spec, master, runnable, combinedSpec, combinedMasterSpec."""
    org = _load(root)
    with phase("composed"):
        composition = compose_one(org, template, project, department, cluster, parse_vars(variables))
    for warning in composition.runnable.warnings:
        warn(warning.one_line())
    emit(composition.to_response(), output)


# -- check --------------------------------------------------------------------------------------------------

Note = Problem | RunnableIssue | CompositionWarning


@dataclass(frozen=True, slots=True)
class _Seen:
    """Where a runnable issue's value is set (as ``check -o sarif`` locates it: the layer that wrote it, else
    the policy rule or the template that asks for it) and the value, when the field holds one."""

    location: Location | None
    has_value: bool = False
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = self.location.to_dict() if self.location is not None else {}
        if self.has_value:
            out["value"] = self.value
        return out


@dataclass(frozen=True, slots=True)
class _Row:
    """One pair of ``check``: its status, its issues and, when it composed, its warnings."""

    project: str | None
    department: str | None
    template: str
    scope: str
    status: str
    #: Why it is not runnable: runnable issues, or the problems that stopped its composition.
    issues: tuple[Problem | RunnableIssue, ...]
    #: ``None`` when it did not compose.
    warnings: tuple[CompositionWarning, ...] | None = None
    #: For a CI format (``None`` otherwise): the issues as findings at their places, and the job object.
    facts: tuple[tuple[Finding, ...], JobRef | None] | None = None
    #: For each runnable issue (in ``issues``' order): where its value is set, and the value.
    seen: tuple[_Seen, ...] = ()
    #: The name of the template's workload kind (a name, not the kind, since rows cross processes: see
    #: :attr:`workload`); ``None``: its file is invalid, so its kind is not known.
    kind: str | None = DISTRIBUTED.name
    #: The pair's cluster, in an org that names clusters.
    cluster: str | None = None

    def issue_dicts(self) -> list[dict[str, Any]]:
        """Each issue's record, a runnable issue's with the ``file``, ``line``, ``layer`` and ``value``
        known of it."""
        seen = dict(zip((i for i in self.issues if isinstance(i, RunnableIssue)), self.seen, strict=False))
        return [{**i.to_dict(), **(seen[i].to_dict() if i in seen else {})} for i in self.issues]

    def describe(self, note: Note) -> str:
        """:func:`_describe` of one of this row's notes, a runnable issue with its value and place."""
        seen = self.seen[self.issues.index(note)] if isinstance(note, RunnableIssue) and self.seen else None
        return _describe(note, seen)

    @property
    def is_runnable(self) -> bool:
        return self.status == "runnable"

    @property
    def workload(self) -> WorkloadKind | None:
        """The template's workload kind, when its file says one."""
        return KIND_BY_NAME[self.kind] if self.kind is not None else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "project": self.project,
            "department": self.department,
            **({"cluster": self.cluster} if self.cluster is not None else {}),
            "template": self.template,
            "scope": self.scope,
            "workloadType": self.workload.workload_type if self.workload is not None else None,
            "status": self.status,
            "isRunnable": self.is_runnable,
            "issues": self.issue_dicts(),
        }
        if self.warnings is not None:
            out["warnings"] = [w.to_dict() for w in self.warnings]
        return out


@dataclass(frozen=True, slots=True)
class _Checked:
    """What one run of pairs came to (:func:`_check_run`), as one process sends it back."""

    rows: list[_Row]
    #: The ``--var`` names that no composed pair of the run used, each with the last such pair's warning
    #: (``None`` while no pair composed).
    unused: dict[str, CompositionWarning | None]


def _check_run(org: Org, values: dict[str, str], ci: bool, run: Sequence[tuple[View, Template]]) -> _Checked:
    """Compose each pair of ``run`` in order, with one merge cache (``check``'s work, shared out by
    :func:`~template_engine.cli.fanout.map_runs`); ``ci``: keep the findings a CI format needs."""
    rows: list[_Row] = []
    cache: MergeCache = {}
    unused: dict[str, CompositionWarning | None] = dict.fromkeys(values)
    for view, found in run:
        pair = (view.project, view.department, found.name, str(found.scope))
        kind = found.kind.name
        try:
            result = compose(org, found, view, values, cache=cache)
        except TemplateEngineError as exc:
            rows.append(_Row(*pair, "error", exc.problems, kind=kind, cluster=view.cluster))
            continue
        runnable = result.runnable
        per_var = {w.variable: w for w in runnable.warnings if w.kind is WarningKind.UNUSED_VARIABLE}
        unused = {name: per_var[name] for name in unused if name in per_var}
        status = "runnable" if runnable.is_runnable else "not runnable"
        others = tuple(w for w in runnable.warnings if w.kind is not WarningKind.UNUSED_VARIABLE)
        facts = _facts(result) if ci else None
        seen = _seen(result) if runnable.issues else ()
        rows.append(_Row(*pair, status, runnable.issues, others, facts, seen, kind, view.cluster))
    return _Checked(rows, unused)


def _still_unused(
    values: dict[str, str], runs: Sequence[dict[str, CompositionWarning | None]]
) -> dict[str, CompositionWarning | None]:
    """The ``--var`` names no run used, with the warning of the last run that composed a pair: what one run
    over all the pairs would have found."""
    unused: dict[str, CompositionWarning | None] = dict.fromkeys(values)
    for found in runs:
        unused = {name: found[name] or warning for name, warning in unused.items() if name in found}
    return unused


@click.command()
@root_option
@click.option("--project", "-p", help="Only the pairs of this project.")
@click.option("--template", "-t", help="Only this template.")
@vars_option
@output_option("text", CHECK_REPORTS)
@docs_url_option
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    metavar="N",
    help="Processes reading the files and composing the pairs: 0, one per core when the org is large enough "
    "to gain; 1, this process only.",
)
def check(
    root: FsPath,
    project: str | None,
    template: str | None,
    variables: tuple[str, ...],
    output: str,
    docs_url: str | None,
    jobs: int,
) -> None:
    """Runnability of every visible (project, template) pair; exit 1 when any is not runnable."""
    org = _load(root, jobs)
    # The loaded org lives until the process ends: out of the collector's sight, the full collections
    # that the compositions' allocations trigger do not walk all of its objects again each time (and the
    # processes forked below share its pages instead of copying them).
    gc.freeze()
    values = parse_vars(variables)
    if project is not None:
        try:
            org.view_of(project)
        except TemplateEngineError as exc:
            fail(exc)
    pairs = [
        (view, found)
        for view, found in org.views()
        if (project is None or view.project == project) and (template is None or found.name == template)
    ]
    with phase("composed") as said:
        processes = plan_processes(jobs, len(pairs), available_cpus())
        work = functools.partial(_check_run, org, values, output in CHECK_REPORTS)
        runs = map_runs(work, pairs, processes)
        rows = [row for run in runs for row in run.rows]
        unused = _still_unused(values, [run.unused for run in runs])
        said.append(f"{len(rows)} pairs" + (f", {processes} processes" if processes > 1 else ""))
    for ref, file in sorted(org.broken_refs.items()):
        if not isinstance(ref, TemplateRef) or (template is not None and ref.name != template):
            continue
        if project is not None and ref.scope != Scope("project", project):
            continue
        own = org.scope_view(ref.scope)
        rows.append(
            _Row(
                own.project,
                own.department,
                ref.name,
                str(ref.scope),
                "error",
                org.broken[file],
                kind=None,
                cluster=own.cluster,
            )
        )
    if template is not None and not rows:
        fail(TemplateEngineError([_no_pairs(template, project), *org_problems(org)]))  # as validate says
    # Whatever validate finds fails the check too: a broken defaults file, policy or asset, an unknown
    # department, a folder that cannot be listed (a broken template is already a row of its own).
    in_rows = {file for ref, file in org.broken_refs.items() if isinstance(ref, TemplateRef)}
    shown = {issue for row in rows for issue in row.issues}  # a pair's error already names it
    problems = [p for f in sorted(org.broken) if f not in in_rows for p in org.broken[f] if p not in shown]
    problems += [p for p in reference_problems(org) if p not in shown]
    if not rows and not problems:
        where = f"project {project!r}" if project is not None else f"the org in {root}"
        problems.append(Problem(f"no (project, template) pair in {where}: nothing to check", (), None))
    for name, warning in sorted(unused.items()):
        # No pair composed when there is no warning to show: then every variable went unused.
        warn((warning or unused_variable(name)).one_line())
    # The pairs of a template org.yaml lists as a draft are reported, and fail nothing (decisions.md).
    drafts = {(name, str(scope)) for scope, name in org.drafts}
    softened = [r for r in rows if not r.is_runnable and (r.template, r.scope) in drafts]
    failing = [r for r in rows if not r.is_runnable and (r.template, r.scope) not in drafts]
    if output == "text":
        if not current().quiet:  # the exit status says it all
            _print_table(rows, problems)
            if softened:
                say(f"{len(softened)} not runnable pair(s) of draft templates (org.yaml drafts): not failing")
    elif output in CHECK_REPORTS:
        click.echo(_ci_report(output, _check_report(org, root, rows, problems), docs_url), nl=False)
    else:
        answer = {"results": [r.to_dict() for r in rows], **_counts(rows)}
        if org.drafts:  # only where org.yaml names drafts
            answer["drafts"] = [
                {"template": r.template, "scope": r.scope, "project": r.project} for r in softened
            ]
        emit({**answer, "problems": [p.to_dict() for p in problems]}, output)
    sys.exit(0 if not failing and not problems else EXIT_FINDINGS)


def _facts(composition: Composition) -> tuple[tuple[Finding, ...], JobRef | None]:
    from template_engine.reports import composition_findings, job_ref

    return composition_findings(composition), job_ref(composition)


def _seen(composition: Composition) -> tuple[_Seen, ...]:
    """Each runnable issue's place and value, as the CI formats locate it (``reports.findings``)."""
    from template_engine.reports.findings import issue_location, issue_value

    out = []
    for issue in composition.runnable.issues:
        location, _ = issue_location(issue, composition)
        has_value, value = issue_value(issue, composition)
        out.append(_Seen(location, has_value, value))
    return tuple(out)


def _check_report(org: Org, root: FsPath, rows: list[_Row], problems: list[Problem]) -> CheckReport:
    """What ``check`` found, as the CI formats' records (``template_engine.reports``)."""
    from template_engine.reports import CheckReport, PairResult, problem_finding, warning_findings

    invalid = {p for file in org.broken for p in org.broken[file]}
    references = set(reference_problems(org))
    pairs = []
    for row in rows:
        if row.facts is not None:
            findings, job = row.facts
        else:  # it did not compose: a broken template file, or the problems that stopped it
            rule = (
                "files/invalid"
                if row.status == "error" and _all_in(row.issues, invalid)
                else "compose/failed"
            )
            findings, job = tuple(_finding(i, rule) for i in row.issues), None
        namespace = (
            org.settings_of(org.view_of(row.project))[0].namespace(row.project) if row.project else None
        )
        warnings = warning_findings(row.warnings or ())
        status: Any = row.status
        pairs.append(
            PairResult(
                row.project,
                row.department,
                row.template,
                row.scope,
                status,
                findings,
                warnings,
                job,
                namespace,
                row.kind,
            )
        )
    found = tuple(
        problem_finding(
            p, "files/invalid" if p in invalid else "files/reference" if p in references else "check/no-pairs"
        )
        for p in problems
    )
    return CheckReport(tuple(pairs), found, root.as_posix())


def _all_in(issues: tuple[Problem | RunnableIssue, ...], invalid: set[Problem]) -> bool:
    return bool(issues) and all(isinstance(i, Problem) and i in invalid for i in issues)


def _finding(issue: Problem | RunnableIssue, rule: str) -> Finding:
    from template_engine.reports import Finding, problem_finding

    if isinstance(issue, Problem):
        return problem_finding(issue, rule)
    return Finding(rule, issue.message, "error", format_path(issue.field) or None, issue.replica)


def _ci_report(output: str, report: CheckReport, docs_url: str | None) -> str:
    """``report`` in a CI format, ending with a newline."""
    from template_engine.reports import junit_xml, policy_reports, sarif_log

    if output == "sarif":
        from importlib.metadata import version

        return dump_json(sarif_log(report, version("template-engine"), docs_url)) + "\n"
    if output == "junit":
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
        return junit_xml(report, stamp, platform.node()) + "\n"
    return "".join(f"---\n{dump_yaml(doc)}" for doc in policy_reports(report))


def _no_pairs(template: str, project: str | None) -> Problem:
    where = f" from project {project!r}" if project else ""
    return Problem(f"no template {template!r} is visible{where}")


def _closest(composition: Composition, field: str) -> str:
    """`` (did you mean 'labels'?)``: the path of the composition, or the spec's field, closest to ``field``;
    empty when none is close (the did-you-mean a file's unknown field gets)."""
    import difflib

    paths = {format_path(entry.path) for entry in explain(composition, ())}
    paths |= composition.kind.fields()  # the fields of the composition's kind (a training: completions...)
    paths.discard(field)  # a field of the spec that no layer sets is spelt right: nothing to suggest
    close = difflib.get_close_matches(field, sorted(paths), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _any_kind_fields() -> frozenset[str]:
    """The top-level fields of every kind's spec."""
    return frozenset(name for kind in KINDS for role in kind.roles for name in kind.fields(role))


#: The longest value a line of ``check``'s text shows whole (JSON, cut with ``...`` past it).
_VALUE_WIDTH = 60


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= _VALUE_WIDTH else text[: _VALUE_WIDTH - 3] + "..."


def _describe(note: Note, seen: _Seen | None = None) -> str:
    """A problem as ``file:line: field: message``; a runnable issue as ``replica field: message (value V)
    [file:line]``, as a warning is written (``seen``: its value, when it is not a mapping or a list, and
    its place); the parts that are known."""
    if isinstance(note, CompositionWarning):
        return note.one_line()
    if isinstance(note, RunnableIssue):
        text = note.one_line()
        if seen is not None and seen.has_value and not isinstance(seen.value, dict | list):
            text += f" (value {_shown(seen.value)})"  # a whole item or list: JSON has it, the line names it
        if seen is not None and seen.location is not None:
            text += f" [{seen.location.place()}]"
        return text
    where = note.location.place() if note.location is not None else ""
    return ": ".join(part for part in (where, format_path(note.path), note.message) if part)


def _counts(rows: Sequence[_Row]) -> dict[str, int]:
    """The pairs by status, as ``check -o json`` writes them: ``runnable``, ``notRunnable`` (composed, with
    issues), ``errors`` (did not compose: the ``error`` rows) and ``total``, the three adding up to it."""
    errors = sum(r.status == "error" for r in rows)
    runnable = sum(r.is_runnable for r in rows)
    return {
        "runnable": runnable,
        "notRunnable": len(rows) - runnable - errors,
        "errors": errors,
        "total": len(rows),
    }


def _summary_line(rows: Sequence[_Row]) -> str:
    """``3 runnable, 1 not runnable, 2 errors, 6 in all``: the counts of :func:`_counts`; the errors only
    when a pair failed to compose."""
    counts = _counts(rows)
    errors = counts["errors"]
    failed = f"{errors} error{'s' * (errors != 1)}, " if errors else ""
    runnable, not_runnable = counts["runnable"], counts["notRunnable"]
    return f"{runnable} runnable, {not_runnable} not runnable, {failed}{counts['total']} in all"


def _kind_cell(row: _Row) -> str:
    """The KIND column's cell: the kind's name, ``?`` for a template file too broken to say it."""
    return row.kind if row.kind is not None else "?"


def _print_table(rows: list[_Row], problems: list[Problem]) -> None:
    # The KIND column only where some pair is not a distributed training: an org of distributed templates
    # reads as it always has (docs/decisions.md, "The kind in check's table").
    kinds = any(r.kind != DISTRIBUTED.name for r in rows)
    # The CLUSTER column only in an org that names clusters, for the same reason.
    clusters = any(r.cluster is not None for r in rows)
    head = (
        *(("CLUSTER",) if clusters else ()),
        "PROJECT",
        "TEMPLATE",
        *(("KIND",) if kinds else ()),
        "SCOPE",
        "STATUS",
        "FIRST ISSUE",
    )
    status_at = head.index("STATUS")
    table = [
        (
            *((r.cluster or "",) if clusters else ()),
            r.project or (f"({r.department})" if r.department else f"({r.cluster or 'system'})"),
            r.template,
            *((_kind_cell(r),) if kinds else ()),
            r.scope,
            r.status,
            r.describe(r.issues[0]) if r.issues else "",
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table, strict=False)]
    click.echo("  ".join(str(x).ljust(w) for x, w in zip(head, widths, strict=True)).rstrip())
    for line in table:
        cells = [
            status_word(x, w) if i == status_at else x.ljust(w)
            for i, (x, w) in enumerate(zip(line, widths, strict=True))
        ]
        click.echo("  ".join(cells).rstrip())
    summary = _summary_line(rows)
    if problems:
        summary += f"; {len(problems)} problem(s) in the org (as `validate` reports them)"
    click.echo(f"\n{summary}")
    if problems:
        click.echo("\nproblems:")
        for problem in problems:
            click.echo(f"  {error_prefix()} {problem.render()}")
    for r in rows:
        notes: list[tuple[str, Note]] = [("issue", i) for i in r.issues[1:]]
        notes += [("warning", w) for w in r.warnings or ()]
        if notes:
            of_kind = f" ({r.kind})" if r.kind not in (DISTRIBUTED.name, None) else ""
            click.echo(f"\n{r.project or r.scope} / {r.template}{of_kind}:")
            for kind, note in notes:
                # a warning's line names its replica first, as an issue's does
                replica = note.replica if isinstance(note, CompositionWarning) else ""
                where = " ".join(x for x in (replica, r.describe(note)) if x)
                click.echo(f"  {kind}: {where}")


# -- explain, validate --------------------------------------------------------------------------------------


@click.command(name="explain")
@root_option
@click.option("--project", "-p", help="As seen from this project.")
@click.option("--department", "-d", help="As seen from this department (no project).")
@cluster_option
@click.option("--template", "-t", required=True, help="The template's name.")
@vars_option
@click.argument("field", required=False)
@output_option("text")
def explain_command(
    root: FsPath,
    project: str | None,
    department: str | None,
    cluster: str | None,
    template: str,
    variables: tuple[str, ...],
    field: str | None,
    output: str,
) -> None:
    """Where each value came from, including exclusions; FIELD narrows to one path."""
    try:
        path = parse_path(field) if field else ()
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="FIELD") from None
    org = _load(root)
    with phase("composed"):
        composition = compose_one(org, template, project, department, cluster, parse_vars(variables))
    entries = explain(composition, path)
    left_out = not_applied(composition, path)  # what the layers give that the kind lacks: said, not dropped
    if field and not entries and not left_out:
        top = path[0] if isinstance(path[0], str) else None
        if top is not None and top not in composition.kind.fields() and top in _any_kind_fields():
            # a field of another kind (numWorkers of a training): say so, rather than "not set"
            noun = composition.kind.noun
            message = f"{field} is not a field of {'an' if noun[:1] in 'aeiou' else 'a'} {noun}"
            click.echo(f"{error_prefix()} {message}: a {noun}'s spec has no field {top!r}", err=True)
            sys.exit(EXIT_FINDINGS)
        near = _closest(composition, field)
        click.echo(f"{error_prefix()} {field} is neither set nor excluded by any layer{near}", err=True)
        sys.exit(EXIT_FINDINGS)
    warnings = composition.runnable.warnings
    if output == "text":
        for entry in entries:
            say(entry.render())
        for gone in left_out:
            say(gone.render())
        for warning in warnings:
            say(f"warning: {warning.one_line()}")
    else:
        answer = {"entries": [e.to_dict() for e in entries], "warnings": [w.to_dict() for w in warnings]}
        if not composition.kind.is_distributed:  # a distributed training has every field a layer may give
            answer["notApplied"] = [gone.to_dict() for gone in left_out]
        emit(answer, output)


@click.command()
@root_option
@output_option("text")
def validate(root: FsPath, output: str) -> None:
    """Check every file against the schema and the reference rules; exit 1 on any problem."""
    org = _load(root)
    problems = org_problems(org)
    if output == "text":
        for problem in problems:  # errors: printed even when quiet
            click.echo(f"{error_prefix()} {problem.render()}")
        for warning in org.warnings:
            say(f"warning: {warning.render()}")
        files = len({p.location.file for p in problems if p.location})
        summary = f"{len(problems)} problem(s) in {files} file(s)" if problems else "all files are valid"
        say(summary + (f"; {len(org.warnings)} warning(s)" if org.warnings else ""))
    else:
        emit(
            {
                "valid": not problems,
                "problems": [p.to_dict() for p in problems],
                "warnings": [w.to_dict() for w in org.warnings],
            },
            output,
        )
    sys.exit(EXIT_FINDINGS if problems else 0)
