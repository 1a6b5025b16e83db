"""``template-engine lsp``: the language server over stdin and stdout.

Only click and the standard library are imported here: pygls and lsprotocol are imported when the command
runs, so the core CLI works without them, and the command says what to install when the ``lsp`` extra is
missing (as ``serve`` does for the ``service`` extra).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import click

EXIT_ERROR = 2
_EXTRA = "install the lsp extra: pip install '.[lsp]' from a checkout (or template-engine[lsp])"


@click.command()
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The templates folder (with org.yaml); default: the nearest folder above the first file opened "
    "that holds org.yaml.",
)
@click.option(
    "--var",
    "variables",
    multiple=True,
    metavar="NAME=VALUE",
    help="A variable for {{ NAME }} in every composition (as check's --var).",
)
def lsp(root: Path | None, variables: tuple[str, ...]) -> None:
    """Run the language server (LSP over stdin and stdout) for editors: diagnostics, hover, definitions.

    Set up in VS Code and Neovim: docs/editor.md.
    """
    missing = []
    for module in ("pygls", "lsprotocol"):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        names = ", ".join(missing)
        click.echo(f"error: the language server is not installed: {_EXTRA}; missing: {names}", err=True)
        sys.exit(EXIT_ERROR)
    values: dict[str, str] = {}
    for text in variables:  # as the other commands' --var (cli/options.py)
        name, sep, value = text.partition("=")
        if not sep or not name.strip().isidentifier() or name.strip() in values:
            raise click.BadParameter(f"{text!r} is not NAME=VALUE with a new NAME", param_hint="--var")
        values[name.strip()] = value
    if root is not None and not (root / "org.yaml").is_file():
        click.echo(f"error: {root} holds no org.yaml: --root is the templates folder", err=True)
        sys.exit(EXIT_ERROR)
    from template_engine.lsp.server import run

    run(root, values)
