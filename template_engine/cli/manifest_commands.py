"""``manifests``: the objects the cluster runs for one pair, or for every pair of the org into a folder.

Exit statuses (docs/cli.md, "manifests"), as ``check`` and ``preview`` count them: 0 every pair written is
runnable; 1 a pair is not runnable (its objects are still written: they are what would be submitted), a pair
cannot be composed (``--all``: its file is missing and stderr says why) or the org has a problem
(``--all``, as ``check`` reports it); 2 bad input or usage (an unusable folder or ``cluster.yaml``, an unknown
project, department or template, the one pair asked for cannot be composed, an ``--out`` that may not be
replaced).
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path as FsPath

import click

from template_engine.cli.conventions import error_prefix, say, warn
from template_engine.cli.options import EXIT_ERROR, EXIT_FINDINGS, fail, parse_vars, root_option, vars_option
from template_engine.cli.pick import cluster_option, compose_one
from template_engine.cluster.mapping import Manifests
from template_engine.cluster.yamlout import dump_documents
from template_engine.cluster_objects import origin_comments
from template_engine.compose import Composition, MergeCache, compose
from template_engine.errors import CompositionWarning, InputError, Location, Problem, TemplateEngineError
from template_engine.loader.tree import load_org, reference_problems, resolve_root
from template_engine.org import Org, Scope, TemplateRef, View
from template_engine.runnable import RunnableIssue
from template_engine.staging import exists, put_in_place, sibling

__all__ = ["manifests_command"]

#: The file that marks a folder written by ``manifests --all`` (which the next run may replace whole).
MARKER = ".template-engine-manifests"


def _load(root: FsPath) -> Org:
    try:
        return load_org(resolve_root(root))
    except TemplateEngineError as exc:
        fail(exc)


def _who(view: View) -> str:
    """The pair's first column as ``check`` shows it: the project, ``(DEPARTMENT)``, ``(CLUSTER)`` or
    ``(system)``."""
    return view.project or f"({view.nearest.name or 'system'})"


def file_name(view: View, template: str, output: str) -> str:
    """``PROJECT--TEMPLATE.yaml``; ``(DEPARTMENT)--`` or ``(system)--`` for a pair seen from its own scope."""
    return f"{_who(view)}--{template}.{'json' if output == 'json' else 'yaml'}"


def render(org: Org, composition: Composition, output: str, annotate: bool) -> str:
    """The composition's objects as multi-document YAML (with ``annotate``, each value's origin) or JSON."""
    found = composition.manifests
    objects = list(found.objects) if found is not None else []
    if output == "json":
        return json.dumps(objects, indent=2, ensure_ascii=False) + "\n"
    return dump_documents(objects, origin_comments(org, composition) if annotate else None)


def _warnings(composition: Composition) -> list[CompositionWarning]:
    """The composition's warnings, then the objects' (a field they cannot hold, placed at its layer)."""
    found: Manifests | None = composition.manifests
    out = list(composition.runnable.warnings)
    for warning in found.warnings if found is not None else ():
        result = composition.master if warning.replica == "master" else composition.worker
        if warning.location is None and result is not None:
            warning = replace(warning, location=result.locate(warning.field))
        out.append(warning)
    return out


def _issue_text(issue: RunnableIssue) -> str:
    return issue.one_line() + (f" ({issue.check})" if issue.check else "")


def _report(composition: Composition, prefix: str, warnings: bool = True) -> bool:
    """Warnings (unless ``warnings`` is false: ``--all`` groups them) and runnable issues on stderr, one line
    each; whether the composition is runnable."""
    for warning in _warnings(composition) if warnings else ():
        warn(f"{prefix}{warning.replica} {warning.one_line()}")
    for issue in composition.runnable.issues:
        click.echo(f"{error_prefix()} {prefix}not runnable: {_issue_text(issue)}", err=True)
    return composition.runnable.is_runnable


#: A warning of ``--all`` as it is grouped: its place (``file:line``, empty when unknown), field and message.
_WarningKey = tuple[str, str, str]


@dataclass(slots=True)
class _Group:
    """The pairs (and their replicas) that one warning of one source line touches."""

    location: Location | None
    replicas: set[str] = field(default_factory=set)
    pairs: list[str] = field(default_factory=list)

    def add(self, replica: str, pair: str) -> None:
        self.replicas.add(replica)
        if pair not in self.pairs:
            self.pairs.append(pair)


def _group(groups: dict[_WarningKey, _Group], composition: Composition, pair: str) -> None:
    for warning in _warnings(composition):
        place = warning.location.place() if warning.location is not None else ""
        key = (place, warning.field_text(), warning.message)
        groups.setdefault(key, _Group(warning.location)).add(warning.replica, pair)


def _grouped_lines(groups: dict[_WarningKey, _Group]) -> list[str]:
    """One line per source location (and wording) of a warning, in file and line order (the warnings no
    layer placed last): ``REPLICAS FIELD: MESSAGE [FILE:LINE] in N pair(s): P / T, ...``."""

    def order(item: tuple[_WarningKey, _Group]) -> tuple[bool, str, int, str, str]:
        (_, field_text, message), group = item
        where = group.location
        line = where.line if where is not None and where.line is not None else 0
        return (where is None, where.file if where is not None else "", line, field_text, message)

    lines = []
    for (place, field_text, message), group in sorted(groups.items(), key=order):
        replicas = " and ".join(r for r in ("worker", "master") if r in group.replicas)
        what = f"{replicas} {field_text}: {message}" if field_text else f"{replicas}: {message}"
        where = f" [{place}]" if place else ""
        count = len(group.pairs)
        lines.append(f"{what}{where} in {count} pair{'s' * (count != 1)}: {', '.join(group.pairs)}")
    return lines


def not_runnable_header(composition: Composition) -> str:
    """The YAML comment that opens the file of a pair that is not runnable: that it is not, and why."""
    lines = [
        "# NOT RUNNABLE: Run:ai would not accept this pair (template-engine check says why); these objects",
        "# are written for inspection, as they would be submitted. Do not apply them. The issues:",
    ]
    lines += [f"#   {_issue_text(issue)}" for issue in composition.runnable.issues]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class _Written:
    files: dict[str, str]
    runnable: int
    not_runnable: int
    failed: int
    #: The problems that stopped a pair's composition (said with the pair, not again for the org).
    shown: frozenset[Problem]
    #: ``FILE: ISSUE`` for each issue of a pair that is not runnable (the marker file lists them).
    refused: tuple[str, ...] = ()


def _every_pair(org: Org, values: dict[str, str], output: str, annotate: bool) -> _Written:
    files: dict[str, str] = {}
    runnable = not_runnable = failed = 0
    shown: set[Problem] = set()
    cache: MergeCache = {}
    groups: dict[_WarningKey, _Group] = {}
    refused: list[str] = []
    for view, found in org.views():
        pair = f"{_who(view)} / {found.name}"
        label = f"{pair}: "
        try:
            composition = compose(org, found, view, values, cache=cache)
        except TemplateEngineError as exc:
            failed += 1
            shown.update(exc.problems)
            for problem in exc.problems:
                click.echo(f"{error_prefix()} {label}cannot be composed: {problem.render()}", err=True)
            continue
        name = file_name(view, found.name, output)
        text = render(org, composition, output, annotate)
        _group(groups, composition, pair)
        if _report(composition, label, warnings=False):
            runnable += 1
        else:
            not_runnable += 1
            refused += [f"{name}: {_issue_text(issue)}" for issue in composition.runnable.issues]
            if output != "json":  # JSON holds no comment: the folder's marker file lists the pair
                text = not_runnable_header(composition) + text
        files[name] = text
    for ref, file in sorted(org.broken_refs.items()):
        if isinstance(ref, TemplateRef):
            failed += 1
            shown.update(org.broken[file])
            scope: Scope = ref.scope
            who = scope.name if scope.type == "project" else f"({scope.name or 'system'})"
            for problem in org.broken[file]:
                click.echo(
                    f"{error_prefix()} {who} / {ref.name}: cannot be composed: {problem.render()}", err=True
                )
    for line in _grouped_lines(groups):
        warn(line)
    return _Written(files, runnable, not_runnable, failed, frozenset(shown), tuple(refused))


def _refuse(message: str, expected: str) -> InputError:
    return InputError([Problem(message, (), None, expected)])


def out_refused(out: FsPath) -> InputError | None:
    """Why ``out`` may not be written (``None``: it may): not a folder, or one that holds other files."""
    expected = "a new or empty folder, or an earlier `manifests --all` output (which is replaced whole)"
    if exists(out):
        if not out.is_dir():
            return _refuse(f"--out {str(out)!r} is not a folder", expected)
        if any(out.iterdir()) and not (out / MARKER).is_file():
            return _refuse(f"--out {str(out)!r} is not empty and has no {MARKER}", expected)
    return None


def write_folder(files: dict[str, str], out: FsPath, not_runnable: tuple[str, ...] = ()) -> None:
    """``files`` as the folder ``out``, written aside and renamed into place when whole.

    ``out`` must be new, empty, or written by ``manifests --all`` before (it holds :data:`MARKER`), which is
    then replaced whole; anything else, or a failure to write, is an :class:`InputError` (``out`` is then left
    as it was).
    """
    refused = out_refused(out)
    if refused is not None:
        raise refused
    staged: FsPath | None = None
    try:
        staged = sibling(out, "manifests")
        for name, text in sorted(files.items()):
            (staged / name).write_text(text, encoding="utf-8")
        marker = "Written by `template-engine manifests --all`; the next run replaces this whole folder.\n"
        if not_runnable:
            marker += "Not runnable (do not apply these files):\n"
            marker += "".join(f"  {line}\n" for line in not_runnable)
        (staged / MARKER).write_text(marker, encoding="utf-8")
        put_in_place(staged, out, "manifests")
    except OSError as exc:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
        raise _refuse(
            f"cannot write {str(out)!r}: {exc.strerror or exc}", "a folder that can be written"
        ) from None


def _usage(ctx: click.Context, message: str) -> None:
    raise click.UsageError(message, ctx)


@click.command(name="manifests")
@root_option
@click.option("--project", "-p", help="The pair's project.")
@click.option("--department", "-d", help="As seen from this department (no project).")
@cluster_option
@click.option("--template", "-t", help="The template's name.")
@vars_option
@click.option("--annotate", is_flag=True, help="Write each value's origin beside it (a YAML comment).")
@click.option(
    "--all", "every", is_flag=True, help="Every pair of the org (the pairs of `check`); needs --out."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=FsPath),
    help="With --all: the folder to write, one file per pair (new, empty, or an earlier --all output).",
)
@click.option(
    "--output",
    "-o",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="Output format.",
)
@click.pass_context
def manifests_command(
    ctx: click.Context,
    root: FsPath,
    project: str | None,
    department: str | None,
    cluster: str | None,
    template: str | None,
    variables: tuple[str, ...],
    annotate: bool,
    every: bool,
    out: FsPath | None,
    output: str,
) -> None:
    """Print the Kubernetes objects the cluster runs for a pair (YAML documents, or a JSON list).

    With --all --out DIR, write the objects of every pair into DIR, one file per pair; exit 1 when a pair is
    not runnable or cannot be composed.
    """
    if annotate and output == "json":
        _usage(ctx, "--annotate writes YAML comments: it cannot be used with -o json")
    if every:
        if out is None:
            _usage(ctx, "--all writes one file per pair: give the folder with --out DIR")
        named = (("--project", project), ("--department", department), ("--cluster", cluster))
        given = [name for name, value in named if value]
        given += ["--template"] if template else []
        if given:
            _usage(ctx, f"--all writes every pair: it cannot be used with {', '.join(given)}")
    elif out is not None:
        _usage(ctx, "--out writes every pair: use it with --all (one pair is printed on stdout)")
    elif template is None:
        _usage(ctx, "give --template T (and --project P), or --all --out DIR")
    values = parse_vars(variables)
    refused = out_refused(out) if out is not None else None
    if refused is not None:
        fail(refused)  # before any work
    org = _load(root)
    if not every:
        assert template is not None
        composition = compose_one(org, template, project, department, cluster, values)
        click.echo(render(org, composition, output, annotate), nl=False)
        sys.exit(0 if _report(composition, "") else EXIT_FINDINGS)
    assert out is not None
    written = _every_pair(org, values, output, annotate)
    in_rows = {file for ref, file in org.broken_refs.items() if isinstance(ref, TemplateRef)}
    problems = [p for f in sorted(org.broken) if f not in in_rows for p in org.broken[f]]
    problems = [p for p in [*problems, *reference_problems(org)] if p not in written.shown]
    total = written.runnable + written.not_runnable + written.failed
    if total == 0:
        problems.append(
            Problem(f"no (project, template) pair in the org in {root}: nothing to write", (), None)
        )
    for problem in problems:
        click.echo(f"{error_prefix()} {problem.render()}", err=True)
    try:
        write_folder(written.files, out, written.refused)
    except TemplateEngineError as exc:
        for problem in exc.problems:
            click.echo(f"{error_prefix()} {problem.render()}", err=True)
        sys.exit(EXIT_ERROR)
    summary = (
        f"wrote {len(written.files)} file(s) to {out}: {total} pair(s), {written.runnable} runnable, "
        f"{written.not_runnable} not runnable"
    )
    if written.failed:
        summary += f", {written.failed} cannot be composed"
    if problems:
        summary += f"; {len(problems)} problem(s) in the org (as `validate` reports them)"
    say(summary)
    bad = written.not_runnable or written.failed or problems
    sys.exit(EXIT_FINDINGS if bad else 0)
