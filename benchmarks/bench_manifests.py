"""``manifests --all --out DIR`` over a whole generated org, against ``check`` of the same org (issue 18).

One run, in a temporary folder, for each org size of ``--sizes`` (pairs; default 400 and 1,600), the orgs of
``gen_org`` (the shapes ``bench_check.py`` measures: departments x projects x 10 templates, four layers, 20
environment-variable and 20 label changes per layer; every composition a ``PyTorch`` job):

1. The processes, each a fresh process started from here (interpreter start-up and imports count, cold):

   * ``check``: ``python -m template_engine check --root ORG --output json`` (exit 0, every pair runnable),
     the baseline the target is stated against;
   * ``manifests``: ``python -m template_engine manifests --root ORG --all --out DIR`` when
     ``template-engine manifests --help`` works with the code on ``PYTHONPATH``; until the command exists,
     the **Python equivalent** (``MANIFESTS_SCRIPT``: ``load_org``, ``compose`` of every pair of
     ``Org.views()`` with the scope defaults' merges shared as ``check`` shares them, each composition's
     ``manifests.objects`` written as ``yaml.safe_dump_all`` writes them, PyYAML's pure-Python
     ``SafeDumper``, to one file per pair), labelled ``manifests (python equivalent)`` in the output and in
     ``docs/performance.md``; and the same with libyaml's ``CSafeDumper``, labelled
     ``manifests (python equivalent) (CSafeDumper)``;
   * with ``--baseline DIR`` (a checkout of the code before the cluster step, e.g. ``git -C /work/main
     archive fac8220 | tar -x -C DIR``), ``check`` with that checkout first on ``PYTHONPATH``: how much the
     cluster step (render and check the objects of every composition) added to ``check``, in the same run.

   The output folder is emptied before each ``manifests`` run (outside the timing); after each, the number
   of files must equal the number of pairs and one file must load back as YAML documents with a ``kind``.
2. The processes are interleaved: each of ``--runs`` rounds runs each one once, in an order that rotates from
   round to round, so all of them see the same load.  Each round gives its own ratios (manifests / check,
   check / baseline check); the figures are the median and the minimum over the rounds.  The target,
   ``manifests --all`` at most ``TARGET_VS_CHECK`` x ``check``, is judged on the median ratio.

Run ``python benchmarks/bench_manifests.py --baseline /tmp/base-pre18`` (``--quick`` for a smoke run).  The
last line printed is one JSON object with every figure.
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
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_org  # sibling scripts, not a package: found through the sys.path line above
from procs import run_process

TARGET_VS_CHECK = 1.5
REPO = Path(__file__).resolve().parent.parent

#: ``manifests --all --out DIR`` in Python, for as long as the CLI command is not there: every pair that
#: ``check`` composes, its objects written as multi-document YAML, one file per pair.
MANIFESTS_SCRIPT = """
import sys
from pathlib import Path
import yaml
from template_engine import compose, load_org
root, out = Path(sys.argv[1]), Path(sys.argv[2])
dumper = yaml.CSafeDumper if sys.argv[3] == "c" else yaml.SafeDumper
out.mkdir(parents=True, exist_ok=True)
org = load_org(root)
cache = {}
written = 0
for view, template in org.views():
    result = compose(org, template, view, cache=cache)
    manifests = result.manifests
    if manifests is None or not manifests.objects:
        raise SystemExit(f"no objects for {view} {template.name}")
    where = view.project or str(template.scope).replace("/", "-")
    with open(out / f"{where}--{template.name}.yaml", "w", encoding="utf-8") as f:
        yaml.dump_all(manifests.objects, f, Dumper=dumper, sort_keys=False)
    written += 1
print(written)
"""


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


def env_with(first: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(first)] if first is not None else []
    env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])
    return env


def cli_has_manifests(env: dict[str, str], cwd: Path) -> bool:
    done = subprocess.run(
        [sys.executable, "-m", "template_engine", "manifests", "--help"],
        capture_output=True,
        env=env,
        cwd=cwd,
        check=False,
    )
    return done.returncode == 0


def check_manifests_out(out: Path, pairs: int) -> None:
    files = sorted(out.glob("**/*.y*ml"))
    if len(files) != pairs:
        raise SystemExit(f"manifests wrote {len(files)} files for {pairs} pairs")
    docs = [d for d in yaml.load_all(files[0].read_text(encoding="utf-8"), Loader=yaml.CSafeLoader) if d]
    if not docs or not all(isinstance(d, dict) and d.get("kind") for d in docs):
        raise SystemExit(f"{files[0]} holds no Kubernetes objects")


def measure_size(pairs: int, args: argparse.Namespace, work: Path, use_cli: bool) -> dict[str, Any]:
    shape = gen_org.shape_for(pairs)
    org = gen_org.generate(shape)
    root = work / f"org-{pairs}" / "templates"
    files = gen_org.write_org(org, root)
    out_dir = work / f"out-{pairs}"
    python = sys.executable
    env = env_with(REPO)
    manifests_cmd = (
        [python, "-m", "template_engine", "manifests", "--root", str(root), "--all", "--out", str(out_dir)]
        if use_cli
        else [python, "-c", MANIFESTS_SCRIPT, str(root), str(out_dir), "python"]
    )
    processes: dict[str, tuple[list[str], dict[str, str]]] = {
        "check": ([python, "-m", "template_engine", "check", "--root", str(root), "--output", "json"], env),
        "manifests": (manifests_cmd, env),
    }
    if not use_cli:
        c_cmd = [python, "-c", MANIFESTS_SCRIPT, str(root), str(out_dir), "c"]
        processes["manifests (CSafeDumper)"] = (c_cmd, env)
    if args.baseline is not None:
        processes["baseline check"] = (processes["check"][0], env_with(args.baseline))
    names = list(processes)
    rounds: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    views = 0
    for round_ in range(args.runs):  # interleaved, the order rotating
        for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
            cmd, cmd_env = processes[name]
            if name.startswith("manifests"):
                shutil.rmtree(out_dir, ignore_errors=True)
            done = run_process(cmd, cmd_env, cwd=work)
            stdout = done.pop("stdout").decode()
            if name.startswith("manifests"):
                views = sum(1 for _ in out_dir.glob("**/*.y*ml"))
                check_manifests_out(out_dir, views)
            else:
                report = json.loads(stdout)
                if report["runnable"] != report["total"]:
                    raise SystemExit(f"{name}: {report['runnable']}/{report['total']} runnable at {pairs}")
                if views and report["total"] != views:
                    raise SystemExit(f"{name} checked {report['total']} pairs, manifests wrote {views}")
            rounds[name].append(done)
    seconds = {name: [d["seconds"] for d in runs] for name, runs in rounds.items()}
    rss = {name: [d["maxrss_kib"] for d in runs] for name, runs in rounds.items()}
    ratios = {
        f"{name} / check": summary([m / c for m, c in zip(seconds[name], seconds["check"], strict=True)])
        for name in seconds
        if name.startswith("manifests")
    }
    if "baseline check" in seconds:
        ratios["check / baseline check"] = summary(
            [c / b for c, b in zip(seconds["check"], seconds["baseline check"], strict=True)]
        )
    return {
        "pairs": len(org.pairs()),
        "compositions": views,
        "files": len(files),
        "shape": {"departments": shape.departments, "projects": shape.projects, "templates": shape.templates},
        "seconds": {name: summary(values) for name, values in seconds.items()},
        "all_seconds": seconds,
        "ratios": ratios,
        "maxrss_kib": {name: summary([float(v) for v in values]) for name, values in rss.items()},
    }


def print_size(found: dict[str, Any], label: str) -> None:
    print(
        f"\n{found['pairs']} pairs ({found['compositions']} compositions, {found['files']} files), "
        "median and min of the rounds:"
    )
    print(f"{'process':45} {'median s':>9} {'min s':>8} {'peak MiB':>9}")
    for name, s in found["seconds"].items():
        shown = name.replace("manifests", label) if name.startswith("manifests") else name
        peak = found["maxrss_kib"][name]["median"] / 1024
        print(f"{shown:45} {s['median']:9.3f} {s['min']:8.3f} {peak:9.1f}")
    for name, r in found["ratios"].items():
        name = name.replace("manifests", label) if name.startswith("manifests") else name
        print(f"{name:45} {r['median']:9.2f}x {r['min']:7.2f}x (median, min)")
    sys.stdout.flush()


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="bench-manifests-"))
    use_cli = cli_has_manifests(env_with(REPO), work)
    label = "manifests --all (CLI)" if use_cli else "manifests (python equivalent)"
    print(f"manifests measured as: {label}")
    load_start = os.getloadavg()[0]
    results: dict[str, Any] = {}
    try:
        for pairs in sorted(set(args.sizes)):
            results[str(pairs)] = measure_size(pairs, args, work, use_cli)
            print_size(results[str(pairs)], label)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    targets = {
        f"manifests_vs_check_{key}": {
            "ratio_median": found["ratios"]["manifests / check"]["median"],
            "met": found["ratios"]["manifests / check"]["median"] <= TARGET_VS_CHECK,
        }
        for key, found in results.items()
    }
    return {
        "bench": "manifests",
        "manifests_measured_as": label,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "yaml_dumper": "SafeDumper (pure Python, yaml.safe_dump_all)" if not use_cli else "the CLI's",
            "pythondontwritebytecode": os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        },
        "runs": args.runs,
        "baseline": str(args.baseline) if args.baseline else None,
        "load_average_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "sizes": results,
        "targets": targets,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 and 100 pairs, 2 rounds")
    parser.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[400, 1600])
    parser.add_argument("--runs", type=int, default=None, help="interleaved rounds (default 5)")
    parser.add_argument(
        "--baseline", type=Path, default=None, help="a checkout before the cluster step: its check, same run"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes = [20, 100]
        args.runs = args.runs or 2
    args.runs = args.runs or 5
    out = run(args)
    print("\ntargets:", json.dumps(out["targets"], sort_keys=True))
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
