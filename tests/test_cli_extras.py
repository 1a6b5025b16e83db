"""CLI behaviour added after the first CLI suite: --var bookkeeping, running inside a templates folder,
``python -m template_engine``, every command's help and validate's layout reports."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from template_engine.cli import main

REPO = Path(__file__).resolve().parents[1]


def _cli() -> str:
    beside = Path(sys.executable).parent / "template-engine"
    found = str(beside) if beside.exists() else shutil.which("template-engine")
    assert found, "the template-engine entry point is not installed"
    return found


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_cli(), *args], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_check_reports_an_unused_variable_once_and_a_used_one_never() -> None:
    result = _run("check", "--var", "user=alice", "--var", "usr=bob")
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: --var")]
    assert warnings == ["warning: --var usr: variable 'usr' is not used by any value (a typo?)"]
    assert "--var" not in result.stdout  # not repeated for every pair that ignores it


def test_a_variable_given_twice_is_an_error() -> None:
    result = _run("preview", "-p", "vision", "-t", "vit-finetune", "--var", "user=a", "--var", "user=b")
    assert result.returncode == 2
    assert "'user' is given more than once" in result.stderr
    assert "Traceback" not in result.stderr


def test_commands_run_from_inside_the_templates_folder(tmp_path: Path) -> None:
    org = tmp_path / "templates"
    shutil.copytree(REPO / "templates", org)
    inside = _run("check", "-p", "recsys", cwd=org)
    outside = _run("check", "-p", "recsys", "--root", str(org))
    assert inside.returncode == 0
    assert inside.stdout == outside.stdout
    other = tmp_path / "other"
    shutil.copytree(REPO / "templates", other)
    diff = _run("diff", "--against", str(other), cwd=org)
    assert diff.returncode == 0, diff.stderr
    assert "no pair differs" in diff.stdout


def test_python_m_template_engine_runs_the_command() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "template_engine", "diff", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: template-engine diff [OPTIONS]")
    assert "Every (project, template) pair whose effective spec or cluster objects" in result.stdout


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        found.append((*prefix, name))
        if isinstance(command, click.Group):
            found += _commands(command, (*prefix, name))
    return found


COMMANDS = _commands(main)


def test_every_command_is_listed() -> None:
    assert {("diff",), ("impact",), ("preview",), ("validate",), ("db", "import")} <= set(COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_every_command_help_has_a_description(words: tuple[str, ...]) -> None:
    command: click.Command = main
    for word in words:
        assert isinstance(command, click.Group)
        command = command.commands[word]
    assert command.help, f"{' '.join(words)} has no description (is its docstring the first statement?)"
    result = CliRunner().invoke(main, [*words, "--help"])
    assert result.exit_code == 0, result.output
    first_line = command.help.strip().splitlines()[0]
    shown = " ".join(result.output.split())
    assert " ".join(first_line.split()[:6]) in shown, result.output


def test_validate_reports_layout_errors_and_warnings(tmp_path: Path) -> None:
    org = tmp_path / "templates"
    shutil.copytree(REPO / "templates", org)
    (org / "projects/vision/defaults.yaml").rename(org / "projects/vision/default.yaml")
    (org / ".DS_Store").write_bytes(b"\0")
    result = _run("validate", "--root", str(org))
    assert result.returncode == 1, result.stderr
    assert "error: unexpected file 'default.yaml' in projects/vision/ (did you mean 'defaults.yaml'?)" in (
        result.stdout
    )
    assert "warning: hidden file '.DS_Store' is ignored" in result.stdout
    assert result.stdout.rstrip().endswith("1 problem(s) in 1 file(s); 1 warning(s)")
