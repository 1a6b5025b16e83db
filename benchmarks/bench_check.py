"""(b) ``template-engine check`` over a generated 400-pair org, against kustomize and a bare YAML load.

One run, in a temporary folder:

1. ``gen_org`` writes the org (4 departments x 10 projects x 10 templates, each composition 4 layers deep with
   20 environment-variable and 20 label changes per layer) and the same changes as kustomize base -> overlay
   chains.
2. Both sides are checked to build the same thing: every pair's effective env and labels, from the engine (in
   process) and from ``kubectl kustomize`` of the all-in-one kustomization, equal the generator's expectation.
3. Wall times, each a fresh process started from here (so interpreter start-up and imports count):

   * ``template-engine check --root ORG --output json``: the installed entry point, one process, best of N;
     it must exit 0 and report every pair runnable;
   * the YAML floor: one ``python`` process that loads every YAML file of the org once with
     ``yaml.load(f, Loader=yaml.CSafeLoader)`` (libyaml's parser, PyYAML's safe constructor), best of N;
   * ``kubectl kustomize`` of one kustomization holding all 400 chains as resources (one process), best of
     2 (the first is the build that step 2 checks);
   * ``kubectl kustomize`` of each chain, one process per chain, sequentially (how kustomize is used), one
     pass; if the pass would exceed ``--kustomize-budget`` seconds it stops and the total is extrapolated from
     the chains built, and says so.

   Also, for context: ``python -c pass`` and ``python -c "import template_engine.cli"``.
4. In-process phases of the engine (no profiler, best of N): ``load_org``, the compose loop, and, timed on
   their own over the same pairs, ``merge_layers`` and the runnable check.

Run ``python benchmarks/bench_check.py`` (``--quick`` for a smoke run: 2 x 2 x 5 = 20 pairs, fewer repeats).
The last line printed is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_org  # a sibling script, not a package: found through the sys.path line above

TARGET_VS_KUSTOMIZE = 10.0
TARGET_VS_FLOOR = 2.0

#: The YAML floor, run as its own process: every YAML file of the org loaded once.
FLOOR_SCRIPT = """
import os, sys, yaml
count = 0
for folder, _, names in os.walk(sys.argv[1]):
    for name in names:
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                yaml.load(f, Loader=yaml.CSafeLoader)
            count += 1
print(count)
"""

IMPORT_SCRIPT = "import template_engine.cli"


def wall(cmd: Sequence[str], *, expect: int = 0, cwd: Path | None = None) -> tuple[float, str]:
    """Wall time of one process and its standard output; fails loudly on an unexpected exit status."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def best_wall(cmd: Sequence[str], runs: int) -> tuple[float, list[float], str]:
    times, out = [], ""
    for _ in range(runs):
        elapsed, out = wall(cmd)
        times.append(elapsed)
    return min(times), times, out


def best_call(func: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def tool_versions(kubectl: str) -> dict[str, str]:
    try:
        out = subprocess.run(
            [kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, check=True
        ).stdout
        info = json.loads(out)
        return {
            "kubectl": info.get("clientVersion", {}).get("gitVersion", "?"),
            "kustomize": info.get("kustomizeVersion", "?"),
        }
    except (OSError, subprocess.CalledProcessError, ValueError):
        return {"kubectl": "?", "kustomize": "?"}


# -- equivalence --------------------------------------------------------------------------------------------


def verify_kustomize(org: gen_org.GeneratedOrg, built: str) -> int:
    """Every chain's Job in the all-in-one build has exactly the generator's env and labels."""
    jobs = {doc["metadata"]["name"]: doc for doc in yaml.load_all(built, Loader=yaml.CSafeLoader)}
    for pair in org.pairs():
        env, labels = org.expected(pair)
        job = jobs[f"{gen_org.JOB_NAME}-{pair.project}-{pair.template}"]
        got_env = {e["name"]: e["value"] for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
        if got_env != env or job["metadata"]["labels"] != labels:
            raise SystemExit(f"kustomize built something else for {pair}")
    return len(jobs)


def verify_engine(org: gen_org.GeneratedOrg, root: Path) -> int:
    """Every pair composed in process has exactly the generator's env and labels, and is runnable."""
    from template_engine import compose, load_org

    loaded = load_org(root)
    for pair in org.pairs():
        view = loaded.view_of(pair.project)
        result = compose(loaded, loaded.find_template(pair.template, view), view)
        spec = result.combined_spec
        env, labels = org.expected(pair)
        if (
            {e["name"]: e["value"] for e in spec["environmentVariables"]} != env
            or {item["name"]: item["value"] for item in spec["labels"]} != labels
            or not result.runnable.is_runnable
            or result.runnable.warnings
        ):
            raise SystemExit(f"the engine composed something else for {pair}")
    return len(org.pairs())


# -- in-process phases --------------------------------------------------------------------------------------


def phases(root: Path, runs: int) -> dict[str, float]:
    """Where the engine's time goes, in this process and without a profiler.

    Only public entry points are timed, so the split holds whatever ``compose`` does inside: ``load_org``; the
    compose loop over every pair ``check`` covers; ``merge_layers`` alone over the same layers (worker, and
    master where it is composed separately); the runnable check alone.  "The rest" is the compose loop less
    the merge: building the layers, rendering, pruning and sorting, the master's copy, the runnable check.
    """
    from template_engine import load_org
    from template_engine.compose import MergeCache, compose
    from template_engine.merge.engine import merge_layers
    from template_engine.merge.plan import SPEC_PLAN
    from template_engine.runnable import check

    loaded = load_org(root)
    views = loaded.views()
    # Keep only what the timed loops need: like ``check``, which drops each composition once reported.
    merges, specs = [], []
    for view, template in views:
        result = compose(loaded, template, view)
        merges.append(result.worker.layers)
        if result.master is not None and result.master is not result.worker:
            merges.append(result.master.layers)
        specs.append((result.combined_spec, result.combined_master_spec, not result.master_same_as_worker))
    t_load = best_call(lambda: load_org(root), runs)
    t_compose = best_call(lambda: [compose(loaded, t, v).runnable for v, t in views], runs)

    def compose_shared() -> list[object]:
        cache: MergeCache = {}  # as ``check`` does: one cache of scope-default merges per org
        return [compose(loaded, t, v, cache=cache).runnable for v, t in views]

    t_compose_shared = best_call(compose_shared, runs)
    t_merge = best_call(lambda: [merge_layers(SPEC_PLAN, layers) for layers in merges], runs)
    t_check = best_call(lambda: [check(w, m, separate, SPEC_PLAN) for w, m, separate in specs], runs)
    return {
        "load_org": t_load,
        "compose_all": t_compose,
        "compose_all_shared_cache": t_compose_shared,
        "merge": t_merge,
        "compose_rest": t_compose - t_merge,
        "runnable": t_check,
        "pairs_composed": len(views),
    }


# -- the run ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    shape = gen_org.Shape(2, 2, 5) if args.quick else gen_org.Shape()
    runs = args.runs or (2 if args.quick else 5)
    kubectl = shutil.which(args.kubectl) or args.kubectl
    engine = shutil.which("template-engine") or str(Path(sys.executable).parent / "template-engine")
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="bench-check-"))
    try:
        start = time.perf_counter()
        org = gen_org.generate(shape)
        org_root, kust_root = work / "templates", work / "kustomize"
        engine_files = gen_org.write_org(org, org_root)
        kust_files = gen_org.write_kustomize(org, kust_root)
        t_generate = time.perf_counter() - start
        pairs = org.pairs()
        print(
            f"generated {len(pairs)} pairs: {len(engine_files)} org files, {len(kust_files)} kustomize files "
            f"({t_generate:.1f} s)",
            flush=True,
        )

        # What each side builds, checked before anything is timed (the kustomize build is timed run 1).
        n_engine = verify_engine(org, org_root)
        kall_cmd = [kubectl, "kustomize", str(kust_root / "all")]
        t_first, built = wall(kall_cmd)
        n_kust = verify_kustomize(org, built)
        print(f"verified: engine {n_engine} pairs and kustomize {n_kust} jobs equal the expected env/labels")

        # (b) the engine and the YAML floor, one process each, interleaved so that both see the same load.
        engine_cmd = [engine, "check", "--root", str(org_root), "--output", "json"]
        floor_cmd = [sys.executable, "-c", FLOOR_SCRIPT, str(org_root)]
        engine_times, floor_times = [], []
        for _ in range(runs):
            elapsed, out = wall(engine_cmd)
            engine_times.append(elapsed)
            elapsed, floor_out = wall(floor_cmd)
            floor_times.append(elapsed)
        t_engine, t_floor = min(engine_times), min(floor_times)
        report = json.loads(out)
        project_rows = [r for r in report["results"] if r["project"] is not None]
        if report["runnable"] != report["total"] or len(project_rows) != len(pairs):
            raise SystemExit(
                f"check: {report['runnable']}/{report['total']} runnable, {len(project_rows)} project pairs"
            )
        if int(floor_out) != len(engine_files):
            raise SystemExit(f"the floor loaded {floor_out.strip()} files, expected {len(engine_files)}")
        print(f"engine check: {t_engine:.3f} s best of {runs} ({report['runnable']} runnable)", flush=True)
        print(f"YAML floor: {t_floor:.3f} s best of {runs}", flush=True)

        # The interpreter's own costs.
        t_python, _, _ = best_wall([sys.executable, "-c", "pass"], runs)
        t_import, _, _ = best_wall([sys.executable, "-c", IMPORT_SCRIPT], runs)

        # The engine's phases, in this process, next in time to the process measurements above.
        phase = phases(org_root, runs) if not args.no_phases else {}

        # kustomize, all chains in one process.
        k_runs = max(1, min(runs, 2))
        kall_times = [t_first] + [wall(kall_cmd)[0] for _ in range(k_runs - 1)]
        t_kall = min(kall_times)
        print(f"kustomize, one process for all: {t_kall:.3f} s best of {k_runs}", flush=True)

        # kustomize, one process per chain, one sequential pass within the budget; the chains are taken in a
        # strided order so that a partial pass samples every department.
        order = [pairs[i] for first in range(10) for i in range(first, len(pairs), 10)]
        chain_times: list[float] = []
        pass_start = time.perf_counter()
        for pair in order:
            if time.perf_counter() - pass_start > args.kustomize_budget:
                break
            elapsed, _ = wall([kubectl, "kustomize", str(kust_root / gen_org.kustomize_chain(pair))])
            chain_times.append(elapsed)
        measured = sum(chain_times)
        complete = len(chain_times) == len(pairs)
        t_kper = measured if complete else measured / len(chain_times) * len(pairs)
        label = "measured" if complete else f"EXTRAPOLATED from {len(chain_times)} of {len(pairs)} chains"
        print(f"kustomize, one process per chain: {t_kper:.1f} s ({label})", flush=True)

    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)

    return {
        "bench": "check",
        "pairs": len(pairs),
        "layers": 4,
        "changes_per_list_per_layer": shape.items,
        "files": {"org": len(engine_files), "kustomize": len(kust_files)},
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "yaml_loader": "CSafeLoader" if yaml.__with_libyaml__ else "unavailable",
            **tool_versions(kubectl),
        },
        "runs": runs,
        "load_average_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "seconds": {
            "engine_check": t_engine,
            "yaml_floor": t_floor,
            "kustomize_all_in_one": t_kall,
            "kustomize_per_chain": t_kper,
            "python_startup": t_python,
            "engine_import": t_import,
            "generate": t_generate,
        },
        "all_runs": {
            "engine_check": engine_times,
            "yaml_floor": floor_times,
            "kustomize_all_in_one": kall_times,
            "kustomize_per_chain_median": statistics.median(chain_times),
        },
        "kustomize_per_chain": {"chains_built": len(chain_times), "extrapolated": not complete},
        "ratio": {
            "kustomize_all_in_one_vs_engine": t_kall / t_engine,
            "kustomize_per_chain_vs_engine": t_kper / t_engine,
            "engine_vs_yaml_floor": t_engine / t_floor,
        },
        "target": {
            "applies": len(pairs) == gen_org.Shape().pairs,
            "vs_kustomize": TARGET_VS_KUSTOMIZE,
            "vs_kustomize_all_in_one_met": t_kall / t_engine >= TARGET_VS_KUSTOMIZE,
            "vs_kustomize_per_chain_met": t_kper / t_engine >= TARGET_VS_KUSTOMIZE,
            "vs_floor": TARGET_VS_FLOOR,
            "vs_floor_met": t_engine / t_floor <= TARGET_VS_FLOOR,
        },
        "engine_phases_in_process": phase,
    }


def print_table(out: dict[str, Any]) -> None:
    s, r, t = out["seconds"], out["ratio"], out["target"]
    per_chain = "extrapolated" if out["kustomize_per_chain"]["extrapolated"] else "one pass"
    rows = [
        ("template-engine check (1 process)", s["engine_check"], 1.0, f"best of {out['runs']}"),
        ("YAML floor, CSafeLoader (1 process)", s["yaml_floor"], s["yaml_floor"] / s["engine_check"], ""),
        (
            "kubectl kustomize, all in 1 process",
            s["kustomize_all_in_one"],
            r["kustomize_all_in_one_vs_engine"],
            "",
        ),
        (
            "kubectl kustomize, 1 process/chain",
            s["kustomize_per_chain"],
            r["kustomize_per_chain_vs_engine"],
            per_chain,
        ),
        ("python -c pass", s["python_startup"], s["python_startup"] / s["engine_check"], ""),
        (
            "python -c 'import template_engine.cli'",
            s["engine_import"],
            s["engine_import"] / s["engine_check"],
            "",
        ),
    ]
    print(f"\ncheck over {out['pairs']} (project, template) pairs, {out['layers']} layers each")
    print(f"{'measurement':40} {'seconds':>9} {'x engine':>9}  note")
    for name, value, factor, note in rows:
        print(f"{name:40} {value:9.3f} {factor:9.2f}  {note}")
    yes = {True: "met", False: "MISSED"}
    if not t["applies"]:
        print("(smoke run: the targets below are stated for the 400-pair org, not for this one)")
    print(
        f"targets: kustomize >= {t['vs_kustomize']:g}x engine: all-in-one "
        f"{yes[t['vs_kustomize_all_in_one_met']]} ({r['kustomize_all_in_one_vs_engine']:.1f}x), per chain "
        f"{yes[t['vs_kustomize_per_chain_met']]} ({r['kustomize_per_chain_vs_engine']:.1f}x); "
        f"engine <= {t['vs_floor']:g}x YAML floor: {yes[t['vs_floor_met']]} "
        f"({r['engine_vs_yaml_floor']:.2f}x)"
    )
    load = out["load_average_1min"]
    print(f"1-minute load average: {load['start']:.2f} at start, {load['end']:.2f} at end (2 cores)")
    phase = out["engine_phases_in_process"]
    if phase:
        print(
            "engine in process: load_org {load_org:.3f} s, compose x{pairs_composed} {compose_all:.3f} s "
            "without a cache (merge {merge:.3f}, the rest {compose_rest:.3f}, of which the runnable check "
            "{runnable:.3f}); {compose_all_shared_cache:.3f} s with the scope-default merges shared, "
            "as check does".format(**phase)
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 pairs, 2 runs each")
    parser.add_argument("--runs", type=int, default=None, help="runs per process measurement (best is kept)")
    parser.add_argument("--kubectl", default="kubectl", help="the kubectl binary (built-in kustomize)")
    parser.add_argument(
        "--kustomize-budget",
        type=float,
        default=60.0,
        help="seconds for the one-process-per-chain pass; past it the rest is extrapolated (and labelled)",
    )
    parser.add_argument("--no-phases", action="store_true", help="skip the in-process phase breakdown")
    parser.add_argument("--keep", action="store_true", help="keep the generated folder")
    args = parser.parse_args(argv)
    out = run(args)
    print_table(out)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
