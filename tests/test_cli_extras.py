"""CLI behaviour added after the first CLI suite: --var bookkeeping and running inside a templates folder."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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
    inside = _run("check", "-p", "vision", cwd=org)
    outside = _run("check", "-p", "vision", "--root", str(org))
    assert inside.returncode == 0
    assert inside.stdout == outside.stdout
    other = tmp_path / "other"
    shutil.copytree(REPO / "templates", other)
    diff = _run("diff", "--against", str(other), cwd=org)
    assert diff.returncode == 0, diff.stderr
    assert "no pair differs" in diff.stdout
