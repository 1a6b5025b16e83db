"""What the commands share: options, ``--var`` parsing, JSON/YAML output, exit statuses and failing.

Exit statuses: 0 all good, 1 a result the user asked to be told about (not runnable, differences, invalid
files), 2 bad input or usage.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path as FsPath
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click
import yaml

from template_engine.cli.conventions import error_prefix
from template_engine.errors import TemplateEngineError

if TYPE_CHECKING:
    from template_engine.org import Org

F = TypeVar("F", bound=Callable[..., Any])

EXIT_FINDINGS = 1
EXIT_ERROR = 2


def dump_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def dump_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=True, allow_unicode=True, default_flow_style=False)


def emit(value: Any, output: str) -> None:
    """``value`` as JSON or YAML (keys sorted) on standard output."""
    click.echo(dump_json(value) if output == "json" else dump_yaml(value).rstrip("\n"))


def fail(error: TemplateEngineError) -> NoReturn:
    """Each problem on standard error as ``error: ...``, then exit 2."""
    for problem in error.problems:
        click.echo(f"{error_prefix()} {problem.render()}", err=True)
    sys.exit(EXIT_ERROR)


def org_counts(org: Org) -> str:
    """What a load read, for ``-v``: ``3 departments, 6 projects, 18 templates, 9 assets, 0 broken files``."""
    projects = sum(len(names) for names in org.departments.values())
    templates = sum(len(by_name) for by_name in org.templates.values())
    assets = sum(len(by_name) for by_name in org.assets.values())
    return (
        f"{len(org.departments)} departments, {projects} projects, {templates} templates, {assets} assets, "
        f"{len(org.broken)} broken files"
    )


def root_option(func: F) -> F:
    return click.option(
        "--root",
        type=click.Path(file_okay=False, path_type=FsPath),
        default=FsPath("templates"),
        show_default=True,
        help="The templates folder (with org.yaml).",
    )(func)


#: The CI formats ``check`` writes besides text, JSON and YAML (docs/cli.md, "CI formats").
CHECK_REPORTS = ("sarif", "junit", "policy-report")


def output_option(default: str, reports: tuple[str, ...] = ()) -> Callable[[F], F]:
    """``--output/-o``: json and yaml, text where that is the default, then ``reports`` (CI formats)."""
    choices = ["json", "yaml", "text"][: 3 if default == "text" else 2] + list(reports)

    def wrap(func: F) -> F:
        return click.option(
            "--output",
            "-o",
            type=click.Choice(choices),
            default=default,
            show_default=True,
            help="Output format."
            + (" sarif, junit and policy-report are for CI (docs/cli.md)." if reports else ""),
        )(func)

    return wrap


def docs_url_option(func: F) -> F:
    return click.option(
        "--docs-url",
        metavar="URL",
        help="Where your copy of docs/cli.md is published: SARIF rules then link to it (helpUri).",
    )(func)


def vars_option(func: F) -> F:
    return click.option(
        "--var", "variables", multiple=True, metavar="NAME=VALUE", help="A variable for {{ NAME }}."
    )(func)


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
