"""Work shared out over the machine's cores: ``check`` composes its pairs in forked processes.

The org is loaded once, then the pairs are cut into contiguous runs, one per process: this process does the
first and each forked child one of the others, sending back its answers (pickled, over a pipe) in order, so
the output is the same, line for line, as composing every pair here.  A child shares the loaded org with this
process (``fork`` copies pages only when they are written, and ``check`` froze them out of the collector's
reach); it composes with its own merge cache, which only ever saves work (docs/decisions.md, "check on every
core").

A child that fails in any way (a fork refused, a crash, a signal, an answer that cannot be read) has its run
composed again here: forking changes how long ``check`` takes, never what it says.  Where ``os.fork`` does not
exist (Windows), everything is composed here.  This is one of the modules that do I/O (processes, pipes):
docs/architecture.md, "Where the I/O is".
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["MIN_PER_PROCESS", "available_cpus", "map_runs", "plan_processes", "split_runs"]

T = TypeVar("T")
R = TypeVar("R")

#: With ``--jobs 0`` (the default), no process gets fewer pairs than this: a fork, the child's exit and its
#: pickled answer cost about what composing ten pairs does (docs/performance.md, "check on every core").
MIN_PER_PROCESS = 64


def available_cpus() -> int:
    """The cores this process may run on (its affinity where the system says it, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def plan_processes(requested: int, items: int, cpus: int) -> int:
    """How many processes share ``items``: ``requested`` (at most one per item), or with ``0`` one per core
    while each gets at least :data:`MIN_PER_PROCESS` items; always at least one."""
    if requested > 0:
        return max(1, min(requested, items))
    return max(1, min(cpus, items // MIN_PER_PROCESS))


def split_runs(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """``items`` cut into ``parts`` contiguous runs whose lengths differ by at most one, in order; their
    concatenation is ``items``."""
    size, extra = divmod(len(items), parts)
    runs: list[Sequence[T]] = []
    start = 0
    for index in range(parts):
        end = start + size + (index < extra)
        runs.append(items[start:end])
        start = end
    return runs


@dataclass
class _Child(Generic[T]):
    pid: int
    reader: int
    run: Sequence[T]


def map_runs(work: Callable[[Sequence[T]], R], items: Sequence[T], processes: int) -> list[R]:
    """``[work(run) for run in split_runs(items, processes)]``, the runs after the first done by forked
    children at the same time as this process does the first.  ``work``'s answer must be picklable, and
    ``work`` must write nothing (a child's output would interleave with this process's)."""
    runs = split_runs(items, processes)
    if len(runs) == 1 or not hasattr(os, "fork"):
        return [work(run) for run in runs]
    sys.stdout.flush()  # nothing buffered here may be written twice, by a child too
    sys.stderr.flush()
    children: list[_Child[T] | Sequence[T]] = []
    try:
        for run in runs[1:]:
            children.append(_fork(work, run))
        results = [work(runs[0])]
        while children:
            results.append(_collect(children[0], work))
            children.pop(0)
        return results
    finally:  # this process was stopped (Ctrl-C, an error): no child outlives it
        for child in children:
            if isinstance(child, _Child):
                _stop(child)


def _fork(work: Callable[[Sequence[T]], R], run: Sequence[T]) -> _Child[T] | Sequence[T]:
    """A child doing ``work(run)``; ``run`` itself when no child could be made (it is done here then)."""
    try:
        reader, writer = os.pipe()
    except OSError:
        return run
    try:
        pid = os.fork()
    except OSError:
        os.close(reader)
        os.close(writer)
        return run
    if pid == 0:  # the child: answer, then leave without running anything of the parent's exit
        status = 1
        try:
            os.close(reader)
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # the parent says what an interrupt means
            data = pickle.dumps(work(run), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(writer, "wb") as out:
                out.write(data)
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    return _Child(pid, reader, run)


def _collect(child: _Child[T] | Sequence[T], work: Callable[[Sequence[T]], R]) -> R:
    """The child's answer, once it has ended well; otherwise its run done here."""
    if not isinstance(child, _Child):
        return work(child)
    answer, child.reader = os.fdopen(child.reader, "rb"), -1  # closed by the file object from here
    with answer:
        data = answer.read()
    _, status = os.waitpid(child.pid, 0)
    child.pid = 0
    if os.waitstatus_to_exitcode(status) == 0:
        try:
            result: R = pickle.loads(data)
            return result
        except Exception:
            pass
    return work(child.run)


def _stop(child: _Child[T]) -> None:
    """Kill ``child``, unless it was already waited for, and close what is left of its pipe."""
    if child.reader >= 0:
        os.close(child.reader)
    if child.pid:
        try:
            os.kill(child.pid, signal.SIGKILL)
            os.waitpid(child.pid, 0)
        except OSError:  # already gone
            pass
