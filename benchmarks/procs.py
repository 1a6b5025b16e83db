"""Wall time and peak memory of one process, for the benchmarks (importable; not a package).

A process is started through a small launcher (``python -S``) that forks it, waits for it and reports its wall
time and its own ``ru_maxrss``.  Started directly from a benchmark that holds a large org in memory, a child's
``ru_maxrss`` would count the benchmark's memory (Linux keeps the high-water mark of the address space a
process had before ``exec``); the launcher's is a few MiB, below any process measured here.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

_LAUNCHER = """
import os, sys, time
start = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
elapsed = time.perf_counter() - start
sys.stderr.write(f"\\n@@launcher {elapsed!r} {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_process(
    cmd: Sequence[str], env: dict[str, str] | None = None, expect: int = 0, cwd: Path | None = None
) -> dict[str, Any]:
    """``seconds`` (wall), ``maxrss_kib`` (peak resident memory) and ``stdout`` (bytes) of ``cmd``; a
    ``SystemExit`` naming the command when it exits with another status than ``expect``."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        done = subprocess.run(
            [sys.executable, "-S", "-c", _LAUNCHER, *cmd],
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            check=False,
        )
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read().decode(errors="replace")
    body, _, report = stderr.rstrip("\n").rpartition("\n@@launcher ")
    if done.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {done.returncode} (expected {expect}):\n{body[-2000:]}")
    seconds, maxrss = report.split()
    return {"seconds": float(seconds), "maxrss_kib": int(maxrss), "stdout": stdout}
