"""``template-engine diff`` and ``template-engine impact``: what a change to a templates folder does.

Exit status: 0 when no pair differs, 1 when some pair does (so CI can gate on it), 2 on an error.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from template_engine.diff import OrgDiff, PairDiff, diff_orgs
from template_engine.errors import Problem, TemplateEngineError
from template_engine.gitrev import Version, copy_tree, materialise, replace_file
from template_engine.loader.tree import load_org, resolve_root
from template_engine.org import Org
from template_engine.snapshots import problem_lines

F = TypeVar("F", bound=Callable[..., Any])

EXIT_DIFFERS = 1
EXIT_ERROR = 2


def _fail(error: TemplateEngineError, where: str | None = None) -> NoReturn:
    prefix = f"in {where}: " if where else ""
    click.echo(f"error: {prefix}{error.render()}", err=True)
    sys.exit(EXIT_ERROR)


def _options(func: F) -> F:
    func = click.option(
        "--output",
        "-o",
        type=click.Choice(["text", "json", "yaml"]),
        default="text",
        show_default=True,
        help="Output format (json and yaml with sorted keys).",
    )(func)
    func = click.option(
        "--var", "variables", multiple=True, metavar="NAME=VALUE", help="A variable for {{ NAME }}."
    )(func)
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=Path),
        default=Path("templates"),
        show_default=True,
        help="The templates folder (with org.yaml), as it is now.",
    )(func)


def _load(root: Path | None, where: str | None = None) -> Org:
    if root is None:  # the revision has no such folder: every pair of the other side is new
        return Org()
    try:
        return load_org(root)
    except TemplateEngineError as exc:
        _fail(exc, where)


def _describe(diff: PairDiff) -> list[str]:
    old_errors, new_errors = diff.error_lines()
    kind = f"({diff.pair.template.scope} template)"
    if diff.status == "disappeared":
        return [f"- {diff.id}  {kind} disappeared"]
    if diff.status == "appeared":
        assert diff.new is not None
        status = diff.new.status()
        composition = diff.new.composition
        if composition is not None and composition.runnable.issue:
            status += f": {composition.runnable.issue}"
        return [f"+ {diff.id}  {kind} appeared, {status}"] + [f"    {line}" for line in new_errors]
    lines = [f"~ {diff.id}  {kind}"]
    if new_errors:
        lines.append("    still fails to compose, now:" if old_errors else "    now fails to compose:")
        lines += [f"      {line}" for line in new_errors]
    elif old_errors:
        lines.append("    composes again; it failed with:")
        lines += [f"      {line}" for line in old_errors]
    lines += [f"    {change.render()}" for change in diff.changes]
    return lines


def _summary(result: OrgDiff) -> str:
    counts = result.summary()
    parts = [f"{counts[s]} {s}" for s in ("changed", "appeared", "disappeared") if counts[s]]
    text = (
        f"{len(result.pairs)} of {result.total} pairs differ: {', '.join(parts)}"
        if result.pairs
        else f"no pair differs ({result.total} pairs)"
    )
    if result.broken:
        text += f"; {len(result.broken)} invalid file{'s' * (len(result.broken) != 1)}"
    return text


def _broken(result: OrgDiff) -> list[str]:
    lines = []
    for file, problems in result.broken:
        lines.append(f"! {file} is invalid (the pairs it would make are missing):")
        lines += [f"    {line}" for line in problem_lines(problems)]
    return lines


def _emit(value: dict[str, Any], output: str) -> None:
    from template_engine.cli import dump_json, dump_yaml

    click.echo(dump_json(value) if output == "json" else dump_yaml(value).rstrip("\n"))


def _report(result: OrgDiff, output: str, head: dict[str, Any], title: str | None = None) -> NoReturn:
    if output == "text":
        if title:
            click.echo(title)
        for line in _broken(result):
            click.echo(line)
        for diff in result.pairs:
            for line in _describe(diff):
                click.echo(line)
        click.echo(_summary(result))
    else:
        broken = [
            {"file": file, "errors": [p.to_dict() for p in problems]} for file, problems in result.broken
        ]
        report = {**head, "summary": result.summary(), "pairs": [d.to_dict() for d in result.pairs]}
        _emit({**report, "invalidFiles": broken}, output)
    sys.exit(EXIT_DIFFERS if result.differs else 0)


def _variables(values: tuple[str, ...]) -> dict[str, str]:
    from template_engine.cli import parse_vars

    return parse_vars(values)


def _version_name(version: Version) -> str:
    return f"{version.label} ({version.revision[:12]})" if version.revision else version.label


@click.command()
@_options
@click.option(
    "--against",
    required=True,
    metavar="FOLDER|REV",
    help="What to compare with: another templates folder, or a git revision of the repository that holds "
    "--root (HEAD~1, origin/main, a commit); a name that is an existing folder is taken as the folder.",
)
def diff(root: Path, against: str, variables: tuple[str, ...], output: str) -> None:
    """Every (project, template) pair whose effective spec differs from --against, field by field.

    Lists the changed fields by path with old and new values and the layer that now sets each, and the
    pairs that appeared or disappeared.  Exit status 0 when nothing differs, 1 when something does.
    """
    root = resolve_root(root)
    values = _variables(variables)
    new = _load(root)
    try:
        with materialise(root, against) as version:
            if version.root is None:
                click.echo(f"note: {root} does not exist at {against}; every pair is new", err=True)
            old = _load(version.root, _version_name(version))
    except TemplateEngineError as exc:
        _fail(exc)
    _report(diff_orgs(old, new, values), output, {"root": str(root), "against": against})


def _inside(file: Path, root: Path) -> str:
    try:
        return file.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        _fail(
            TemplateEngineError([Problem(f"{str(file)!r} is not inside the templates folder {str(root)!r}")])
        )


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@_options
@click.option(
    "--against",
    default="HEAD",
    show_default=True,
    metavar="FOLDER|REV",
    help="The version FILE changed from: a git revision of the repository that holds --root, or a folder.",
)
def impact(file: Path, root: Path, against: str, variables: tuple[str, ...], output: str) -> None:
    """Every pair that a change to FILE (a defaults, asset or template file) affects, and how.

    Compares --against with the same folder where only FILE is replaced by the working tree's FILE (or
    removed, if it no longer exists).  Lists the changed fields of each affected pair, including
    runnability turning false and pairs that no longer compose.  Exit status 1 when some pair changes.
    """
    root = resolve_root(root)
    values = _variables(variables)
    rel = _inside(file, root)
    try:
        with materialise(root, against) as version, tempfile.TemporaryDirectory() as tmp:
            changed = copy_tree(version, Path(tmp) / "templates")
            if not file.is_file() and not (changed / rel).is_file():
                _fail(TemplateEngineError([Problem(f"{rel} exists neither in {root} nor in {against}")]))
            replace_file(changed / rel, file if file.is_file() else None)
            name = _version_name(version)
            old = _load(version.root, name)
            new = _load(changed, f"{name} with the working tree's {rel}")
    except TemplateEngineError as exc:
        _fail(exc)
    result = diff_orgs(old, new, values, file=rel)
    users = len(result.users)
    title = f"{rel} against {against}: used by {users} pair{'s' * (users != 1)}"
    head = {"root": str(root), "against": against, "file": rel, "usedBy": list(result.users)}
    _report(result, output, head, title)


__all__ = ["diff", "impact"]
