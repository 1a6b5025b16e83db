"""What a start of ``template-engine`` costs, against a bare ``python3 -c 'import yaml'`` in the same run.

Each of these is a fresh process, started ``--runs`` times, interleaved (each round runs every process once,
in an order that rotates from round to round, so all see the same load):

* the floor: ``python -c "import yaml"``;
* ``template-engine --version``, ``--help``, and shell completion of the commands (``_TEMPLATE_ENGINE_COMPLETE
  =zsh_complete``, what a shell runs at every TAB);
* ``template-engine check --root STARTER``, where ``STARTER`` is the org ``template-engine init`` writes;
* the floor of any ``check`` that validates (``validating floor``, not a target): a bare process that imports
  what such a ``check`` cannot go without (PyYAML; click; Jinja2, which the starter org's expression needs;
  pydantic, the core's validator) and validates one value with one pydantic model, no ``template_engine``.
  Its ratio to the floor is the least the starter org's ``check`` can be while documents are validated by
  pydantic models (docs/performance.md, "Issue 20's targets").

The engine runs as ``python -m template_engine`` on the interpreter running this script (``--baseline DIR``:
also the same processes with that checkout first on ``PYTHONPATH``).  Bytecode: this machine sets
``PYTHONDONTWRITEBYTECODE=1``, so an editable checkout compiles its modules at every start, which an installed
package never does.  By default the benchmark compiles everything once into a temporary
``PYTHONPYCACHEPREFIX`` first (as ``pip install`` leaves it), for the floor and the engine alike;
``--no-bytecode`` measures without it.

Each round gives each command's ratio to that round's floor; the figures are the median and the minimum of
the times and of the ratios.  The targets (issue 20): ``--version``, ``--help`` and completion at most 2x the
floor; ``check`` of the starter org at most 4x.  Run ``python benchmarks/bench_startup.py`` (about a minute);
the last line printed is one JSON object with every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from procs import run_process

ROOT = Path(__file__).resolve().parents[1]
TARGETS = {"--version": 2.0, "--help": 2.0, "completion": 2.0, "check starter": 4.0}
#: What a ``check`` that validates cannot do without (not a target; see the module's docstring).
VALIDATING_FLOOR = (
    "import yaml, click, jinja2\n"
    "from pydantic import BaseModel\n"
    "class Document(BaseModel):\n    name: str\n"
    "Document(name='starter')\n"
    "jinja2.Environment().from_string('{{ project }}').render(project='p')"
)
#: Processes that do not run the engine: measured once, not for the baseline side too.
ENGINE_ONLY = ("import yaml", "validating floor")
COMPLETION = {
    "_TEMPLATE_ENGINE_COMPLETE": "zsh_complete",
    "COMP_WORDS": "template-engine ",
    "COMP_CWORD": "1",
}


def commands(starter: Path) -> dict[str, tuple[list[str], dict[str, str], int]]:
    """Each measured process: its arguments after the interpreter, extra environment, expected exit status."""
    engine = ["-m", "template_engine"]
    return {
        "import yaml": (["-c", "import yaml"], {}, 0),
        "--version": ([*engine, "--version"], {}, 0),
        "--help": ([*engine, "--help"], {}, 0),
        "completion": (engine, COMPLETION, 0),
        "check starter": ([*engine, "check", "--root", str(starter)], {}, 0),
        "validating floor": (["-c", VALIDATING_FLOOR], {}, 0),
    }


def environment(code: Path | None, pycache: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(code), *filter(None, [env.get("PYTHONPATH")])])
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def prime(env: dict[str, str], starter: Path) -> None:
    """Run every process once so that its bytecode is written into the cache prefix (not timed)."""
    for args, extra, expect in commands(starter).values():
        run = [sys.executable, *args]
        done = subprocess.run(run, env={**env, **extra}, capture_output=True, check=False, cwd=starter.parent)
        if done.returncode != expect:
            raise SystemExit(f"{args} exited {done.returncode}:\n{done.stderr.decode()[-2000:]}")


def measure(runs: int, sides: dict[str, dict[str, str]], starter: Path) -> dict[str, Any]:
    """``{side: {command: {"seconds": [...], "ratio": [...]}}}`` over ``runs`` interleaved rounds."""
    table = commands(starter)
    jobs = [(side, name) for side in sides for name in table if side == "engine" or name not in ENGINE_ONLY]
    times: dict[tuple[str, str], list[float]] = {job: [] for job in jobs}
    floors: list[float] = []
    for round_ in range(runs):
        order = jobs[round_ % len(jobs) :] + jobs[: round_ % len(jobs)]
        this_round: dict[tuple[str, str], float] = {}
        for side, name in order:
            args, extra, expect = table[name]
            # Run from the work folder: ``-m`` puts the current folder first on sys.path, and a checkout
            # there would shadow the side's PYTHONPATH.
            env = {**sides[side], **extra}
            result = run_process([sys.executable, *args], env=env, expect=expect, cwd=starter.parent)
            this_round[(side, name)] = result["seconds"]
        floors.append(this_round[("engine", "import yaml")])
        for job, seconds in this_round.items():
            times[job].append(seconds)
    out: dict[str, Any] = {}
    for (side, name), seconds in times.items():
        ratios = [s / f for s, f in zip(seconds, floors, strict=True)]
        out.setdefault(side, {})[name] = {
            "median_s": statistics.median(seconds),
            "min_s": min(seconds),
            "median_ratio": statistics.median(ratios),
            "min_ratio": min(ratios),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--baseline", type=Path, help="another checkout, measured in the same rounds")
    parser.add_argument("--no-bytecode", action="store_true", help="compile at every start (editable)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    starter = work / "starter"
    subprocess.run(
        [sys.executable, "-m", "template_engine", "init", str(starter)], check=True, capture_output=True
    )
    pycache = None if args.no_bytecode else work / "pycache"
    sides = {"engine": environment(ROOT, pycache)}
    if args.baseline is not None:
        sides["baseline"] = environment(args.baseline, pycache)
    for env in sides.values():
        if pycache is not None:
            prime(env, starter)
    results = measure(args.runs, sides, starter)
    print(f"{'side':9} {'command':14} {'median':>8} {'min':>8} {'x floor':>8} {'min x':>6} target")
    for side, rows in results.items():
        for name, row in rows.items():
            target = TARGETS.get(name)
            verdict = (
                ""
                if target is None
                else f"<= {target}x {'met' if row['median_ratio'] <= target else 'MISSED'}"
            )
            print(
                f"{side:9} {name:14} {row['median_s'] * 1000:6.0f}ms {row['min_s'] * 1000:6.0f}ms "
                f"{row['median_ratio']:7.2f}x {row['min_ratio']:5.2f}x {verdict}"
            )
    summary = {
        "results": results,
        "runs": args.runs,
        "bytecode": pycache is not None,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
