"""How long ``template-engine diff`` and ``impact`` take on an org of about 5,000 (project, template) pairs.

The generated org has 10 departments x 50 projects; every project sees 10 templates (6 system, 2 of its
department, 2 of its own), so 5,000 project pairs plus 26 scope-level pairs, in 1,560 files.  The change
under test is the pull request the feature exists for: one department's defaults excludes an inherited
environment variable and overrides a label, which changes 502 pairs.

Measured in the same run, best of ``--repeat``:

* the baseline: a bare YAML load (PyYAML, C loader when available) of every file of one tree;
* ``load_org`` of one tree (YAML with line numbers, schema validation);
* composing every pair of one tree (what a diff would cost if it recomposed everything);
* ``diff_orgs`` in process, both trees already loaded;
* the installed CLI as a subprocess: ``diff --against FOLDER``, ``diff --against HEAD`` (the tree at a git
  revision, read with git) and ``impact FILE --against HEAD``.

Run from the repository root: ``python benchmarks/bench_diff.py`` (``--help`` for the options).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from template_engine import compose, load_org
from template_engine.diff import diff_orgs
from template_engine.diffing.pairs import pairs

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

SYSTEM_TEMPLATES = 6
DEPARTMENT_TEMPLATES = 2
PROJECT_TEMPLATES = 2


def _dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _env(prefix: str, count: int) -> list[dict[str, str]]:
    return [{"name": f"{prefix}_{i}", "value": f"{prefix.lower()}-value-{i}"} for i in range(count)]


def _template(name: str, index: int) -> dict[str, Any]:
    framework = ("PyTorch", "MPI", "TF", "XGBoost")[index % 4]
    spec: dict[str, Any] = {
        "distributedFramework": framework,
        "numWorkers": 2 + index % 6,
        "args": f"train.py --config {name}.yaml",
        "environmentVariables": _env(f"T{index}", 3),
        "labels": [{"name": "template", "value": name}],
    }
    if framework == "PyTorch":
        spec.update(minReplicas=1, maxReplicas=4)
    return {
        "meta": {"name": name, "description": f"generated template {name}"},
        "assets": {
            "environment": ("pytorch", "mpi", "tensorflow", "xgboost")[index % 4],
            "compute": ("gpu-1", "gpu-8")[index % 2],
            "datasources": [{"name": "datasets"}, {"name": "code", "overrides": {"containerPath": "/code"}}],
        },
        "spec": spec,
    }


def generate(root: Path, departments: int, projects: int) -> int:
    """Write the org under ``root``; the number of files written."""
    org = [
        {"name": f"dept-{d}", "projects": [f"p-{d}-{p}" for p in range(projects)]} for d in range(departments)
    ]
    _dump(root / "org.yaml", {"departments": org})
    _dump(
        root / "system/defaults.yaml",
        {
            "spec": {
                "imagePullPolicy": "IfNotPresent",
                "environmentVariables": [
                    *_env("SYS", 10),
                    {"name": "HTTP_PROXY", "value": "http://proxy:3128"},
                ],
                "labels": [{"name": "org", "value": "acme"}, {"name": "tier", "value": "standard"}],
                "tolerations": [
                    {"name": "gpu", "key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
                ],
                "compute": {
                    "cpuCoreRequest": 2,
                    "cpuCoreLimit": 16,
                    "cpuMemoryRequest": "4G",
                    "cpuMemoryLimit": "64Gi",
                },
                "nodePools": ["default"],
                "backoffLimit": 6,
            }
        },
    )
    for kind, name, spec in (
        *(
            ("environments", env, {"image": f"nvcr.io/nvidia/{env}:24.05", "command": "run"})
            for env in ("pytorch", "mpi", "tensorflow", "xgboost")
        ),
        ("computes", "gpu-1", {"compute": {"gpuDevicesRequest": 1, "cpuCoreRequest": 8, "cpuCoreLimit": 12}}),
        (
            "computes",
            "gpu-8",
            {"compute": {"gpuDevicesRequest": 8, "cpuCoreRequest": 64, "cpuCoreLimit": 96}},
        ),
        (
            "datasources",
            "datasets",
            {"storage": {"nfs": [{"server": "nfs", "path": "/d", "mountPath": "/d"}]}},
        ),
        ("datasources", "code", {"storage": {"git": [{"repository": "https://git/x", "path": "/src"}]}}),
    ):
        _dump(root / "assets" / kind / f"{name}.yaml", {"meta": {"name": name}, "spec": spec})
    for t in range(SYSTEM_TEMPLATES):
        _dump(root / f"system/templates/sys-{t}.yaml", _template(f"sys-{t}", t))
    for dept in org:
        d = dept["name"]
        _dump(
            root / f"departments/{d}/defaults.yaml",
            {
                "spec": {
                    "labels": [{"name": "tier", "value": d}, {"name": "department", "value": d}],
                    "environmentVariables": [{"name": "SYS_1", "exclude": True}, *_env("DEPT", 5)],
                }
            },
        )
        for t in range(DEPARTMENT_TEMPLATES):
            _dump(root / f"departments/{d}/templates/{d}-t{t}.yaml", _template(f"{d}-t{t}", t + 1))
        for p in dept["projects"]:
            _dump(
                root / f"projects/{p}/defaults.yaml",
                {
                    "spec": {
                        "environmentVariables": _env("PROJ", 4),
                        "labels": [{"name": "project", "value": p}],
                    }
                },
            )
            for t in range(PROJECT_TEMPLATES):
                _dump(root / f"projects/{p}/templates/{p}-t{t}.yaml", _template(f"{p}-t{t}", t + 2))
    return sum(1 for path in root.rglob("*.yaml"))


def change_one_department(root: Path, department: str) -> Path:
    """The pull request: exclude an inherited variable and override a label in one department's defaults."""
    path = root / f"departments/{department}/defaults.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["spec"]["environmentVariables"].append({"name": "HTTP_PROXY", "exclude": True})
    data["spec"]["labels"][0]["value"] = "restricted"
    _dump(path, data)
    return path


def bare_yaml_load(root: Path) -> int:
    count = 0
    for path in sorted(root.rglob("*.yaml")):
        yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)
        count += 1
    return count


def best(repeat: int, func: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        times.append(time.perf_counter() - start)
    return min(times), result


def run_cli(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run the installed CLI; its result and the CPU time (user + system) it used."""
    exe = shutil.which("template-engine") or str(Path(sys.executable).with_name("template-engine"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid"}
    env.update(GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@example.invalid")
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--departments", type=int, default=10)
    parser.add_argument("--projects", type=int, default=50, help="per department")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-diff-") as tmp:
        repo = Path(tmp) / "repo"
        old_root = Path(tmp) / "old"
        files = generate(old_root, args.departments, args.projects)
        shutil.copytree(old_root, repo / "templates")
        _git(repo, "init", "-q", "-b", "main")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "org")
        changed = change_one_department(repo / "templates", f"dept-{min(3, args.departments - 1)}")
        new_root = repo / "templates"

        t_yaml, _ = best(args.repeat, lambda: bare_yaml_load(old_root))
        t_load, org = best(args.repeat, lambda: load_org(old_root))
        all_pairs = pairs(org)
        t_compose, _ = best(1, lambda: [compose(org, p.template, p.view) for p in all_pairs])
        new_org = load_org(new_root)
        t_diff, result = best(args.repeat, lambda: diff_orgs(org, new_org))
        cli = {
            "diff --against FOLDER": ("diff", "--root", "templates", "--against", str(old_root)),
            "diff --against HEAD": ("diff", "--root", "templates", "--against", "HEAD"),
            "impact FILE --against HEAD": ("impact", str(changed.relative_to(repo)), "--root", "templates"),
        }
        timings: dict[str, tuple[float, float]] = {}
        for name, argv in cli.items():
            t_cli, (done, cpu) = best(args.repeat, lambda argv=argv: run_cli(*argv, cwd=repo))  # type: ignore[misc]
            if done.returncode != 1:
                raise SystemExit(f"{name}: exit status {done.returncode}\n{done.stderr}")
            timings[name] = (t_cli, cpu)

    summary = result.summary()
    print(f"org: {len(all_pairs)} pairs, {files} files; the change alters {summary['changed']} pairs")
    print(f"bare YAML load of one tree ({_LOADER.__name__}):   {t_yaml:7.2f} s   (baseline)")
    print(f"load_org of one tree:                     {t_load:7.2f} s   {t_load / t_yaml:5.1f} x baseline")
    print(
        f"compose every pair of one tree:           {t_compose:7.2f} s   "
        f"({t_compose / len(all_pairs) * 1000:.2f} ms per pair)"
    )
    print(
        f"diff_orgs, both trees loaded:             {t_diff:7.2f} s   ({result.composed} compositions, "
        f"the other pairs' inputs are unchanged)"
    )
    for name, (seconds, cpu) in timings.items():
        print(
            f"CLI {name + ':':38}{seconds:7.2f} s   {seconds / (2 * t_yaml):5.1f} x a bare load of both trees"
            f"   (CPU {cpu:.2f} s)"
        )
    print(f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs; best of {args.repeat})")


if __name__ == "__main__":
    main()
