"""``template-engine diff`` and ``impact`` against one full ``check``, one department's defaults changed.

The org is ``gen_org``'s at ``--pairs`` pairs (default 6,400: 16 departments x 40 projects x 10 templates,
7,058 files).  It is committed to a temporary git repository (then ``git gc``: packed, as a clone has it); the
change under test is the pull request the commands exist for: one department's defaults override one
inherited environment variable's value and one label's value (``--department``, default ``d03``), which
changes some of that department's 400 pairs.

Each process is started from here (interpreter start-up and imports count), cold, in ``--runs`` interleaved
rounds whose order rotates, so all see the same load:

* ``check --root templates -o json``: the whole org composed (the yardstick);
* ``diff --root templates --against HEAD -o json``: the working tree against the commit (read with git);
* ``impact templates/departments/D/defaults.yaml --root templates -o json`` (against HEAD);
* ``diff --root templates --against OLD -o json``: against a copy of the folder before the change;
* each of the three twice: **cold**, with a new, empty fact cache (``TEMPLATE_ENGINE_CACHE_DIR``, a fresh
  folder for every process: the run parses every file and also writes what it learnt), and **warm**, with the
  cache as the same command's earlier runs left it (one run before the rounds fills it): only the files of
  the pairs that are compared are parsed;
* ``impact (warm, edited)``: the warm ``impact`` right after the changed file was edited again (its two
  values made new for every process, then put back): the cache knows the unchanged side's answers and the
  files, not the new side's outcomes, so the pairs the file affects are composed on the new side (issue 20);
* with ``--baseline DIR`` (a checkout of another commit): the same four with that checkout first on
  ``PYTHONPATH``; their standard output must be byte for byte the same as this checkout's (the same
  answers), and the run stops if it is not.

Each round gives its own ratios (diff / check, impact / check); the figures are the median and the minimum
over the rounds; the targets (issue 11: ``impact`` under 20 % and ``diff`` under 60 % of one ``check``;
issue 20: warm ``impact`` at most 20 %) are judged on the medians.  The last line printed is one JSON object.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_org  # sibling scripts, not a package: found through the sys.path line above
from procs import run_process

TARGETS = {"impact": 0.20, "diff HEAD": 0.60}
#: The value the pull request gives (``change_department``); ``impact (warm, edited)`` makes it new each run.
EDITED = "changed-by-the-pull-request"
#: The fact cache's states the commands run in (docs/performance.md): empty (one per process), or filled.
CACHES = ("cold", "warm")
#: The yardsticks: check as a user runs it (on every core) and on one core (``-j 1``).
CHECKS = ("check", "check -j 1")


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid"}
    env.update(GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def change_department(root: Path, department: str) -> Path:
    """One department's defaults: the first environment variable and the first label it sets get new values
    (a text edit, so the rest of the file stays byte for byte as it was)."""
    path = root / f"departments/{department}/defaults.yaml"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    section = None
    done: set[str] = set()
    for index, line in enumerate(lines):
        if line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":"):
            section = line.strip()[:-1]  # environmentVariables, labels
        elif line.lstrip().startswith("value:") and section is not None and section not in done:
            indent = line[: len(line) - len(line.lstrip())]
            lines[index] = f"{indent}value: {EDITED}\n"
            done.add(section)
    if done != {"environmentVariables", "labels"}:
        raise SystemExit(
            f"{path}: found no value to change in {sorted({'environmentVariables', 'labels'} - done)}"
        )
    path.write_text("".join(lines), encoding="utf-8")
    return path


def phases(repo: Path, runs: int, cache: Path | None) -> dict[str, Any]:
    """What ``diff --against HEAD`` does, step by step in this process (median and min of ``runs``): load the
    working tree; read the commit with git; load it (its documents reused where the text is the same);
    compare (compose the pairs whose inputs changed, on both sides).  With ``cache``, a filled fact cache
    (warm): files it knows are read only when a composition needs them, within the compare step."""
    from template_engine.diff import diff_orgs
    from template_engine.loader.facts import FactCache
    from template_engine.loader.gitrev import open_version
    from template_engine.loader.sources import FolderSource
    from template_engine.loader.tree import load_org

    root = repo / "templates"
    other = repo.parent / "another-org"  # a one-pair org: loading it forgets the last load's documents
    gen_org.write_org(gen_org.generate(gen_org.Shape(1, 1, 1)), other)
    steps: dict[str, list[float]] = {"load working tree": [], "git": [], "load commit": [], "diff_orgs": []}
    for _ in range(runs):
        load_org(FolderSource(other))
        facts = FactCache(cache) if cache is not None else None
        start = time.perf_counter()
        new = load_org(FolderSource(root), facts)
        steps["load working tree"].append(time.perf_counter() - start)
        start = time.perf_counter()
        version = open_version(root, "HEAD")
        steps["git"].append(time.perf_counter() - start)
        start = time.perf_counter()
        old = load_org(version.source, facts)
        steps["load commit"].append(time.perf_counter() - start)
        start = time.perf_counter()
        diff_orgs(old, new)
        steps["diff_orgs"].append(time.perf_counter() - start)
    return {name: summary(values) for name, values in steps.items()}


def impact_phases(repo: Path, rel: str, runs: int, cache: Path) -> dict[str, Any]:
    """What a warm ``impact`` does, step by step in this process, as the command does it (median and min of
    ``runs``; the imports are done once, before): list the revision with git; load it; load it with the
    working tree's changed file; compare, recalling the answers the cache keeps (``_diff_sides``), within
    which parsing the files the compositions need, composing (``compose_pair``) and recalling or keeping
    the kept outcomes are timed apart.  Also the blobs read from git and the pairs composed."""
    from template_engine import diff as diff_module
    from template_engine.cli.diff_commands import _diff_sides, _load_side
    from template_engine.diffing import answers
    from template_engine.loader import tree
    from template_engine.loader.facts import FactCache
    from template_engine.loader.gitrev import open_version
    from template_engine.loader.sources import FolderSource, OverlaySource

    root = repo / "templates"
    inner = rel.removeprefix("templates/")
    timed_steps = ("parse", "compose", "kept outcomes")
    spent = dict.fromkeys(timed_steps, 0.0)

    def timed(name: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return real(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - start

        return call

    real = (tree._parse_source, diff_module.compose_pair, answers.Answers.kept, answers.Answers.keep)
    steps: dict[str, list[float]] = {
        name: [] for name in ("git", "load", "load with the change", "compare", *timed_steps)
    }
    blobs: list[int] = []
    composed: list[int] = []
    tree._parse_source = timed("parse", real[0])
    diff_module.compose_pair = timed("compose", real[1])
    answers.Answers.kept = timed("kept outcomes", real[2])  # type: ignore[method-assign]
    answers.Answers.keep = timed("kept outcomes", real[3])  # type: ignore[method-assign]
    try:
        for _ in range(runs):
            tree._Reuse.last = {}
            facts = FactCache(cache)
            start = time.perf_counter()
            version = open_version(root, "HEAD")
            steps["git"].append(time.perf_counter() - start)
            start = time.perf_counter()
            old = _load_side(version.source, None, facts)
            steps["load"].append(time.perf_counter() - start)
            start = time.perf_counter()
            new = _load_side(OverlaySource(version.source, inner, FolderSource(root)), None, facts)
            steps["load with the change"].append(time.perf_counter() - start)
            spent.update(dict.fromkeys(timed_steps, 0.0))
            start = time.perf_counter()
            result = _diff_sides(old, new, {}, facts, file=inner)
            steps["compare"].append(time.perf_counter() - start)
            for name in timed_steps:
                steps[name].append(spent[name])
            blobs.append(getattr(version.source, "blobs_read", 0))
            composed.append(result.composed)
            facts.close()
    finally:
        tree._parse_source, diff_module.compose_pair = real[0], real[1]
        answers.Answers.kept, answers.Answers.keep = real[2], real[3]  # type: ignore[method-assign]
    out: dict[str, Any] = {name: summary(values) for name, values in steps.items()}
    out["blobs read"] = blobs[-1]
    out["pairs composed"] = composed[-1]
    return out


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pairs", type=int, default=6400)
    parser.add_argument("--department", default="d03")
    parser.add_argument("--runs", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--baseline", type=Path, default=None, help="a checkout to compare with, same run")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 400 pairs, 2 rounds")
    parser.add_argument(
        "--no-phases", dest="phases", action="store_false", help="skip the in-process step timing"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.pairs, args.runs = 400, 2
    load_start = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        repo, old_root = Path(tmp) / "repo", Path(tmp) / "old"
        org = gen_org.generate(gen_org.shape_for(args.pairs))
        files = gen_org.write_org(org, repo / "templates")
        shutil.copytree(repo / "templates", old_root)
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "org")
        _git(repo, "gc", "-q")
        changed = change_department(repo / "templates", args.department)
        rel = str(changed.relative_to(repo))
        python = sys.executable
        engine = [python, "-m", "template_engine"]
        commands: dict[str, tuple[list[str], int]] = {
            "check": ([*engine, "check", "--root", "templates", "-o", "json"], 0),
            # check on one core (issue 20's figures before check used every core): a second yardstick
            "check -j 1": ([*engine, "check", "--root", "templates", "-o", "json", "-j", "1"], 0),
            "diff HEAD": ([*engine, "diff", "--root", "templates", "--against", "HEAD", "-o", "json"], 1),
            "impact": ([*engine, "impact", rel, "--root", "templates", "-o", "json"], 1),
            "diff FOLDER": (
                [*engine, "diff", "--root", "templates", "--against", str(old_root), "-o", "json"],
                1,
            ),
        }
        caches = Path(tmp) / "caches"
        warm = {**os.environ, "TEMPLATE_ENGINE_CACHE_DIR": str(caches / "warm")}
        processes: list[tuple[str, tuple[list[str], int], str | None]] = [
            (name, commands[name], None) for name in CHECKS
        ]
        processes += [
            (f"{name} ({cache})", cmd, cache)
            for name, cmd in commands.items()
            if name not in CHECKS
            for cache in CACHES
        ]
        # impact right after the file was edited again: the cache holds the old side's answers, not the new
        # side's (issue 20: the unchanged side's compositions cached, the changed side's composed).
        processes.append(("impact (warm, edited)", commands["impact"], "edited"))
        if args.baseline is not None:
            processes += [
                (f"baseline {name}", cmd, "baseline")
                for name, cmd in commands.items()
                if name != "check -j 1"
            ]
        changed_text = changed.read_text(encoding="utf-8")
        edits = iter(range(1_000_000))
        for _name, (cmd, expect), cache in processes:  # fill the warm cache: one run of each command
            if cache == "warm":
                run_process(cmd, warm, expect, cwd=repo)
        rounds: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in processes}
        outputs: dict[str, bytes] = {}
        fresh = iter(range(1_000_000))
        for round_ in range(args.runs):
            shift = round_ % len(processes)
            for name, (cmd, expect), cache in processes[shift:] + processes[:shift]:
                env = dict(warm)
                if cache == "cold":  # a new, empty cache for this one process
                    env["TEMPLATE_ENGINE_CACHE_DIR"] = str(caches / f"cold-{next(fresh)}")
                elif cache == "baseline":
                    env["PYTHONPATH"] = str(args.baseline)
                elif cache == "edited":  # new values, never seen before, in the changed file
                    fresh_value = f"{EDITED}-{next(edits)}"
                    changed.write_text(changed_text.replace(EDITED, fresh_value), encoding="utf-8")
                try:
                    done = run_process(cmd, env, expect, cwd=repo)
                finally:
                    changed.write_text(changed_text, encoding="utf-8")
                stdout = done.pop("stdout")
                if cache != "edited" and outputs.setdefault(name, stdout) != stdout:
                    raise SystemExit(f"{name} answered differently from one run to the next")
                rounds[name].append(done)
        breakdown = (
            {"no": phases(repo, args.runs, None), "a warm": phases(repo, args.runs, caches / "warm")}
            if args.phases
            else {}
        )
        impact_steps = impact_phases(repo, rel, args.runs, caches / "warm") if args.phases else {}
    if outputs["check -j 1"] != outputs["check"]:
        raise SystemExit("check -j 1 and check give different answers")
    for name in commands:
        if name == "check -j 1":
            continue
        variants = [f"{name} ({cache})" for cache in CACHES] if name != "check" else []
        if args.baseline is not None:
            variants.append(f"baseline {name}")
        for variant in variants[1:] if name != "check" else variants:
            reference = variants[0] if name != "check" else name
            if outputs[variant] != outputs[reference]:
                raise SystemExit(f"{variant} and {reference} give different answers")
    answer = json.loads(outputs["diff HEAD (cold)"])
    impact = json.loads(outputs["impact (cold)"])
    seconds = {name: [d["seconds"] for d in runs] for name, runs in rounds.items()}
    yardstick = {name: "baseline check" if name.startswith("baseline ") else "check" for name in seconds}
    ratios = {
        name: summary([t / c for t, c in zip(seconds[name], seconds[yardstick[name]], strict=True)])
        for name in seconds
        if not name.endswith(CHECKS)
    }
    one_process = {
        name: summary([t / c for t, c in zip(seconds[name], seconds["check -j 1"], strict=True)])
        for name in seconds
        if not name.endswith(CHECKS) and not name.startswith("baseline ")
    }
    out = {
        "bench": "diff",
        "pairs": len(org.pairs()),
        "files": len(files),
        "changed_file": rel,
        "summary": answer["summary"],
        "impact_used_by": len(impact["usedBy"]),
        "runs": args.runs,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "baseline": str(args.baseline) if args.baseline else None,
        "same_answers_as_baseline": args.baseline is not None,
        "same_answers_cold_and_warm": True,
        "load_average_1min": {"start": load_start, "end": os.getloadavg()[0]},
        "seconds": {name: summary(values) for name, values in seconds.items()},
        "maxrss_mib": {
            name: summary([d["maxrss_kib"] / 1024 for d in runs]) for name, runs in rounds.items()
        },
        "ratio_vs_check": ratios,
        "ratio_vs_check_one_process": one_process,
        "targets": {
            variant: {
                "limit": limit,
                "ratio_median": ratios[variant]["median"],
                "one_process_ratio_median": one_process[variant]["median"],
                "met": ratios[variant]["median"] <= limit,
            }
            for name, limit in TARGETS.items()
            for variant in [f"{name} ({cache})" for cache in CACHES]
            + (["impact (warm, edited)"] if name == "impact" else [])
        },
        "all_seconds": seconds,
        "phases_in_process": breakdown,
        "impact_phases_in_process": impact_steps,
    }
    s = answer["summary"]
    print(
        f"org: {out['pairs']} pairs, {out['files']} files; {rel} changed: {s['changed']} pairs differ; "
        f"impact: used by {out['impact_used_by']} pairs"
    )
    header = f"{'x check med':>12} {'x check min':>12} {'x -j 1 med':>11}"
    print(f"{'process':24} {'median s':>9} {'min s':>8} {header} {'MiB':>7}")
    for name in seconds:
        ratio, alone = ratios.get(name), one_process.get(name)
        factors = f"{ratio['median']:12.2f} {ratio['min']:12.2f}" if ratio else f"{'':12} {'':12}"
        factors += f" {alone['median']:11.2f}" if alone else f" {'':11}"
        print(
            f"{name:24} {out['seconds'][name]['median']:9.3f} {out['seconds'][name]['min']:8.3f} {factors} "
            f"{out['maxrss_mib'][name]['median']:7.0f}"
        )
    for cache, steps in breakdown.items():
        text = ", ".join(f"{name} {value['median']:.2f} s" for name, value in steps.items())
        print(f"diff --against HEAD in process, {cache} cache, median: {text}")
    if impact_steps:
        text = ", ".join(
            f"{name} {value['median']:.3f} s"
            for name, value in impact_steps.items()
            if isinstance(value, dict)
        )
        print(
            f"impact in process, a warm cache, median: {text} (parse, compose and kept outcomes are within "
            f"compare); blobs read from git: {impact_steps['blobs read']}; "
            f"pairs composed: {impact_steps['pairs composed']}"
        )
    if args.baseline is not None:
        print("same answers as the baseline: yes (byte-for-byte JSON output of all four commands)")
    print("same answers cold and warm: yes (byte-for-byte JSON output)")
    for name, target in out["targets"].items():
        met = "met" if target["met"] else "MISSED"
        print(
            f"target {name} <= {target['limit']:.0%} of check: {met} ({target['ratio_median']:.0%}; "
            f"{target['one_process_ratio_median']:.0%} of check -j 1)"
        )
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
