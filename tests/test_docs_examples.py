"""Every ``$ template-engine ...`` example of README.md and docs/ runs, and prints what the page says.

The examples are read from the pages when the suite is collected, so an example added to a page is a test
without a line here.  The convention (docs/architecture.md, "Examples that test themselves"):

- A fenced block with a ``$`` line that runs ``template-engine`` (``$ template-engine ...``, or in a pipe
  or a process substitution: ``$ diff <(template-engine ...)``) is an example; each ``$ COMMAND`` line
  (continued by a trailing ``\\``) is run, in order, in one bash session, and the lines up to the next
  ``$`` line are what it prints (stdout and stderr together).  ``$ echo $?`` is the previous command's
  exit status.
- A line that is only ``...`` stands for any number of lines (none included); every other line must be
  printed as shown (trailing spaces and trailing empty lines aside).
- The session runs in a scratch folder holding a copy of the example org (``templates/``, committed in a
  git repository whose ``origin/main`` is that commit) and ``snapshots/``; ``/tmp/`` in a command stands
  for a folder of the scratch folder, and is shown as ``/tmp/`` again in what is printed; ``$PYTHON`` is
  the interpreter that runs ``template-engine`` (for a setup that writes what no command can).
- An HTML comment right before the block sets up what the example needs, or says why it is not run::

      <!-- doc-test: setup
      sed -i 's/numWorkers: 2/numWorkers: 3/' templates/projects/vision/templates/vit-finetune.yaml
      -->
      <!-- doc-test: not run: starts a server that runs until interrupted -->
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = ("README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")))
#: The line that stands for any number of lines of output.
ANY = "..."
_FENCE = re.compile(r"^(\s*)(```+|~~~+)")
_MARKER = re.compile(r"<!--\s*doc-test:\s*(?P<body>.*?)\s*-->", re.DOTALL)
_STEP = "@@doc-test-step@@"
#: A ``$`` line that runs ``template-engine``: not ``pip install 'template-engine[...]'``, nor
#: ``pytest --template-engine-var ...``.
_RUNS_ENGINE = re.compile(r"^\$ (?:.*[\s(|;&`])?template-engine(?:\s|$)")


@dataclass(frozen=True, slots=True)
class Step:
    command: str
    expected: tuple[str, ...]
    line: int


@dataclass(frozen=True, slots=True)
class Example:
    page: str
    line: int
    steps: tuple[Step, ...]
    setup: str = ""
    #: Why the example is not run (a ``doc-test: not run: ...`` marker), or ``None``.
    not_run: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _marker(lines: Sequence[str], fence: int) -> str | None:
    """The body of the ``doc-test`` comment that ends right before line ``fence`` (blank lines between)."""
    end = fence - 1
    while end >= 0 and not lines[end].strip():
        end -= 1
    if end < 0 or not lines[end].rstrip().endswith("-->"):
        return None
    start = end
    while start >= 0 and "<!--" not in lines[start]:
        start -= 1
    found = _MARKER.search("\n".join(lines[max(start, 0) : end + 1]))
    return found.group("body") if found else None


def _steps(block: list[str], first_line: int) -> tuple[Step, ...]:
    steps: list[Step] = []
    index = 0
    while index < len(block):
        text = block[index]
        if not text.startswith("$ "):
            index += 1  # text before the first command: not part of any example
            continue
        line, command = first_line + index, text[2:]
        while command.endswith("\\") and index + 1 < len(block):
            index += 1
            command = f"{command}\n{block[index]}"
        index += 1
        expected: list[str] = []
        while index < len(block) and not block[index].startswith("$ "):
            expected.append(block[index].rstrip())
            index += 1
        steps.append(Step(command, tuple(expected), line))
    return tuple(steps)


def examples(page: str, text: str) -> Iterator[Example]:
    """The examples of one page (see the module's docstring), in the page's order."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opened = _FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, fence = opened.groups()
        end = index + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        block = [line.removeprefix(indent) for line in lines[index + 1 : end]]
        if any(_RUNS_ENGINE.match(line) for line in block):
            body = _marker(lines, index) or ""
            setup = body.removeprefix("setup").strip("\n") if body.startswith("setup") else ""
            not_run = body.removeprefix("not run:").strip() if body.startswith("not run:") else None
            yield Example(page, index + 1, _steps(block, index + 2), setup, not_run)
        index = end + 1


def all_examples() -> list[Example]:
    return [ex for page in PAGES for ex in examples(page, (REPO / page).read_text(encoding="utf-8"))]


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` is ``expected`` with each ``...`` line standing for any number of lines."""

    def trim(lines: Sequence[str]) -> list[str]:
        out = [line.rstrip() for line in lines]
        while out and not out[-1]:
            out.pop()
        while out and not out[0]:
            out.pop(0)
        return out

    want, got = trim(expected), trim(actual)
    # reach[j]: the first i lines of ``want`` can match the first j lines of ``got``.
    reach = [True] + [False] * len(got)
    for line in want:
        if line.strip() == ANY:
            seen = False
            reach = [seen := seen or r for r in reach]
        else:
            reach = [False] + [reach[j] and got[j] == line for j in range(len(got))]
    return reach[len(got)]


# -- the scratch folder -------------------------------------------------------------------------------------


def scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder holding a committed copy of the example org, and the environment of the example's shell."""
    work = tmp_path / "work"
    shutil.copytree(REPO / "templates", work / "templates")
    shutil.copytree(REPO / "snapshots", work / "snapshots")
    shutil.copytree(REPO / "examples", work / "examples")
    (tmp_path / "tmp").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "template-engine"
    wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m template_engine "$@"\n', encoding="utf-8")
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GIT_", "TEMPLATE_ENGINE_"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        HOME=str(tmp_path / "home"),
        TEMPLATE_ENGINE_CACHE_DIR=str(tmp_path / "cache"),
        COLUMNS="80",
        NO_COLOR="1",
        PYTHON=sys.executable,
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.com",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.com",
        GIT_CONFIG_NOSYSTEM="1",
    )
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["commit", "-q", "-m", "the example org"],
        ["update-ref", "refs/remotes/origin/main", "HEAD"],
    ):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True, timeout=60)
    return work, env


def run_example(example: Example, tmp_path: Path) -> list[list[str]]:
    """Run the example's setup, then its commands in one bash session: what each command printed."""
    work, env = scratch(tmp_path)
    tmp = f"{tmp_path / 'tmp'}/"
    script = ["exec 2>&1", "set +e"]
    if example.setup:
        script += [f"{{ {example.setup.replace('/tmp/', tmp)}\n}} > /dev/null || exit 97"]
    for step in example.steps:
        script += [step.command.replace("/tmp/", tmp), f'__rc=$?; printf "\\n{_STEP}\\n"; (exit $__rc)']
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 97, f"the setup of {example.id} failed:\n{done.stdout}"
    printed = done.stdout.replace(tmp, "/tmp/").split(f"\n{_STEP}\n")
    return [chunk.splitlines() for chunk in printed[: len(example.steps)]]


EXAMPLES = all_examples()

#: Examples that wait for work under way elsewhere, by page and first command, with that work: an example
#: whose state a test can build gets a ``doc-test: setup`` comment on its page instead, and leaves this list.
PENDING: dict[tuple[str, str], str] = {}


def pending(example: Example) -> str | None:
    return PENDING.get((example.page, example.steps[0].command)) if example.steps else None


RUN = [ex for ex in EXAMPLES if ex.not_run is None and pending(ex) is None]


@pytest.mark.parametrize("example", RUN, ids=lambda ex: ex.id)
def test_the_example_prints_what_the_page_shows(example: Example, tmp_path: Path) -> None:
    printed = run_example(example, tmp_path)
    for step, actual in zip(example.steps, printed, strict=True):
        if not matches(step.expected, actual):
            shown = "\n".join(f"    {line}" for line in actual)
            wanted = "\n".join(f"    {line}" for line in step.expected)
            pytest.fail(
                f"{example.page}:{step.line}: $ {step.command}\n  the page shows:\n{wanted}\n"
                f"  it printed:\n{shown}",
                pytrace=False,
            )


def test_every_page_with_commands_has_examples_and_each_one_not_run_says_why() -> None:
    pages = {ex.page for ex in EXAMPLES}
    assert {"docs/cli.md", "docs/tutorial.md", "docs/concepts.md"} <= pages
    assert len(RUN) >= len(EXAMPLES) // 3, "most examples are to run, not to be listed as pending"
    for example in EXAMPLES:
        assert example.steps, example.id
        assert example.not_run is None or example.not_run, f"{example.id}: 'not run:' without a reason"


def test_every_pending_example_is_still_on_its_page() -> None:
    shown = {(ex.page, ex.steps[0].command) for ex in EXAMPLES if ex.steps}
    assert not set(PENDING) - shown, "PENDING names examples the pages no longer have"


@pytest.mark.parametrize(
    ("expected", "actual", "result"),
    [
        (["a", "b"], ["a", "b"], True),
        (["a", "b"], ["a", "c"], False),
        (["a", "...", "d"], ["a", "b", "c", "d"], True),
        (["a", "...", "d"], ["a", "d"], True),
        (["...", "d"], ["a", "b"], False),
        (["a", "..."], ["a"], True),
        (["  ...", "x"], ["q", "x"], True),
        (["a  ", ""], ["a"], True),
        (["a"], ["a", "b"], False),
    ],
)
def test_an_ellipsis_line_stands_for_any_lines(expected: list[str], actual: list[str], result: bool) -> None:
    assert matches(expected, actual) is result


def test_the_parser_reads_commands_outputs_continuations_and_markers() -> None:
    page = textwrap.dedent(
        """\
        Text.

        <!-- doc-test: setup
        touch x
        -->
        ```console
        $ template-engine check \\
            --root templates
        one
        ...
        $ echo $?
        1
        ```

        <!-- doc-test: not run: needs a server -->
        ```
        $ template-engine serve
        ```

        ```sh
        $ pip install 'template-engine[snapshots]'
        $ pytest --template-engine-var user=alice
        ```

        ```
        $ diff <(template-engine preview -t a) \\
               <(template-engine preview -t b)
        ```
        """
    )
    first, second, third = examples("p.md", page)
    assert first.setup == "touch x"
    assert [s.command for s in first.steps] == ["template-engine check \\\n    --root templates", "echo $?"]
    assert first.steps[0].expected == ("one", "...")
    assert first.steps[1].line == 11
    assert second.not_run == "needs a server"
    assert [s.command for s in third.steps] == [
        "diff <(template-engine preview -t a) \\\n       <(template-engine preview -t b)"
    ]
