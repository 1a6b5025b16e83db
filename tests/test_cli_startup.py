"""What the start of the program costs, counted in modules rather than timed (docs/performance.md has the
times): ``--version``, ``--help`` and shell completion import click and the command table, and none of the
engine; each summary in the table is its command's own; the package's names load on first use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import template_engine
from template_engine.cli import COMMANDS, main

ROOT = Path(__file__).resolve().parents[1]

#: The modules of this package a start that runs no command may import (``cli.conventions``: the group's
#: -q, -v and --color, which imports only click and the standard library).
STARTUP = {
    "template_engine",
    "template_engine._version",
    "template_engine.cli",
    "template_engine.cli.conventions",
    "template_engine.__main__",
}

_PROBE = """
import json, sys
from template_engine.cli import main
try:
    main.main(args=sys.argv[1:], prog_name="template-engine")
except SystemExit:
    pass
loaded = sorted(m for m in sys.modules if m.startswith(("template_engine", "pydantic", "yaml", "jinja2")))
print("\\n" + json.dumps(loaded), file=sys.stderr)
"""


def _loaded(*args: str, env: dict[str, str] | None = None) -> tuple[str, set[str]]:
    """Standard output of the command in a fresh interpreter, and the modules it had imported."""
    run = subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        timeout=60,
    )
    return run.stdout, set(json.loads(run.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["-h"]])
def test_version_and_help_import_none_of_the_engine(args: list[str]) -> None:
    out, loaded = _loaded(*args)
    assert out.strip()
    assert loaded <= STARTUP, loaded - STARTUP


def test_help_lists_every_command_with_its_whole_summary() -> None:
    out, _ = _loaded("--help")
    text = " ".join(out.split())
    for name, entry in COMMANDS.items():
        assert f"{name} {entry.summary}" in text, name
    assert "..." not in out.split("Commands:")[1]


def test_shell_completion_lists_the_commands_without_importing_them() -> None:
    env = {"_TEMPLATE_ENGINE_COMPLETE": "zsh_complete", "COMP_WORDS": "template-engine ", "COMP_CWORD": "1"}
    out, loaded = _loaded(env=env)
    assert loaded <= STARTUP, loaded - STARTUP
    lines = out.splitlines()
    for name, entry in COMMANDS.items():
        assert name in lines and entry.summary in lines, name


def test_completing_a_prefix_offers_only_the_commands_it_starts() -> None:
    env = {
        "_TEMPLATE_ENGINE_COMPLETE": "bash_complete",
        "COMP_WORDS": "template-engine ch",
        "COMP_CWORD": "1",
    }
    out, _ = _loaded(env=env)
    assert out.split() == ["plain,check"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_each_summary_is_the_first_line_of_its_command_s_help(name: str) -> None:
    command = main.commands[name]
    assert command.get_short_help_str(limit=1_000) == COMMANDS[name].summary


def test_running_a_command_imports_what_it_uses() -> None:
    out, loaded = _loaded("schema")
    assert "template_engine.views.schema" in loaded and "template_engine.service.app" not in loaded
    assert "environment" in out


def test_every_public_name_resolves_on_first_use() -> None:
    assert sorted(template_engine.__all__) == sorted(template_engine._FROM)
    for name in template_engine.__all__:
        value = getattr(template_engine, name)
        assert getattr(value, "__name__", name) == name
    assert set(template_engine.__all__) <= set(dir(template_engine))
    with pytest.raises(AttributeError, match="no attribute 'compse'"):
        template_engine.compse  # noqa: B018


def test_version_is_the_one_the_build_reads_and_no_distribution_is_scanned() -> None:
    """``--version`` prints ``template_engine/_version.py``'s VERSION, which pyproject.toml builds with, and
    reads no installed distribution's metadata to find it (docs/performance.md, "Start-up (issue 20)")."""
    import tomllib

    from template_engine._version import VERSION

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "template_engine._version.VERSION"}
    probe = _PROBE.replace("import json, sys", "import sys").split("loaded =")[0]
    probe += "print('importlib.metadata' in sys.modules)"
    run = subprocess.run(
        [sys.executable, "-c", probe, "--version"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )
    assert run.stdout.splitlines() == [f"template-engine, version {VERSION}", "False"]
