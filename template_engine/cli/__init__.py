"""The ``template-engine`` command: a thin adapter from arguments to the engine and back to text.

One module per command group; only this module puts them together, so none imports another's::

    options.py              what the commands share: options, --var, output formats, exit statuses
    compose_commands.py     preview, check, explain, validate
    diff_commands.py        diff, impact
    manifest_commands.py    manifests
    policy_commands.py      policy
    view_commands.py        report, schema, init
    service/commands.py     serve, db (the service is imported only when they run)
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping

import click

from template_engine.cli.compose_commands import check, explain_command, preview, validate

__all__ = ["main"]

#: The commands whose modules are imported when the command is first looked up, not at start: ``check``
#: pays only for what it uses (``-X importtime``: about 10 ms of every start, docs/performance.md).
LAZY = {
    "diff": "template_engine.cli.diff_commands:diff",
    "impact": "template_engine.cli.diff_commands:impact",
    "manifests": "template_engine.cli.manifest_commands:manifests_command",
    "policy": "template_engine.cli.policy_commands:policy",
    "serve": "template_engine.service.commands:serve",
    "db": "template_engine.service.commands:db",
    "report": "template_engine.cli.view_commands:report",
    "schema": "template_engine.cli.view_commands:schema",
    "init": "template_engine.cli.view_commands:init",
}


class Commands(MutableMapping[str, click.Command]):
    """A group's commands by name, where a command given as ``"module:attribute"`` is imported when it is
    first looked up (running it, its ``--help``, or the group's ``--help``, which lists them all)."""

    def __init__(self, commands: dict[str, click.Command | str]) -> None:
        self._entries = dict(commands)

    def __getitem__(self, name: str) -> click.Command:
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = getattr(importlib.import_module(module), attribute)
            assert isinstance(entry, click.Command) and entry.name == name, entry
            self._entries[name] = entry
        return entry

    def __setitem__(self, name: str, command: click.Command) -> None:
        self._entries[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="template-engine")
def main() -> None:
    """Compose layered Run:ai-style defaults, assets and templates into effective specs."""


main.commands = Commands(
    {
        "preview": preview,
        "check": check,
        "explain": explain_command,
        "validate": validate,
        **LAZY,
    }
)
