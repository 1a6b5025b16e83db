"""The ``template-engine`` command: a thin adapter from arguments to the engine and back to text."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path as FsPath
from typing import Any, NoReturn, TypeVar

import click
import yaml

from template_engine.compose import Composition, MergeCache, compose
from template_engine.errors import TemplateEngineError
from template_engine.explain import explain
from template_engine.loader.tree import load_org, reference_problems, resolve_root
from template_engine.org import Org, View
from template_engine.paths import parse_path

F = TypeVar("F", bound=Callable[..., Any])

#: Exit statuses: 0 all good, 1 a result the user asked to be told about (not runnable, differences,
#: invalid files), 2 bad input or usage.
EXIT_FINDINGS = 1
EXIT_ERROR = 2


def dump_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=True, allow_unicode=True, default_flow_style=False)


def _emit(value: Any, output: str) -> None:
    click.echo(dump_json(value) if output == "json" else dump_yaml(value).rstrip("\n"))


def fail(error: TemplateEngineError) -> NoReturn:
    for problem in error.problems:
        click.echo(f"error: {problem.render()}", err=True)
    sys.exit(EXIT_ERROR)


def root_option(func: F) -> F:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=FsPath),
        default=FsPath("templates"),
        show_default=True,
        help="The templates folder (with org.yaml).",
    )(func)


def output_option(default: str) -> Callable[[F], F]:
    def wrap(func: F) -> F:
        return click.option(
            "--output",
            "-o",
            type=click.Choice(["json", "yaml", "text"][: 3 if default == "text" else 2]),
            default=default,
            show_default=True,
            help="Output format.",
        )(func)

    return wrap


def parse_vars(values: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in values:
        name, sep, value = raw.partition("=")
        if not sep or not name.strip().isidentifier():
            raise click.BadParameter(
                f"{raw!r} is not NAME=VALUE with NAME a plain identifier", param_hint="--var"
            )
        if name.strip() in out:
            raise click.BadParameter(f"{name.strip()!r} is given more than once", param_hint="--var")
        out[name.strip()] = value
    return out


def _load(root: FsPath) -> Org:
    try:
        return load_org(resolve_root(root))
    except TemplateEngineError as exc:
        fail(exc)


def _compose_one(
    org: Org, template: str, project: str | None, department: str | None, variables: dict[str, str]
) -> Composition:
    try:
        view = org.view_of(project, department)
        found = org.find_template(template, view)
        if project is None and department is None:
            view = org.own_view(found)
        return compose(org, found, view, variables)
    except TemplateEngineError as exc:
        fail(exc)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="template-engine")
def main() -> None:
    """Compose layered Run:ai-style defaults, assets and templates into effective specs."""


@main.command()
@root_option
@click.option("--project", "-p", help="Preview as seen from this project.")
@click.option("--department", "-d", help="Preview as seen from this department (no project).")
@click.option("--template", "-t", required=True, help="The template's name.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE", help="A variable for {{ NAME }}.")
@output_option("json")
def preview(
    root: FsPath,
    project: str | None,
    department: str | None,
    template: str,
    variables: tuple[str, ...],
    output: str,
) -> None:
    """Print the composed template: meta, spec, master, runnable, combinedSpec, combinedMasterSpec."""
    org = _load(root)
    composition = _compose_one(org, template, project, department, parse_vars(variables))
    for warning in composition.runnable.warnings:
        click.echo(f"warning: {warning.field}: {warning.message}", err=True)
    _emit(composition.to_response(), output)


@main.command()
@root_option
@click.option("--project", "-p", help="Only the pairs of this project.")
@click.option("--template", "-t", help="Only this template.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE", help="A variable for {{ NAME }}.")
@output_option("text")
def check(
    root: FsPath, project: str | None, template: str | None, variables: tuple[str, ...], output: str
) -> None:
    """Runnability of every visible (project, template) pair; exit 1 when any is not runnable."""
    org = _load(root)
    values = parse_vars(variables)
    if project is not None:
        try:
            org.view_of(project)
        except TemplateEngineError as exc:
            fail(exc)
    rows: list[dict[str, Any]] = []
    cache: MergeCache = {}
    unused = set(values)
    for view, found in org.views():
        if project is not None and view.project != project:
            continue
        if template is not None and found.name != template:
            continue
        row: dict[str, Any] = {
            "project": view.project,
            "department": view.department,
            "template": found.name,
            "scope": str(found.scope),
        }
        try:
            result = compose(org, found, view, values, cache=cache)
        except TemplateEngineError as exc:
            row.update(status="error", isRunnable=False, issues=[p.to_dict() for p in exc.problems])
        else:
            runnable = result.runnable
            # An unused --var is said once for the whole run (below), not for every pair that ignores it.
            unused &= {w.field[len("--var ") :] for w in runnable.warnings if w.field.startswith("--var ")}
            row.update(
                status="runnable" if runnable.is_runnable else "not runnable",
                isRunnable=runnable.is_runnable,
                issues=[i.to_dict() for i in runnable.issues],
                warnings=[w.to_dict() for w in runnable.warnings if not w.field.startswith("--var ")],
            )
        rows.append(row)
    for ref, file in sorted(org.broken_refs.items()):
        kind, scope_type, scope_name, *rest = ref
        if kind != "template" or (template is not None and rest[0] != template):
            continue
        if project is not None and not (scope_type == "project" and scope_name == project):
            continue
        rows.append(
            {
                "project": scope_name if scope_type == "project" else None,
                "department": scope_name if scope_type == "department" else None,
                "template": rest[0],
                "scope": scope_type if not scope_name else f"{scope_type} {scope_name}",
                "status": "error",
                "isRunnable": False,
                "issues": [p.to_dict() for p in org.broken[file]],
            }
        )
    if template is not None and not rows:
        fail(TemplateEngineError([_no_pairs(template, project)]))
    for name in sorted(unused):
        click.echo(f"warning: --var {name}: variable {name!r} is not used by any value (a typo?)", err=True)
    if output == "text":
        _print_table(rows)
    else:
        _emit({"results": rows, "runnable": sum(r["isRunnable"] for r in rows), "total": len(rows)}, output)
    sys.exit(0 if all(r["isRunnable"] for r in rows) else EXIT_FINDINGS)


def _no_pairs(template: str, project: str | None) -> Any:
    from template_engine.errors import Problem

    where = f" from project {project!r}" if project else ""
    return Problem(f"no template {template!r} is visible{where}")


def _first_issue(issue: dict[str, Any]) -> str:
    where = issue.get("file", "")
    if where and issue.get("line"):
        where += f":{issue['line']}"
    field = issue.get("field", "")
    return ": ".join(x for x in (where, field, issue["message"]) if x)


def _print_table(rows: list[dict[str, Any]]) -> None:
    head = ("PROJECT", "TEMPLATE", "SCOPE", "STATUS", "FIRST ISSUE")
    table = [
        (
            r["project"] or (f"({r['department']})" if r["department"] else "(system)"),
            r["template"],
            r["scope"],
            r["status"],
            _first_issue(r["issues"][0]) if r["issues"] else "",
        )
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *table, strict=False)]
    for line in (head, *table):
        click.echo("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
    bad = sum(not r["isRunnable"] for r in rows)
    click.echo(f"\n{len(rows) - bad} runnable, {bad} not runnable, {len(rows)} in all")
    for r in rows:
        notes = [("issue", i) for i in r["issues"][1:]] + [("warning", w) for w in r.get("warnings", [])]
        if notes:
            click.echo(f"\n{r['project'] or r['scope']} / {r['template']}:")
            for kind, note in notes:
                where = " ".join(x for x in (note.get("replica"), _first_issue(note)) if x)
                click.echo(f"  {kind}: {where}")


@main.command(name="explain")
@root_option
@click.option("--project", "-p", help="As seen from this project.")
@click.option("--department", "-d", help="As seen from this department (no project).")
@click.option("--template", "-t", required=True, help="The template's name.")
@click.option("--var", "variables", multiple=True, metavar="NAME=VALUE", help="A variable for {{ NAME }}.")
@click.argument("field", required=False)
@output_option("text")
def explain_command(
    root: FsPath,
    project: str | None,
    department: str | None,
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
    composition = _compose_one(org, template, project, department, parse_vars(variables))
    entries = explain(composition, path)
    if field and not entries:
        click.echo(f"error: {field} is neither set nor excluded by any layer", err=True)
        sys.exit(EXIT_FINDINGS)
    warnings = composition.runnable.warnings
    if output == "text":
        for entry in entries:
            click.echo(entry.render())
        for warning in warnings:
            click.echo(f"warning: {warning.field}: {warning.message}")
    else:
        _emit(
            {"entries": [e.to_dict() for e in entries], "warnings": [w.to_dict() for w in warnings]}, output
        )


@main.command()
@root_option
@output_option("text")
def validate(root: FsPath, output: str) -> None:
    """Check every file against the schema and the reference rules; exit 1 on any problem."""
    org = _load(root)
    problems = [p for file in sorted(org.broken) for p in org.broken[file]] + reference_problems(org)
    if output == "text":
        for problem in problems:
            click.echo(f"error: {problem.render()}")
        for warning in org.warnings:
            click.echo(f"warning: {warning.render()}")
        files = len({p.location.file for p in problems if p.location})
        summary = f"{len(problems)} problem(s) in {files} file(s)" if problems else "all files are valid"
        click.echo(summary + (f"; {len(org.warnings)} warning(s)" if org.warnings else ""))
    else:
        _emit(
            {
                "valid": not problems,
                "problems": [p.to_dict() for p in problems],
                "warnings": [w.to_dict() for w in org.warnings],
            },
            output,
        )
    sys.exit(EXIT_FINDINGS if problems else 0)


# -- commands from other modules (one add_command line each) --
from template_engine.service.commands import db, serve  # noqa: E402

main.add_command(serve)
main.add_command(db)
from template_engine.cli_diff import diff, impact  # noqa: E402

main.add_command(diff)
main.add_command(impact)


__all__ = ["View", "main"]
