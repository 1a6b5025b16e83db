"""(issue 20) What each fast path buys over its general twin: ``check`` and ``compose()``, each twin off.

A fast path ("twin") does the work of a general function in a cheaper way on the usual input and hands the
unusual input to the general one (see ``docs/architecture.md``, "Fast paths and their twins").  Each twin is
switched off here, by this benchmark only, by replacing it with its general path (nothing in
``template_engine`` reads a switch):

* ``yaml-lean``: ``loader/yaml_safe.py`` ``_Lean`` (no paths, no line map) off: every document through
  ``_Builder`` (paths and the line map built at once);
* ``yaml-resolver``: ``_FastLoader`` (the resolver without its per-node bookkeeping) off: ``CSafeLoader``;
* ``merge-lean``: the lean merge run (``_Run(record=False)``: ``_lean_list``, ``_new_item``, provenance made
  on first read) off: every merge records;
* ``merge-new-item``: only ``_Run._new_item`` off (the lean run merges a new keyed item with
  ``merge_mapping``);
* ``keys-clean``: ``merge/engine.py`` ``_keys_clean`` off: ``check_keys`` walks every layer with paths;

(``render.py``'s ``_lean_final`` and ``_expression_totals`` were measured here too and removed: see
``docs/performance.md``, "Twins measured (issue 20)".)

Two measurements, each interleaved (every round runs every variant once, the order rotating) and reported
as medians and as each round's ratio to the ``as is`` variant of the same round:

1. ``check --root ORG --output json`` over a ``gen_org`` org of ``--pairs`` pairs, cold processes (the
   switch applied in the process before the CLI starts), wall and CPU (user + system) seconds;
2. the same work in this process (``load_org``, every pair composed), CPU seconds;
3. ``compose()`` of ``bench_compose.py``'s five in-memory layers, in this process (``--repeat`` rounds).

Run ``python benchmarks/bench_twins.py`` (``--quick``: a smoke run).  The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

VARIANTS = (
    "as is",
    "yaml-lean",
    "yaml-resolver",
    "merge-lean",
    "merge-new-item",
    "keys-clean",
)


def _switch(name: str) -> list[tuple[Any, str, Any]]:
    """The (object, attribute, general replacement) that switches the twin ``name`` off."""
    from template_engine.loader import yaml_safe
    from template_engine.merge import engine

    def doubt_yaml(self: Any, node: Any, depth: int) -> Any:
        raise yaml_safe._Doubt

    class Recording(engine._Run):  # type: ignore[misc]
        def __init__(self, plan: Any, layers: Any, record: bool = True) -> None:
            super().__init__(plan, layers, record=True)

    def new_item(self: Any, config: Any, trail: Any, item: Any) -> Any:
        return self.merge_mapping(config, trail, self._fresh({}), item)

    table: dict[str, list[tuple[Any, str, Any]]] = {
        "as is": [],
        "yaml-lean": [(yaml_safe._Lean, "build", doubt_yaml)],
        "yaml-resolver": [(yaml_safe, "_fast", lambda loader_class: loader_class)],
        "merge-lean": [(engine, "_Run", Recording)],
        "merge-new-item": [(engine._Run, "_new_item", new_item)],
        "keys-clean": [(engine, "_keys_clean", lambda plan, value: False)],
    }
    return table[name]


@contextmanager
def switched_off(name: str) -> Iterator[None]:
    """The twin ``name`` replaced by its general path while the block runs."""
    changes = _switch(name)
    saved = [(owner, attr, getattr(owner, attr)) for owner, attr, _ in changes]
    for owner, attr, general in changes:
        setattr(owner, attr, general)
    try:
        yield
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)


#: The child process: the switch, then the CLI (``python -c CHILD VARIANT ARGS...``).
CHILD = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
import bench_twins
name, *args = sys.argv[1:]
with bench_twins.switched_off(name):
    from template_engine.cli import main
    main(args=args, prog_name="template-engine")
"""


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


def _ratios(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    base = times["as is"]
    return {
        name: summary([t / b for t, b in zip(values, base, strict=True)])
        for name, values in times.items()
        if name != "as is"
    }


def measure_check(pairs: int, runs: int, work: Path) -> dict[str, Any]:
    import gen_org
    from procs import run_process

    org = gen_org.generate(gen_org.shape_for(pairs))
    root = work / "templates"
    files = gen_org.write_org(org, root)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for round_ in range(runs):
        shift = round_ % len(VARIANTS)
        for name in VARIANTS[shift:] + VARIANTS[:shift]:
            cmd = [sys.executable, "-c", CHILD, name, "check", "--root", str(root), "--output", "json"]
            before = _children_cpu()
            done = run_process(cmd, cwd=work)
            cpu[name].append(_children_cpu() - before)
            report = json.loads(done["stdout"].decode())
            if report["runnable"] != report["total"]:
                raise SystemExit(f"{name}: {report['runnable']}/{report['total']} runnable")
            times[name].append(done["seconds"])
    return {
        "pairs": len(org.pairs()),
        "files": len(files),
        "seconds": {name: summary(values) for name, values in times.items()},
        "ratio_vs_as_is": _ratios(times),
        "cpu_seconds": {name: summary(values) for name, values in cpu.items()},
        "cpu_ratio_vs_as_is": _ratios(cpu),
    }


def _children_cpu() -> float:
    """User and system CPU seconds of every child process waited for so far (the launcher and its child)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_in_process(pairs: int, runs: int, work: Path) -> dict[str, Any]:
    """``check``'s work in this process (``load_org`` of the org, then every pair composed sharing the scope
    defaults' merges, as ``check`` does), CPU seconds; each load the first of the folder (a load of another
    folder between forgets the last load's documents)."""
    import gen_org

    from template_engine.compose import MergeCache, compose
    from template_engine.loader.tree import load_org

    root, empty = work / "templates", work / "empty-org"
    if not empty.exists():
        gen_org.write_org(gen_org.generate(gen_org.Shape(1, 1, 1)), empty)

    def check() -> float:
        load_org(empty)
        start = time.process_time()
        org = load_org(root)
        cache: MergeCache = {}
        for view, template in org.views():
            compose(org, template, view, cache=cache)
        return time.process_time() - start

    for name in VARIANTS:  # a round not timed: every code path warm
        with switched_off(name):
            check()
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for round_ in range(runs):
        shift = round_ % len(VARIANTS)
        for name in VARIANTS[shift:] + VARIANTS[:shift]:
            with switched_off(name):
                times[name].append(check())
    return {
        "seconds": {name: summary(values) for name, values in times.items()},
        "ratio_vs_as_is": _ratios(times),
    }


def measure_compose(repeat: int, min_time: float) -> dict[str, Any]:
    import bench_compose

    from template_engine.compose import compose
    from template_engine.org import View

    org, template = bench_compose.build_org(bench_compose.layer_specs())
    view = View("research", "vision")
    expected = compose(org, template, view).to_response()

    def full() -> Any:
        return compose(org, template, view)

    for name in VARIANTS:
        with switched_off(name):
            if compose(org, template, view).to_response() != expected:
                raise SystemExit(f"{name}: compose() gives another composition")
    number = bench_compose.calibrate(full, min_time)
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for round_ in range(repeat):
        shift = round_ % len(VARIANTS)
        for name in VARIANTS[shift:] + VARIANTS[:shift]:
            with switched_off(name):
                start = time.process_time()
                bench_compose.timed_loop(full, number)
                times[name].append((time.process_time() - start) / number)
    return {
        "seconds": {name: summary(values) for name, values in times.items()},
        "ratio_vs_as_is": _ratios(times),
    }


def _table(title: str, found: dict[str, Any], scale: float, unit: str) -> None:
    print(f"\n{title}")
    print(f"{'variant':16} {'median ' + unit:>12} {'x as is median':>15} {'x as is min':>12}")
    for name in VARIANTS:
        seconds = found["seconds"][name]["median"] * scale
        ratio = found["ratio_vs_as_is"].get(name, {"median": 1.0, "min": 1.0})
        print(f"{name:16} {seconds:12.1f} {ratio['median']:15.3f} {ratio['min']:12.3f}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds of check")
    parser.add_argument("--repeat", type=int, default=15, help="interleaved rounds of compose()")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 pairs, 2 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        args.pairs, args.runs, args.repeat = 20, 2, 2
    measure: dict[str, Callable[[], dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-twins-") as tmp:
        measure["check"] = lambda: measure_check(args.pairs, args.runs, Path(tmp))
        measure["in_process"] = lambda: measure_in_process(args.pairs, args.runs, Path(tmp))
        measure["compose"] = lambda: measure_compose(args.repeat, 0.02 if args.quick else 0.2)
        out = {name: run() for name, run in measure.items()}
    _table(f"check --root ORG at {out['check']['pairs']} pairs, cold processes", out["check"], 1000, "ms")
    cpu = {"seconds": out["check"]["cpu_seconds"], "ratio_vs_as_is": out["check"]["cpu_ratio_vs_as_is"]}
    _table("the same processes, CPU (user + system)", cpu, 1000, "ms")
    _table("check's work in one process (load_org + every pair composed), CPU", out["in_process"], 1000, "ms")
    _table("compose(), five in-memory layers", out["compose"], 1e6, "us")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
