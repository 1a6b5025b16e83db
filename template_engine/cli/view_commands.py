"""``report``, ``schema`` and ``init``: an org as a static site, the documents' JSON Schemas, a starter org.

Exit statuses as everywhere (options.py): 0 done, 2 bad input or usage (an unreadable templates folder, an
unknown revision, an --out or DIR that may not be replaced).  A report is written whatever the pairs' state
(runnable or not, changed or not): it is the thing asked for, and ``check`` and ``diff`` gate on the rest.
"""

from __future__ import annotations

import sys
from pathlib import Path as FsPath
from typing import TYPE_CHECKING

import click

from template_engine.cli.conventions import current, say
from template_engine.cli.options import dump_json, fail, parse_vars, root_option, vars_option
from template_engine.errors import InputError, Problem, TemplateEngineError
from template_engine.loader.tree import load_org, resolve_root
from template_engine.views.schema import SCHEMA_KINDS, json_schema

if TYPE_CHECKING:  # what only report and init need is imported when they run, not at every command's start
    from template_engine.diff import OrgDiff
    from template_engine.org import Org

__all__ = ["init", "report", "schema"]


def _against(root: FsPath, against: str, new: Org, variables: dict[str, str]) -> OrgDiff:
    """``new`` compared with ``root`` at ``against`` (a folder or a git revision), as ``diff`` does."""
    from template_engine.diff import diff_orgs
    from template_engine.loader.gitrev import open_version
    from template_engine.org import Org

    try:
        version = open_version(root, against)
        if not version.exists:
            if not current().quiet:
                click.echo(f"note: {root} does not exist at {against}; every pair is new", err=True)
            old = Org()
        else:
            old = load_org(version.source)
    except TemplateEngineError as exc:
        fail(exc)
    return diff_orgs(old, new, variables)


@click.command()
@root_option
@click.option(
    "--out",
    required=True,
    type=click.Path(file_okay=False, path_type=FsPath),
    help="The folder to write the site into: new, empty, or an earlier report (replaced whole).",
)
@click.option(
    "--against",
    metavar="FOLDER|REV",
    help="Also show what changed against another templates folder or a git revision of the repository "
    "that holds --root (HEAD~1, origin/main), as `diff` does.",
)
@vars_option
def report(root: FsPath, out: FsPath, against: str | None, variables: tuple[str, ...]) -> None:
    """Write the explain view of every pair as a static site: OUT/index.html and one page per pair.

    The site is written into a new folder next to --out and put in place only when complete.
    """
    from template_engine.views.site import build_site, write_site

    root = resolve_root(root)
    values = parse_vars(variables)
    try:
        org = load_org(root)
    except TemplateEngineError as exc:
        fail(exc)
    diff = _against(root, against, org, values) if against is not None else None
    # The folder as given, but by its name when that says nothing (``--root .`` or ``..``).
    shown = str(root) if root.name not in ("", ".", "..") else root.resolve().name or str(root.resolve())
    site = build_site(org, shown, values, diff, against)
    try:
        write_site(site.files, out)
    except TemplateEngineError as exc:
        fail(exc)
    index = site.index
    summary = f"wrote {len(site.files)} page(s) to {out}: {len(index.rows)} pair(s), {index.summary()}"
    if against is not None:
        summary += f", {index.changed} changed against {against}"
    say(summary)


@click.command()
@click.argument("kind", required=False, metavar="[KIND]", type=click.Choice(list(SCHEMA_KINDS)))
def schema(kind: str | None) -> None:
    """Print the JSON Schema of a document KIND; without KIND, list the kinds and their files."""
    if kind is None:
        width = max(len(name) for name in SCHEMA_KINDS)
        for name, found in SCHEMA_KINDS.items():
            click.echo(f"{name.ljust(width)}  {found.files}")
        return
    click.echo(dump_json(json_schema(kind)))


@click.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=FsPath))
def init(directory: FsPath) -> None:
    """Write a minimal org into DIRECTORY (new or empty): one department, project, template and policy."""
    from template_engine.views.starter import starter_files

    exists = directory.exists() or directory.is_symlink()
    if exists and (not directory.is_dir() or any(directory.iterdir())):
        problem = Problem(f"{str(directory)!r} is not an empty folder", (), None, "a new or empty folder")
        fail(InputError([problem]))
    files = starter_files()
    try:
        for rel, text in files.items():
            path = directory / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        problem = Problem(f"cannot write {str(directory)!r}: {exc.strerror or exc}")
        fail(InputError([problem]))
    yaml_files = sum(rel.endswith(".yaml") for rel in files)
    say(f"wrote {yaml_files} file(s) and the JSON Schemas of every kind to {directory}")
    say(f"next: template-engine validate --root {directory} && template-engine check --root {directory}")
    sys.exit(0)
