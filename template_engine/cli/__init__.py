"""The ``template-engine`` command: a thin adapter from arguments to the engine and back to text.

One module per command group; only this module puts them together, so none imports another's::

    __init__.py             the group: every command by name and summary, imported only when it runs
    conventions.py          -q/--quiet, -v/--verbose and --color, which the group takes for every command
    options.py              what the commands share: options, --var, output formats, exit statuses
    compose_commands.py     preview, check, explain, validate
    diff_commands.py        diff, impact
    manifest_commands.py    manifests
    policy_commands.py      policy, kinds
    view_commands.py        report, schema, init
    service/commands.py     serve, db (the service is imported only when they run)
    lsp/commands.py         lsp (pygls is imported only when it runs)
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Iterator, MutableMapping
from typing import NamedTuple

import click
from click.shell_completion import CompletionItem

from template_engine._version import VERSION
from template_engine.cli import conventions

__all__ = ["main"]


class Entry(NamedTuple):
    """A command as the start of the program knows it: where it lives and its one-line summary."""

    target: str
    summary: str


#: Every command, imported when it is first looked up (running it or its own ``--help``), never at start:
#: ``--version``, ``--help`` and shell completion import none of them, only click (docs/performance.md).
#: ``summary`` is the first sentence of the command's help, shown whole by ``--help`` and by completion;
#: ``tests/test_cli_startup.py`` holds each to its command's help, so the two cannot drift apart.
COMMANDS: dict[str, Entry] = {
    "preview": Entry(
        "template_engine.cli.compose_commands:preview",
        "Print the composed template: meta, spec, master, runnable, combinedSpec, combinedMasterSpec.",
    ),
    "check": Entry(
        "template_engine.cli.compose_commands:check",
        "Runnability of every visible (project, template) pair; exit 1 when any is not runnable.",
    ),
    "explain": Entry(
        "template_engine.cli.compose_commands:explain_command",
        "Where each value came from, including exclusions; FIELD narrows to one path.",
    ),
    "validate": Entry(
        "template_engine.cli.compose_commands:validate",
        "Check every file against the schema and the reference rules; exit 1 on any problem.",
    ),
    "diff": Entry(
        "template_engine.cli.diff_commands:diff",
        "Every (project, template) pair whose effective spec or cluster objects differ from --against.",
    ),
    "impact": Entry(
        "template_engine.cli.diff_commands:impact",
        "Every pair that a change to FILE (defaults, policy, asset, template, cluster.yaml) affects, "
        "and how.",
    ),
    "manifests": Entry(
        "template_engine.cli.manifest_commands:manifests_command",
        "Print the Kubernetes objects the cluster runs for a pair (YAML documents, or a JSON list).",
    ),
    "policy": Entry(
        "template_engine.cli.policy_commands:policy",
        "Print the effective policy of a scope: every rule with its sourceOfRule, and the imposed assets.",
    ),
    "kinds": Entry(
        "template_engine.cli.policy_commands:kinds",
        "Compare the workload kinds of a scope: FIELD's policy-side value, imposed assets and rules "
        "per kind.",
    ),
    "serve": Entry(
        "template_engine.service.commands:serve",
        "Run the template service (HTTP API shaped like Run:ai's) until interrupted.",
    ),
    "db": Entry(
        "template_engine.service.commands:db",
        "Move a templates folder into the service's database and back; upgrade its schema.",
    ),
    "lsp": Entry(
        "template_engine.lsp.commands:lsp",
        "Run the language server (LSP over stdin and stdout) for editors: diagnostics, hover, definitions.",
    ),
    "report": Entry(
        "template_engine.cli.view_commands:report",
        "Write the explain view of every pair as a static site: OUT/index.html and one page per pair.",
    ),
    "schema": Entry(
        "template_engine.cli.view_commands:schema",
        "Print the JSON Schema of a document KIND; without KIND, list the kinds and their files.",
    ),
    "init": Entry(
        "template_engine.cli.view_commands:init",
        "Write a minimal org into DIRECTORY (new or empty): one department, project, template and policy.",
    ),
}


class Commands(MutableMapping[str, click.Command]):
    """A group's commands by name, where a command given as an :class:`Entry` is imported when it is first
    looked up (running it, or its own ``--help``)."""

    def __init__(self, commands: dict[str, click.Command | Entry]) -> None:
        self._entries = dict(commands)

    def __getitem__(self, name: str) -> click.Command:
        entry = self._entries[name]
        if isinstance(entry, Entry):
            module, _, attribute = entry.target.partition(":")
            entry = getattr(importlib.import_module(module), attribute)
            assert isinstance(entry, click.Command) and entry.name == name, entry
            self._entries[name] = entry
        return entry

    def summary(self, name: str) -> str:
        """The command's one-line summary, without importing it."""
        entry = self._entries[name]
        return entry.summary if isinstance(entry, Entry) else entry.get_short_help_str(limit=1_000)

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


class Main(click.Group):
    """The top group: its ``--help`` and its shell completion list the commands from :data:`COMMANDS`
    (whole summaries, never cut short) without importing any of them."""

    commands: Commands

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.commands.summary(name)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        names = [name for name in self.list_commands(ctx) if name.startswith(incomplete)]
        items = [CompletionItem(name, help=self.commands.summary(name)) for name in names]
        # The options of the group itself (``--version``, ``--help``), as click completes them.
        return items + click.Command.shell_complete(self, ctx, incomplete)


@click.group(cls=Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="template-engine")  # no importlib.metadata (_version.py)
@click.option(
    "--quiet", "-q", is_flag=True, help="Print only errors; the exit status says the rest (docs/cli.md)."
)
@click.option(
    "--verbose", "-v", is_flag=True, help="Also say on stderr what was read and how long each phase took."
)
@click.option(
    "--color",
    type=click.Choice(conventions.COLOR_MODES),
    default="auto",
    show_default=True,
    help="Colour text output; auto: on a terminal, unless NO_COLOR is set.",
)
@click.pass_context
def main(ctx: click.Context, quiet: bool, verbose: bool, color: str) -> None:
    """Compose layered Run:ai-style defaults, assets and templates into effective specs.

    -q, -v and --color go before the command: template-engine -q check.
    """
    if quiet and verbose:
        raise click.UsageError("-q/--quiet and -v/--verbose cannot be given together")
    conventions.install(
        ctx, conventions.Conventions(quiet, verbose), conventions.resolve_color(color, os.environ)
    )


main.commands = Commands(dict(COMMANDS))
