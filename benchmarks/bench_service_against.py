"""``bench_service.py`` of this checkout against another one (``--baseline DIR``), in the same run.

Each round runs this checkout's ``benchmarks/bench_service.py`` and the baseline's (each with ``--runs 1``,
the same clients, scenarios and seconds), in an order that alternates from round to round, each on a fresh
SQLite file seeded with its own checkout's example org, the baseline's server and benchmark run with
``PYTHONPATH=DIR`` so that they import the baseline's code.  Each run's figures are ratios to its own
``GET /health`` floor measured in the same round (so the machine's load of the moment divides out), and the
server's CPU milliseconds per request.  The report gives, per scenario, the median over the rounds of each
side's ``rps/floor`` and ``cpu ms/req``, and this checkout's as a percentage of the baseline's.

    git archive COMMIT | tar -x -C /tmp/base       # the baseline, e.g. the main before a change
    python benchmarks/bench_service_against.py --baseline /tmp/base --rounds 3

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _one(checkout: Path, args: argparse.Namespace, baseline: bool) -> dict[str, Any]:
    """One run of a checkout's bench_service.py; its last line's JSON."""
    env = dict(os.environ)
    if baseline:
        env["PYTHONPATH"] = str(checkout) + os.pathsep + env.get("PYTHONPATH", "")
    command = [
        sys.executable,
        str(checkout / "benchmarks" / "bench_service.py"),
        "--runs",
        "1",
        "--seconds",
        str(args.seconds),
        "--warmup",
        str(args.warmup),
        "--clients",
        args.clients,
        "--scenarios",
        args.scenarios,
        "--templates",
        str(args.templates),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=checkout, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: bench_service failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    last = done.stdout.strip().splitlines()[-1]
    found: dict[str, Any] = json.loads(last)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--warmup", type=float, default=1)
    parser.add_argument("--clients", default="8")
    parser.add_argument("--scenarios", default="get,list")
    parser.add_argument("--templates", type=int, default=100)
    args = parser.parse_args(argv)
    sides: dict[str, list[dict[str, Any]]] = {"this": [], "baseline": []}
    for index in range(args.rounds):
        order = [("this", REPO, False), ("baseline", args.baseline.resolve(), True)]
        for name, checkout, is_baseline in order if index % 2 == 0 else reversed(order):
            print(f"round {index + 1}: {name}", file=sys.stderr, flush=True)
            sides[name].append(_one(checkout, args, is_baseline)["results"])
    keys = [key for key in sides["this"][0] if not key.startswith("floor")]
    print(
        f"{args.rounds} rounds, {args.seconds:g} s per scenario, clients {args.clients}; medians over rounds"
    )
    head = ("scenario", "rps/floor", "baseline", "this/base", "cpu ms", "baseline", "this/base")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (12, 10, 9, 9, 8, 9, 9), strict=True)))
    report: dict[str, Any] = {}
    for key in keys:
        row = {}
        for name in ("this", "baseline"):
            row[name] = {
                "rps_vs_floor": statistics.median(r[key]["rps_vs_floor"]["median"] for r in sides[name]),
                "cpu_ms": statistics.median(r[key]["server_cpu_ms"]["median"] for r in sides[name]),
            }
        ratio = row["this"]["rps_vs_floor"] / row["baseline"]["rps_vs_floor"]
        cpu = row["this"]["cpu_ms"] / row["baseline"]["cpu_ms"]
        row["rps_ratio"], row["cpu_ratio"] = ratio, cpu
        report[key] = row
        this, base = row["this"], row["baseline"]
        print(
            f"{key:>12} {this['rps_vs_floor']:10.3f} {base['rps_vs_floor']:9.3f} {ratio:9.1%} "
            f"{this['cpu_ms']:8.3f} {base['cpu_ms']:9.3f} {cpu:9.1%}"
        )
    print(
        json.dumps({"benchmark": "service-against", "rounds": args.rounds, "results": report}, sort_keys=True)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
