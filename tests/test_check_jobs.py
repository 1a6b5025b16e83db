"""``check --jobs``: the pairs composed in forked processes give the same answer, byte for byte, as composing
them all in one; the work really is shared (counted, never timed); a child that fails has its run done again.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from template_engine.cli import compose_commands, fanout, main
from template_engine.cli.fanout import MIN_PER_PROCESS, map_runs, plan_processes, split_runs

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "templates"
FORMATS = ("text", "json", "yaml", "sarif", "junit", "policy-report")

pytestmark = pytest.mark.skipif(
    not hasattr(os, "fork"), reason="no os.fork on this system: check --jobs composes here"
)


@given(st.lists(st.integers(), max_size=40), st.integers(min_value=1, max_value=12))
def test_the_runs_are_the_items_in_order_and_even(items: list[int], parts: int) -> None:
    runs = split_runs(items, parts)
    assert len(runs) == parts
    assert [x for run in runs for x in run] == items
    assert max(map(len, runs)) - min(map(len, runs)) <= 1


def test_how_many_processes() -> None:
    assert plan_processes(0, MIN_PER_PROCESS * 2 - 1, cpus=8) == 1  # too small to gain
    assert plan_processes(0, MIN_PER_PROCESS * 2, cpus=8) == 2
    assert plan_processes(0, MIN_PER_PROCESS * 100, cpus=2) == 2  # one per core
    assert plan_processes(0, 10_000, cpus=1) == 1
    assert plan_processes(3, 2, cpus=1) == 2  # asked for: at most one per item
    assert plan_processes(1, 10_000, cpus=8) == 1
    assert plan_processes(4, 0, cpus=8) == 1


def _pids(run: Sequence[int]) -> tuple[int, list[int]]:
    return os.getpid(), [x * x for x in run]


def test_the_runs_after_the_first_are_done_by_other_processes() -> None:
    answers = map_runs(_pids, list(range(10)), 3)
    assert [x for _, squares in answers for x in squares] == [x * x for x in range(10)]
    pids = [pid for pid, _ in answers]
    assert pids[0] == os.getpid()
    assert len(set(pids)) == 3


@pytest.mark.parametrize("how", ["exit", "raise", "signal", "unpicklable"])
def test_a_child_that_fails_has_its_run_done_here(how: str) -> None:
    parent = os.getpid()
    done_here: list[int] = []

    def work(run: Sequence[int]) -> Any:
        if os.getpid() != parent:
            if how == "exit":
                os._exit(3)
            if how == "raise":
                raise RuntimeError("boom")
            if how == "signal":
                os.kill(os.getpid(), signal.SIGKILL)
            return lambda: None  # cannot be pickled
        done_here.extend(run)
        return list(run)

    assert map_runs(work, list(range(9)), 3) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert done_here == list(range(9))  # the first run, then each failed child's run, in order


def test_no_child_is_left_when_this_process_is_stopped() -> None:
    parent = os.getpid()
    started: list[int] = []

    def work(run: Sequence[int]) -> list[int]:
        if os.getpid() != parent:
            signal.pause()  # would never answer
        raise KeyboardInterrupt

    real_fork = fanout._fork

    def fork(work: Callable[[Sequence[int]], Any], run: Sequence[int]) -> Any:
        child = real_fork(work, run)
        started.append(child.pid)
        return child

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fanout, "_fork", fork)
        with pytest.raises(KeyboardInterrupt):
            map_runs(work, list(range(6)), 3)
    assert len(started) == 2
    for pid in started:  # killed and waited for: no such child any more
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


# -- check --jobs: the same answer ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def org_with_everything(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example org (runnable and not runnable pairs, warnings, policies) with one broken template."""
    root = tmp_path_factory.mktemp("jobs") / "templates"
    shutil.copytree(EXAMPLE, root)
    broken = root / "projects" / "vision" / "templates" / "broken.yaml"
    broken.write_text("meta:\n  name: broken\nspec:\n  numWorker: 2\n")
    return root


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The templates composed in this process, in order."""
    composed: list[str] = []
    real = compose_commands.compose

    def compose(org: Any, found: Any, *args: Any, **kwargs: Any) -> Any:
        composed.append(found.name)
        return real(org, found, *args, **kwargs)

    monkeypatch.setattr(compose_commands, "compose", compose)
    yield composed


def _check(root: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["check", "--root", str(root), *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    junit_stamp = re.compile(r'timestamp="[^"]*"')
    return result.exit_code, junit_stamp.sub('timestamp=""', result.stdout), result.stderr


@pytest.mark.parametrize("output", FORMATS)
def test_check_says_the_same_in_one_process_or_several(org_with_everything: Path, output: str) -> None:
    args = ("-o", output, "--var", "unused=1", "--var", "lr=0.1")
    alone = _check(org_with_everything, "--jobs", "1", *args)
    assert alone[0] == 1 and alone[1]  # not runnable pairs and a broken file: something to compare
    for jobs in ("2", "3", "7"):
        assert _check(org_with_everything, "--jobs", jobs, *args) == alone, jobs


def test_the_work_is_shared(org_with_everything: Path, counted: list[str]) -> None:
    _check(org_with_everything, "--jobs", "1", "-o", "json")
    every = list(counted)
    counted.clear()
    _check(org_with_everything, "--jobs", "3", "-o", "json")
    assert len(every) > 6
    assert counted == every[: len(split_runs(every, 3)[0])]  # this process composed its run only


def test_the_files_are_read_by_several_processes(
    org_with_everything: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from template_engine.loader import tree

    read: list[str] = []
    real = tree._with_text

    def counting(files: Any, rel: str, *args: Any) -> Any:
        read.append(rel)
        return real(files, rel, *args)

    monkeypatch.setattr(tree, "_with_text", counting)
    _check(org_with_everything, "--jobs", "1", "-o", "json")
    every = list(read)
    read.clear()
    _check(org_with_everything, "--jobs", "3", "-o", "json")
    assert len(every) > 20 and "projects/vision/templates/broken.yaml" in every
    assert read == every[: len(split_runs(every, 3)[0])]


def test_a_failed_child_changes_nothing_but_the_time(
    org_with_everything: Path, counted: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    alone = _check(org_with_everything, "--jobs", "1", "-o", "json")
    every = list(counted)
    counted.clear()
    parent = os.getpid()
    real = compose_commands.compose

    def dying(*args: Any, **kwargs: Any) -> Any:
        if os.getpid() != parent:
            os._exit(9)
        return real(*args, **kwargs)

    monkeypatch.setattr(compose_commands, "compose", dying)
    assert _check(org_with_everything, "--jobs", "2", "-o", "json") == alone
    assert counted == every  # both runs composed here, in order


def test_verbose_says_how_many_processes(org_with_everything: Path) -> None:
    result = CliRunner().invoke(main, ["-v", "check", "--root", str(org_with_everything), "-j", "2"])
    assert re.search(r"info: composed in \d+ ms \(\d+ pairs, 2 processes\)", result.stderr), result.stderr
    loaded = r"info: loaded .* in \d+ ms \(.*broken files?, 2 processes\)"
    assert re.search(loaded, result.stderr), result.stderr
    small = CliRunner().invoke(main, ["-v", "check", "--root", str(org_with_everything)])
    assert "processes" not in small.stderr  # the example org is too small to gain from a fork


def test_jobs_must_be_a_count(org_with_everything: Path) -> None:
    result = CliRunner().invoke(main, ["check", "--root", str(org_with_everything), "-j", "-1"])
    assert result.exit_code == 2
    assert "'--jobs' / '-j'" in result.stderr and "-1 is not in the range x>=0" in result.stderr
