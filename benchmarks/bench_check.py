"""``template-engine check`` over generated orgs, against a bare YAML load of the same files and kustomize.

One run, in a temporary folder, for each org size of ``--sizes`` (pairs; default 400 and 6,400) and of
``--kustomize-sizes`` (default 100, 400 and 1,600):

1. ``gen_org`` writes the org, in each of ``--shapes`` (default both, issue 20): ``deep``, departments x
   projects x 10 templates (few projects of many templates), and ``wide``, 50 projects per department of one
   template each, each project with its own defaults (2 files per pair: at 400 pairs 8 departments, 810
   files); each composition 4 layers deep with 20 environment-variable and 20 label changes per layer.  For
   the kustomize sizes it also writes the same changes as kustomize base -> overlay chains.
2. Both sides are checked to build the same thing: every pair's effective env and labels, from the engine (in
   process) and from ``kubectl kustomize`` of the all-in-one kustomization, equal the generator's expectation.
3. Wall time and peak memory (``ru_maxrss`` of that process), each a fresh process started from here, so
   interpreter start-up and imports count, cold (no cache of any kind survives between processes):

   * the engine: ``python -m template_engine check --root ORG --output json`` (it must exit 0 and report
     every pair runnable), as a user runs it: ``--jobs 0``, one process per core once the org is large
     enough (docs/decisions.md, "check on every core");
   * ``engine, one process``: the same with ``--jobs 1``, everything in one process; the memory target is
     judged on it (one process's peak: with several, ``ru_maxrss`` is the largest one's, not their sum);
   * the YAML floor: one ``python`` process that loads every YAML file of the org once with
     ``yaml.load(f, Loader=yaml.CSafeLoader)`` (libyaml's parser, PyYAML's safe constructor);
   * the same ``check`` over an org of one pair: its peak memory (the interpreter, every module ``check``
     imports, one composition) is subtracted from the engine's, and the rest divided by the pairs beyond
     the first gives the memory per pair (now that ``import template_engine.cli`` imports little, the
     import alone would count the modules a check loads as memory of its pairs);
   * with ``--baseline DIR`` (a checkout of another commit, e.g. ``git archive COMMIT | tar -x -C DIR``), the
     same engine and import processes with that checkout first on ``PYTHONPATH``: before and after in one
     run.

   These are interleaved: each of ``--runs`` rounds runs every process once, in an order that rotates from
   round to round, so all of them see the same load.  Each round gives its own ratio engine / floor; the
   figures are the median and the minimum over the rounds (times and ratios).  The target (at most
   ``TARGET_VS_FLOOR`` x the floor) is judged on the median ratio.
4. kustomize (``kubectl kustomize`` of one kustomization that holds every chain as a resource: one process
   for all pairs), ``--kustomize-runs`` times, each run interleaved with an engine run; and at 400 pairs, with
   ``--per-chain``, one ``kubectl kustomize`` process per chain (how kustomize is used), stopped after
   ``--kustomize-budget`` seconds and extrapolated, and labelled so.

Run ``python benchmarks/bench_check.py`` (``--quick`` for a smoke run).  The last line printed is one JSON
object with every figure.  ``PYTHONDONTWRITEBYTECODE=1`` (set on these machines) means ``template_engine``'s
own modules are compiled at every start, as an editable install is run here; ``--bytecode`` adds, at the
smallest size, the same processes with bytecode compiled once beforehand into a temporary
``PYTHONPYCACHEPREFIX`` (as a ``pip install`` of the package has it), for both the engine and the floor.
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
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_org  # sibling scripts, not a package: found through the sys.path line above
from procs import run_process

TARGET_VS_KUSTOMIZE = 10.0
TARGET_VS_FLOOR = 2.0
#: The sizes the floor target is stated for (issue 11: 400 and 6,400; issue 20: 100, 400, 1,600, both shapes).
FLOOR_TARGET_SIZES = (100, 400, 1600, 6400)

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


def shape_for(pairs: int, kind: str = "deep") -> gen_org.Shape:
    try:
        return gen_org.shape_for(pairs, kind=kind)
    except ValueError as exc:
        raise SystemExit(f"--sizes: {exc}") from None


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


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


def phases(root: Path, runs: int) -> dict[str, Any]:
    """Where the engine's time goes, in this process and without a profiler (median and min of ``runs``):
    ``load_org``, and the compose loop over every pair ``check`` covers, sharing the scope defaults' merges
    as ``check`` does.  Each load is the first of the folder in this process: documents are reused only
    from the last load, and a load of another folder comes between."""
    from template_engine.compose import MergeCache, compose
    from template_engine.loader.tree import load_org

    loads, composes = [], []
    for _ in range(runs):
        load_org(root.parent.parent / "empty-org")  # forget the last load's documents
        start = time.perf_counter()
        org = load_org(root)
        loads.append(time.perf_counter() - start)
        views = org.views()
        cache: MergeCache = {}
        start = time.perf_counter()
        for view, template in views:
            compose(org, template, view, cache=cache)
        composes.append(time.perf_counter() - start)
    return {"load_org": summary(loads), "compose_all": summary(composes), "pairs_composed": len(views)}


#: How ``import_breakdown`` groups the modules ``template_engine.cli`` imports (first match wins).
IMPORT_GROUPS = (
    ("the spec models (pydantic builds their validators)", ("template_engine.models",)),
    (
        "report/schema/init's modules imported at start (views.schema only, since they are lazy)",
        (
            "template_engine.views",
            "template_engine.diff",
            "template_engine.loader.gitrev",
            "jinja2",
            "markupsafe",
        ),
    ),
    ("pydantic and pydantic-core", ("pydantic", "annotated_types", "typing_extensions")),
    ("the rest of template_engine", ("template_engine",)),
    ("click, PyYAML", ("click", "yaml", "_yaml")),
)


def import_breakdown(runs: int, cwd: Path) -> dict[str, float]:
    """Seconds of ``import template_engine.cli`` by group of modules (``python -X importtime``, each module's
    own time; median of ``runs``); what no group claims (the standard library) is "other"."""
    totals: dict[str, list[float]] = {}
    for _ in range(runs):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", IMPORT_SCRIPT],
            capture_output=True,
            text=True,
            check=True,
            cwd=cwd,
        )
        sums: dict[str, float] = {}
        for line in done.stderr.splitlines():
            if not line.startswith("import time:") or "|" not in line or "self [us]" in line:
                continue
            own, _, name = (part.strip() for part in line[len("import time:") :].split("|"))
            group = next(
                (
                    label
                    for label, prefixes in IMPORT_GROUPS
                    if name.split(".")[0] in prefixes or name.startswith(prefixes)
                ),
                "other (standard library)",
            )
            sums[group] = sums.get(group, 0.0) + int(own) / 1e6
        for group, value in sums.items():
            totals.setdefault(group, []).append(value)
    return {group: statistics.median(values) for group, values in totals.items()}


def memory_breakdown(root: Path) -> dict[str, float]:
    """MiB the loaded org holds (``tracemalloc`` of one ``load_org``), by where it was allocated."""
    import tracemalloc

    from template_engine.loader.tree import load_org

    load_org(root.parent.parent / "empty-org")
    tracemalloc.start()
    try:
        org = load_org(root)
        snapshot = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    import inspect

    from template_engine.loader.yaml_safe import LazyLines

    code, first = inspect.getsourcelines(LazyLines.__init__)
    text_lines = range(first, first + len(code))  # where a document's text is kept (compressed)
    text = "documents' text (compressed, for their line maps)"
    groups = {
        "validated documents (pydantic models)": "pydantic",
        "YAML data (parsed values, mappings, lists)": "yaml_safe.py",
        "the loader's records (tree.py: sources, keys, documents)": "tree.py",
    }
    out: dict[str, float] = dict.fromkeys([*groups, text], 0.0)
    out["other"] = 0.0
    for stat in snapshot.statistics("lineno"):
        frame = stat.traceback[0]
        if frame.filename.endswith("yaml_safe.py") and frame.lineno in text_lines:
            out[text] += stat.size / 2**20
            continue
        label = next((label for label, part in groups.items() if part in frame.filename), "other")
        out[label] += stat.size / 2**20
    del org
    return out


# -- one size -----------------------------------------------------------------------------------------------


def engine_env(baseline: Path | None, pycache: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if baseline is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(baseline), *filter(None, [env.get("PYTHONPATH")])])
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = str(pycache)
    return env


def measure_size(
    pairs: int,
    args: argparse.Namespace,
    work: Path,
    kubectl: str,
    pycache: Path | None = None,
    kind: str = "deep",
) -> dict[str, Any]:
    shape = shape_for(pairs, kind)
    org = gen_org.generate(shape)
    root = work / f"org-{kind}-{pairs}"
    org_root = root / "templates"
    files = gen_org.write_org(org, org_root)
    kustomize = pairs in args.kustomize_sizes and not args.no_kustomize and pycache is None
    if kustomize:
        gen_org.write_kustomize(org, root / "kustomize")
    one_pair = work / "one-pair"
    if not one_pair.exists():
        gen_org.write_org(gen_org.generate(gen_org.Shape(1, 1, 1)), one_pair)
    n_engine = verify_engine(org, org_root) if pycache is None and args.verify else len(org.pairs())
    python = sys.executable
    processes: dict[str, tuple[list[str], dict[str, str]]] = {
        "engine": (
            [python, "-m", "template_engine", "check", "--root", str(org_root), "--output", "json"],
            {},
        ),
        "floor": ([python, "-c", FLOOR_SCRIPT, str(org_root)], {}),
        # the same check in one process (--jobs 1; "engine" is the default, one process per core): the
        # memory target is judged on it, a single process's peak as before check --jobs
        "engine, one process": (
            [python, "-m", "template_engine", "check", "--root", str(org_root), "-o", "json", "-j", "1"],
            {},
        ),
        # the same command over a one-pair org: the peak memory every check has, whatever the org
        "one-pair check": (
            [python, "-m", "template_engine", "check", "--root", str(one_pair), "--output", "json"],
            {},
        ),
    }
    for name in list(processes):
        cmd, _ = processes[name]
        processes[name] = (cmd, engine_env(None, pycache))
    if args.baseline is not None:
        processes["baseline engine"] = (processes["engine"][0], engine_env(args.baseline, pycache))
        processes["baseline one-pair check"] = (
            processes["one-pair check"][0],
            engine_env(args.baseline, pycache),
        )
    names = list(processes)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    for round_ in range(args.runs):  # interleaved, the order rotating
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            cmd, env = processes[name]
            rounds[name].append(run_process(cmd, env, cwd=work))  # not the checkout: it would come first
    for name in ("engine", "engine, one process", "baseline engine"):
        for done in rounds.get(name, []):
            report = json.loads(done.pop("stdout").decode())
            project_rows = [r for r in report["results"] if r["project"] is not None]
            if report["runnable"] != report["total"] or len(project_rows) != len(org.pairs()):
                raise SystemExit(f"{name}: {report['runnable']}/{report['total']} runnable at {pairs} pairs")
    for done in rounds["floor"]:
        if int(done.pop("stdout").decode()) != len(files):
            raise SystemExit("the floor loaded another number of files")
    seconds = {name: [d["seconds"] for d in runs] for name, runs in rounds.items()}
    rss = {name: [d["maxrss_kib"] for d in runs] for name, runs in rounds.items()}
    out: dict[str, Any] = {
        "pairs": len(org.pairs()),
        "files": len(files),
        "shape_kind": kind,
        "shape": {"departments": shape.departments, "projects": shape.projects, "templates": shape.templates},
        "engine_pairs_verified": n_engine,
        "seconds": {name: summary(values) for name, values in seconds.items()},
        "all_seconds": seconds,
        "ratio_vs_floor": {
            name: summary([e / f for e, f in zip(seconds[name], seconds["floor"], strict=True)])
            for name in ("engine", "engine, one process", "baseline engine")
            if name in seconds
        },
        # with several processes, ru_maxrss is the largest one's (Linux's wait4), not their sum
        "memory_kib_per_pair": {
            who: summary(
                [(e - i) / (len(org.pairs()) - 1) for e, i in zip(rss[who], rss[one_pair], strict=True)]
            )
            for who, one_pair in (
                ("engine", "one-pair check"),
                ("engine, one process", "one-pair check"),
                ("baseline engine", "baseline one-pair check"),
            )
            if who in rss
        },
        "maxrss_kib": {name: summary([float(v) for v in values]) for name, values in rss.items()},
    }
    if kustomize:
        out["kustomize"] = measure_kustomize(org, root, kubectl, processes["engine"], args)
    if args.phases and pycache is None:
        empty = work / "empty-org"
        if not empty.exists():
            gen_org.write_org(gen_org.generate(gen_org.Shape(1, 1, 1)), empty)
        out["phases_in_process"] = phases(org_root, args.runs)
        if pairs == min(args.sizes) and kind == args.shapes[0]:
            out["memory_mib_by_origin"] = memory_breakdown(org_root)
            out["import_seconds_by_group"] = import_breakdown(args.runs, work)
    return out


def measure_kustomize(
    org: gen_org.GeneratedOrg,
    root: Path,
    kubectl: str,
    engine: tuple[list[str], dict[str, str]],
    args: argparse.Namespace,
) -> dict[str, Any]:
    """kustomize's all-in-one build (checked to equal the generator's expectation), each run paired with an
    engine run; at 400 pairs with ``--per-chain``, one process per chain within the budget."""
    kust_root = root / "kustomize"
    kall_cmd = [kubectl, "kustomize", str(kust_root / "all")]
    first = run_process(kall_cmd)
    n_kust = verify_kustomize(org, first.pop("stdout").decode())
    k_times, e_times = [first["seconds"]], [run_process(*engine, cwd=root)["seconds"]]
    for _ in range(args.kustomize_runs - 1):
        k_times.append(run_process(kall_cmd)["seconds"])
        e_times.append(run_process(*engine, cwd=root)["seconds"])
    out: dict[str, Any] = {
        "jobs_verified": n_kust,
        "all_in_one_seconds": summary(k_times),
        "engine_seconds": summary(e_times),
        "kustomize_vs_engine": summary([k / e for k, e in zip(k_times, e_times, strict=True)]),
    }
    if args.per_chain and len(org.pairs()) == 400:
        pairs = org.pairs()
        order = [pairs[i] for first_ in range(10) for i in range(first_, len(pairs), 10)]
        chain_times: list[float] = []
        pass_start = time.perf_counter()
        for pair in order:
            if time.perf_counter() - pass_start > args.kustomize_budget:
                break
            cmd = [kubectl, "kustomize", str(kust_root / gen_org.kustomize_chain(pair))]
            chain_times.append(run_process(cmd)["seconds"])
        complete = len(chain_times) == len(pairs)
        total = sum(chain_times) if complete else sum(chain_times) / len(chain_times) * len(pairs)
        out["per_chain"] = {
            "seconds": total,
            "chains_built": len(chain_times),
            "extrapolated": not complete,
            "median_chain_seconds": statistics.median(chain_times),
            "vs_engine_median": total / statistics.median(e_times),
        }
    return out


# -- the run ------------------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    kubectl = shutil.which(args.kubectl) or ""
    if not kubectl and not args.no_kustomize:
        print("kubectl not found: the kustomize comparison is skipped (say so wherever figures are quoted)")
        args.no_kustomize = True
    sizes = sorted(set(args.sizes) | (set() if args.no_kustomize else set(args.kustomize_sizes)))
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="bench-check-"))
    results: dict[str, Any] = {}
    try:
        for kind in args.shapes:
            for pairs in sizes:
                results[f"{kind} {pairs}"] = measure_size(pairs, args, work, kubectl, kind=kind)
                print_size(results[f"{kind} {pairs}"])
        if args.bytecode:
            pycache = work / "pycache"
            env = {k: v for k, v in engine_env(None, pycache).items() if k != "PYTHONDONTWRITEBYTECODE"}
            prime = [sys.executable, "-c", f"{IMPORT_SCRIPT}; import yaml, template_engine.loader.tree"]
            subprocess.run(prime, env=env, check=True, cwd=work)
            if args.baseline is not None:
                subprocess.run(prime, env={**env, "PYTHONPATH": str(args.baseline)}, check=True, cwd=work)
            smallest, kind = min(args.sizes), args.shapes[0]
            key = f"{kind} {smallest} with bytecode"
            results[key] = measure_size(smallest, args, work, kubectl, pycache, kind=kind)
            print("with bytecode compiled beforehand:")
            print_size(results[key])
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    targets = {}
    for kind in args.shapes:
        for pairs in FLOOR_TARGET_SIZES:
            found = results.get(f"{kind} {pairs}")
            if found is not None:
                ratio = found["ratio_vs_floor"]["engine"]["median"]
                alone = found["ratio_vs_floor"]["engine, one process"]["median"]
                targets[f"floor_{kind}_{pairs}"] = {
                    "ratio_median": ratio,
                    "met": ratio <= TARGET_VS_FLOOR,
                    "one_process_ratio_median": alone,
                }
    for key, found in results.items():
        if "kustomize" in found:
            factor = found["kustomize"]["kustomize_vs_engine"]["median"]
            met = factor >= TARGET_VS_KUSTOMIZE
            targets[f"kustomize_{key.replace(' ', '_')}"] = {"factor_median": factor, "met": met}
    return {
        "bench": "check",
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "yaml_loader": "CSafeLoader" if yaml.__with_libyaml__ else "unavailable",
            "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
            **(tool_versions(kubectl) if kubectl else {"kubectl": "not found"}),
        },
        "runs": args.runs,
        "baseline": str(args.baseline) if args.baseline else None,
        "load_average_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "sizes": results,
        "targets": targets,
    }


def print_size(found: dict[str, Any]) -> None:
    s, r, m = found["seconds"], found["ratio_vs_floor"], found["memory_kib_per_pair"]
    shape = found["shape"]
    print(
        f"\ncheck over {found['pairs']} pairs, {found['shape_kind']} shape "
        f"({shape['departments']} departments x {shape['projects']} projects x "
        f"{shape['templates']} templates, {found['files']} files), "
        "median and min of the rounds:"
    )
    print(
        f"{'process':22} {'median s':>9} {'min s':>8} {'x floor med':>12} {'x floor min':>12} {'KiB/pair':>9}"
    )
    for name in s:
        ratio = r.get(name)
        factors = f"{ratio['median']:12.2f} {ratio['min']:12.2f}" if ratio else f"{'':12} {'':12}"
        memory = f"{m[name]['median']:9.1f}" if name in m else ""
        print(f"{name:22} {s[name]['median']:9.3f} {s[name]['min']:8.3f} {factors} {memory}")
    phase = found.get("phases_in_process")
    if phase:
        print(
            f"in process, median: load_org {phase['load_org']['median']:.3f} s, compose all "
            f"{phase['pairs_composed']} pairs {phase['compose_all']['median']:.3f} s (merges shared)"
        )
    for key, title, unit in (
        ("import_seconds_by_group", "import template_engine.cli by module group (-X importtime)", "s"),
        ("memory_mib_by_origin", "what one loaded org holds (tracemalloc)", "MiB"),
    ):
        if key in found:
            parts = ", ".join(f"{name} {value:.3f} {unit}" for name, value in found[key].items())
            print(f"{title}: {parts}")
    k = found.get("kustomize")
    if k:
        print(
            f"kustomize all-in-one {k['all_in_one_seconds']['median']:.2f} s (median): "
            f"{k['kustomize_vs_engine']['median']:.1f}x the engine "
            f"(min {k['kustomize_vs_engine']['min']:.1f}x)"
        )
        chain = k.get("per_chain")
        if chain:
            built = chain["chains_built"]
            label = f"EXTRAPOLATED from {built} chains" if chain["extrapolated"] else "measured"
            print(
                f"kustomize one process per chain: {chain['seconds']:.1f} s ({label}), "
                f"{chain['vs_engine_median']:.0f}x the engine"
            )
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 50 and 100 pairs, 2 rounds")
    parser.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[400, 6400])
    parser.add_argument(
        "--kustomize-sizes", type=lambda v: [int(x) for x in v.split(",")], default=[100, 400, 1600]
    )
    parser.add_argument(
        "--shapes",
        type=lambda v: [x for x in v.split(",") if x],
        default=list(gen_org.SHAPES),
        help="org shapes, comma-separated: deep (10 templates per project), wide (1 template per project)",
    )
    parser.add_argument("--runs", type=int, default=None, help="interleaved rounds (default 5)")
    parser.add_argument("--kustomize-runs", type=int, default=2)
    parser.add_argument("--kubectl", default="kubectl", help="the kubectl binary (built-in kustomize)")
    parser.add_argument("--no-kustomize", action="store_true", help="skip kustomize")
    parser.add_argument("--per-chain", action="store_true", help="at 400 pairs, one kustomize per chain too")
    parser.add_argument(
        "--kustomize-budget",
        type=float,
        default=60.0,
        help="seconds for the one-process-per-chain pass; past it the rest is extrapolated (and labelled)",
    )
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout to compare with, same run")
    parser.add_argument("--bytecode", action="store_true", help="also time the smallest size with bytecode")
    parser.add_argument("--keep", action="store_true", help="keep the generated folders")
    parser.add_argument(
        "--no-verify", dest="verify", action="store_false", help="skip composing every pair in process first"
    )
    parser.add_argument(
        "--no-phases", dest="phases", action="store_false", help="skip the in-process load/compose timing"
    )
    args = parser.parse_args(argv)
    if unknown := set(args.shapes) - set(gen_org.SHAPES):
        parser.error(f"--shapes: unknown {', '.join(sorted(unknown))} (one of {', '.join(gen_org.SHAPES)})")
    if args.quick:
        args.sizes, args.kustomize_sizes = [50, 100], [50]
        args.runs = args.runs or 2
    args.runs = args.runs or 5
    out = run(args)
    print("\ntargets:", json.dumps(out["targets"], sort_keys=True))
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
