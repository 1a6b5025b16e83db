"""The command line imports a command's module when that command is used: ``check`` does not pay for
``diff``, ``report``, the service or the fact cache (docs/performance.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from template_engine.cli import COMMANDS, Commands, Entry, main

EXAMPLE = Path(__file__).resolve().parents[1] / "templates"

#: What only other commands need (Jinja2 is not here: the example org has expressions, which it parses).
NOT_FOR_CHECK = [
    "template_engine.cli.diff_commands",
    "template_engine.cli.view_commands",
    "template_engine.cli.policy_commands",
    "template_engine.service.commands",
    "template_engine.diff",
    "template_engine.loader.gitrev",
    "template_engine.views.site",
    "template_engine.loader.facts",
    "template_engine.loader.deferred",
    "template_engine.views.html",
    "sqlite3",
]

RUN_CHECK = """
import sys
from template_engine.cli import main
try:
    main(["check", "--root", sys.argv[1], "-o", "json"])
except SystemExit:
    pass
sys.stdout = sys.__stdout__
print("\\n".join(sorted(sys.modules)))
"""


def test_check_imports_nothing_that_only_other_commands_need() -> None:
    done = subprocess.run(
        [sys.executable, "-c", RUN_CHECK, str(EXAMPLE)], capture_output=True, text=True, check=True
    )
    modules = set(done.stdout.split())
    assert "template_engine.cli.compose_commands" in modules
    assert [m for m in NOT_FOR_CHECK if m in modules] == []


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_lazy_command_resolves_to_the_command_of_that_name(name: str) -> None:
    command = main.commands[name]
    assert isinstance(command, click.Command) and command.name == name
    assert main.commands[name] is command  # imported once


def test_the_group_lists_every_command_without_importing_them() -> None:
    commands = Commands({"a": click.Command("a"), "b": Entry("no.such.module:b", "B.")})
    assert sorted(commands) == ["a", "b"] and len(commands) == 2
    assert commands["a"].name == "a"
    assert commands.summary("b") == "B."  # known without the import
    with pytest.raises(ModuleNotFoundError):
        commands["b"]  # imported only when looked up
    del commands["b"]
    assert list(commands) == ["a"]
