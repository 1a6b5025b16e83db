"""The command line's conventions (issue 21, item 5): ``-q/--quiet``, ``-v/--verbose`` and ``--color`` as
docs/cli.md ("Quiet, verbose and colour") defines them per command, and the messages of an expression that
Python refuses and of a document over the YAML reader's bound."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from template_engine.cli import main
from template_engine.cli.conventions import resolve_color
from template_engine.loader.yaml_safe import MAX_NODES

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "templates"
VIT = "projects/vision/templates/vit-finetune.yaml"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: A Python exception's class name, which no message may show.
CLASS_NAME = re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b")


def run(*args: str, color: bool = False, env: dict[str, str] | None = None) -> Result:
    # NO_COLOR and FORCE_COLOR of the machine running the tests are not the test's.
    base = {"NO_COLOR": "", "FORCE_COLOR": ""}
    return CliRunner().invoke(main, list(args), color=color, env={**base, **(env or {})})


def _org(tmp_path: Path) -> Path:
    root = tmp_path / "org"
    shutil.copytree(EXAMPLE, root)
    return root


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


# -- quiet ---------------------------------------------------------------------------------------------------


def test_quiet_and_verbose_exclude_each_other() -> None:
    result = run("-q", "-v", "check", "--root", str(EXAMPLE))
    assert result.exit_code == 2
    assert "-q/--quiet and -v/--verbose cannot be given together" in result.output


def test_quiet_check_prints_nothing_and_keeps_the_exit_status(tmp_path: Path) -> None:
    loud = run("check", "--root", str(EXAMPLE))
    quiet = run("-q", "check", "--root", str(EXAMPLE))
    assert loud.exit_code == quiet.exit_code == 1  # the example org has pairs that are not runnable
    assert "not runnable" in loud.stdout
    assert quiet.stdout == "" and quiet.stderr == ""
    clean = tmp_path / "clean"
    assert run("-q", "init", str(clean)).stdout == ""
    ok = run("-q", "check", "--root", str(clean))
    assert (ok.exit_code, ok.output) == (0, "")


def test_quiet_still_says_the_errors_that_stop_a_command() -> None:
    result = run("-q", "check", "--root", str(EXAMPLE), "--project", "nowhere")
    assert result.exit_code == 2
    assert result.stdout == "" and "error: " in result.stderr and "'nowhere'" in result.stderr


@pytest.mark.parametrize("output", ["json", "yaml", "sarif", "policy-report"])
def test_quiet_leaves_machine_formats_alone(output: str) -> None:
    loud = run("check", "--root", str(EXAMPLE), "-o", output)
    quiet = run("-q", "check", "--root", str(EXAMPLE), "-o", output)
    assert quiet.stdout == loud.stdout and quiet.stdout.strip()
    assert quiet.exit_code == loud.exit_code


def test_quiet_silences_warnings() -> None:
    args = ("check", "--root", str(EXAMPLE), "--var", "unused=1", "-o", "json")
    assert "warning: " in run(*args).stderr
    assert run("-q", *args).stderr == ""
    preview = ("preview", "--root", str(EXAMPLE), "-p", "vision", "-t", "vit-finetune", "--var", "unused=1")
    assert "warning: " in run(*preview).stderr
    quiet = run("-q", *preview)
    assert quiet.stderr == "" and json.loads(quiet.stdout)["meta"]["name"] == "vit-finetune"


def test_quiet_validate_prints_its_errors_and_nothing_else(tmp_path: Path) -> None:
    root = _org(tmp_path)
    _edit(root, VIT, "numWorkers: 2", "numWorkers: two")
    loud = run("validate", "--root", str(root))
    quiet = run("-q", "validate", "--root", str(root))
    assert loud.exit_code == quiet.exit_code == 1
    assert "problem(s) in" in loud.stdout and "problem(s) in" not in quiet.stdout
    assert quiet.stdout.startswith("error: ") and "numWorkers" in quiet.stdout
    assert run("-q", "validate", "--root", str(EXAMPLE)).output == ""


def test_quiet_diff_prints_nothing_and_exits_1_on_a_difference(tmp_path: Path) -> None:
    root = _org(tmp_path)
    _edit(root, VIT, "numWorkers: 2", "numWorkers: 3")
    args = ("diff", "--root", str(root), "--against", str(EXAMPLE), "--no-cache")
    loud = run(*args)
    quiet = run("-q", *args)
    assert loud.exit_code == quiet.exit_code == 1
    assert "vit-finetune" in loud.stdout
    assert quiet.output == ""
    same = run("-q", "diff", "--root", str(EXAMPLE), "--against", str(EXAMPLE), "--no-cache")
    assert (same.exit_code, same.output) == (0, "")
    impact = ("impact", str(root / VIT), "--root", str(root), "--against", str(EXAMPLE), "--no-cache")
    loud_impact = run(*impact)
    quiet_impact = run("-q", *impact)
    assert loud_impact.exit_code == quiet_impact.exit_code == 1, loud_impact.output
    assert "vit-finetune" in loud_impact.stdout and quiet_impact.output == ""


def test_quiet_explain_prints_nothing_but_an_unknown_field_is_an_error() -> None:
    args = ("explain", "--root", str(EXAMPLE), "-p", "vision", "-t", "vit-finetune")
    assert run(*args).stdout.strip()
    assert run("-q", *args).output == ""
    unknown = run("-q", *args, "labelz")
    assert unknown.exit_code == 1 and unknown.stdout == ""
    assert "labelz is neither set nor excluded" in unknown.stderr


def test_quiet_report_and_manifests_say_no_summary(tmp_path: Path) -> None:
    report = run("-q", "report", "--root", str(EXAMPLE), "--out", str(tmp_path / "site"))
    assert report.exit_code == 0 and report.output == ""
    assert (tmp_path / "site" / "index.html").is_file()
    args = ("manifests", "--root", str(EXAMPLE), "--all", "--out", str(tmp_path / "objects"))
    loud = run(*args[:-1], str(tmp_path / "loud"))
    quiet = run("-q", *args)
    assert "wrote " in loud.stdout and quiet.stdout == ""
    assert quiet.exit_code == loud.exit_code


# -- verbose -------------------------------------------------------------------------------------------------


def test_verbose_check_says_what_was_read_and_each_phase_on_stderr_only() -> None:
    plain = run("check", "--root", str(EXAMPLE), "-o", "json")
    verbose = run("-v", "check", "--root", str(EXAMPLE), "-o", "json")
    assert verbose.stdout == plain.stdout  # the machine format is untouched
    json.loads(verbose.stdout)
    lines = verbose.stderr.splitlines()
    assert re.fullmatch(
        rf"info: loaded {re.escape(str(EXAMPLE))} in \d+ ms "
        r"\(2 departments, 4 projects, 10 templates, 12 assets, 0 broken files\)",
        lines[0],
    ), lines
    assert re.fullmatch(r"info: composed in \d+ ms \(23 pairs\)", lines[1]), lines
    assert run("check", "--root", str(EXAMPLE)).stderr == ""  # nothing of it without -v


def test_verbose_preview_and_diff_say_each_load(tmp_path: Path) -> None:
    preview = run("-v", "preview", "--root", str(EXAMPLE), "-p", "vision", "-t", "vit-finetune")
    assert re.search(r"^info: loaded .* in \d+ ms \(2 departments", preview.stderr, re.M)
    assert re.search(r"^info: composed in \d+ ms$", preview.stderr, re.M)
    diff = run("-v", "diff", "--root", str(EXAMPLE), "--against", str(EXAMPLE), "--no-cache")
    assert diff.exit_code == 0
    assert re.search(r"^info: loaded the working tree in \d+ ms \(", diff.stderr, re.M), diff.stderr
    assert len(re.findall(r"^info: loaded ", diff.stderr, re.M)) == 2


# -- colour --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mode", "env", "expected"),
    [
        ("auto", {}, None),
        ("auto", {"NO_COLOR": "1"}, False),
        ("auto", {"NO_COLOR": ""}, None),  # set but empty: as if unset (no-color.org)
        ("auto", {"FORCE_COLOR": "1"}, True),
        ("auto", {"FORCE_COLOR": "0"}, None),
        ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),
        ("always", {"NO_COLOR": "1"}, True),
        ("never", {"FORCE_COLOR": "1"}, False),
    ],
)
def test_the_colour_decision(mode: str, env: dict[str, str], expected: bool | None) -> None:
    assert resolve_color(mode, env) is expected


def test_check_colours_its_status_words_on_a_terminal_and_keeps_its_columns() -> None:
    plain = run("check", "--root", str(EXAMPLE))
    coloured = run("check", "--root", str(EXAMPLE), color=True)  # the runner's streams act as terminals
    assert "\x1b[32mrunnable\x1b[0m" in coloured.stdout
    assert "\x1b[31mnot runnable\x1b[0m" in coloured.stdout
    assert ANSI.sub("", coloured.stdout) == plain.stdout
    assert not ANSI.search(plain.stdout)


@pytest.mark.parametrize(
    ("args", "env"),
    [(("--color", "never"), {}), ((), {"NO_COLOR": "1"}), (("--color", "auto"), {"NO_COLOR": "x"})],
)
def test_no_colour_when_asked_even_on_a_terminal(args: tuple[str, ...], env: dict[str, str]) -> None:
    result = run(*args, "check", "--root", str(EXAMPLE), color=True, env=env)
    assert result.exit_code == 1 and "not runnable" in result.stdout
    assert not ANSI.search(result.output)


def test_colour_always_beats_no_color_and_a_pipe() -> None:
    result = run("--color", "always", "check", "--root", str(EXAMPLE), env={"NO_COLOR": "1"})
    assert ANSI.search(result.stdout)


@pytest.mark.parametrize("output", ["json", "yaml", "sarif", "junit", "policy-report"])
def test_machine_formats_are_never_coloured(output: str) -> None:
    result = run("--color", "always", "check", "--root", str(EXAMPLE), "-o", output, color=True)
    assert result.stdout.strip() and not ANSI.search(result.stdout)


def test_diff_colours_its_markers_and_errors_their_prefix(tmp_path: Path) -> None:
    root = _org(tmp_path)
    (root / VIT).unlink()
    diff = run("--color", "always", "diff", "--root", str(root), "--against", str(EXAMPLE), "--no-cache")
    assert diff.exit_code == 1
    assert re.search(r"^\x1b\[31m- .*vit-finetune", diff.stdout, re.M), diff.stdout
    error = run("--color", "always", "check", "--root", str(EXAMPLE), "-p", "nowhere")
    assert error.stderr.startswith("\x1b[31m\x1b[1merror:\x1b[0m ")


def _on_a_pty(*args: str, env: dict[str, str]) -> str:
    """Standard output of the real program with a pseudo-terminal as its standard output."""
    leader, follower = pty.openpty()
    command = [sys.executable, "-c", "from template_engine.cli import main; main()", *args]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "", "FORCE_COLOR": "", **env}
    process = subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL, env=full_env)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:  # pragma: no cover - a hung program
            process.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower side closed: the program ended
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode()


def test_auto_colours_a_real_terminal_unless_no_color_is_set() -> None:
    args = ("check", "--root", str(EXAMPLE))
    assert ANSI.search(_on_a_pty(*args, env={}))
    plain = _on_a_pty(*args, env={"NO_COLOR": "1"})
    assert "not runnable" in plain and not ANSI.search(plain)
    piped = subprocess.run(
        [sys.executable, "-c", "from template_engine.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO), "NO_COLOR": "", "FORCE_COLOR": ""},
        timeout=120,
    )
    assert "not runnable" in piped.stdout and not ANSI.search(piped.stdout)


# -- messages ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "why", "expected"),
    [
        ("{{ 1 / 0 }}", "the expression divides by zero", "a divisor other than zero"),
        ("{{ 7 % 0 }}", "the expression divides by zero", "a divisor other than zero"),
        (
            "{{ 'a' + 1 }}",
            "the expression applies an operation to a value of a type it does not take",
            "operands of the types the operation takes",
        ),
        ("{{ 1 < 'a' }}", "of a type it does not take", "operands of the types the operation takes"),
        ("{{ 10 ** 400 * 1.0 }}", "a number too large to represent", "numbers within the range of a float"),
        ("{{ 'x' | int(1, 2, 3) }}", "calls a filter or method with arguments", "the arguments the filter"),
        ("{{ project.name[99] }}", "is undefined", "an index or key that the value has"),
    ],
)
def test_an_expression_python_refuses_is_said_in_words_with_its_place(
    tmp_path: Path, expression: str, why: str, expected: str
) -> None:
    root = _org(tmp_path)
    _edit(root, VIT, "workingDir: '/home/{{ project.name }}'", f'workingDir: "{expression}"')
    result = run("preview", "--root", str(root), "-p", "vision", "-t", "vit-finetune")
    assert result.exit_code == 2
    message = result.stderr
    assert why in message and f"expected: {expected}" in message, message
    assert "    at: workingDir\n" in message
    assert re.search(rf"    in: {re.escape(VIT)}:\d+:\d+ \(template vit-finetune\)", message), message
    assert not CLASS_NAME.search(message), message
    assert "names: department" not in message  # the names are the expectation of an unknown name only


def test_an_unknown_name_still_lists_the_names_there_are(tmp_path: Path) -> None:
    root = _org(tmp_path)
    _edit(root, VIT, "workingDir: '/home/{{ project.name }}'", "workingDir: '{{ nope }}'")
    result = run("preview", "--root", str(root), "-p", "vision", "-t", "vit-finetune")
    assert "'nope' is undefined" in result.stderr
    assert "expected: names: department, project, template" in result.stderr


def test_a_document_of_too_many_values_says_what_it_counted_without_aliases(tmp_path: Path) -> None:
    root = _org(tmp_path)
    items = "".join(f"  - {{name: l{i}, value: v}}\n" for i in range(MAX_NODES // 3 + 1))
    (root / "projects/vision/templates/big.yaml").write_text(
        f"meta: {{name: big}}\nspec:\n  labels:\n{items}"
    )
    result = run("validate", "--root", str(root))
    assert result.exit_code == 1
    assert (
        f"error: the document holds more than {MAX_NODES} values, counting every mapping, list and scalar "
        "(it has no aliases)\n" in result.stdout
    )
    assert re.search(r"    in: projects/vision/templates/big\.yaml:\d+:\d+\n", result.stdout)
    assert f"expected: at most {MAX_NODES} values in one file" in result.stdout
    assert "alias expansion" not in result.stdout
