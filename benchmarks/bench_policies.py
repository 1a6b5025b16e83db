"""What evaluating policies adds to ``check`` over the benchmark org (issue: at most 25 %).

The generated org (``gen_org.py``, 400 pairs by default) is written twice: once as it is, once with a policy
at the system scope and at every department that rules the fields the generator writes (environment variables
locked and not addable, labels' instances, numWorkers bounds, required image, a ``defaultFrom``) and imposes a
data source.  Both are checked by ``template-engine check --output json`` as separate processes, interleaved
(A, B, A, B, ...), and the ratio of the medians and of the minimums is printed; the policy org must produce
compliance issues (so the rules really ran).

    python benchmarks/bench_policies.py [--departments 4 --projects 10 --templates 10] [--repeat 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_org  # a sibling script, found through the sys.path line above

TARGET = 1.25
EXE = str(Path(sys.executable).with_name("template-engine"))

SYSTEM_POLICY = {
    "rules": {
        "worker": {
            "image": {"required": True},
            "numWorkers": {"min": 1, "max": 64},
            "compute": {"cpuCoreLimit": {"defaultFrom": {"field": "cpuCoreRequest", "factor": 2}}},
            "labels": {"instances": {"canAdd": True}},
        }
    },
    "imposedAssets": {"worker": ["shared"]},
}
DATASOURCE = {
    "meta": {"name": "shared"},
    "spec": {"storage": {"pvc": [{"claimName": "shared", "path": "/shared"}]}},
}


def _department_policy(department: str, locked: list[str]) -> dict[str, object]:
    return {"rules": {"worker": {"environmentVariables": {"instances": {"locked": locked}}}}}


def write(root: Path, org: gen_org.GeneratedOrg, policies: bool) -> None:
    gen_org.write_org(org, root)
    if not policies:
        return
    (root / "system" / "policy.yaml").write_text(yaml.safe_dump(SYSTEM_POLICY), encoding="utf-8")
    (root / "assets" / "datasources").mkdir(parents=True, exist_ok=True)
    (root / "assets" / "datasources" / "shared.yaml").write_text(yaml.safe_dump(DATASOURCE), encoding="utf-8")
    system_env = [name for name, value in org.system.env if value is not None]
    for department in org.departments:
        policy = _department_policy(department, system_env[:5])
        path = root / "departments" / department / "policy.yaml"
        path.write_text(yaml.safe_dump(policy), encoding="utf-8")


def run_check(root: Path) -> tuple[float, dict[str, object]]:
    start = time.perf_counter()
    done = subprocess.run(
        [EXE, "check", "--root", str(root), "--output", "json"], capture_output=True, text=True
    )
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"check failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return elapsed, json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    default = gen_org.Shape()
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--departments", type=int, default=default.departments)
    parser.add_argument("--projects", type=int, default=default.projects, help="per department")
    parser.add_argument("--templates", type=int, default=default.templates, help="per project")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    shape = gen_org.Shape(departments=args.departments, projects=args.projects, templates=args.templates)
    org = gen_org.generate(shape)
    with tempfile.TemporaryDirectory() as tmp:
        plain, ruled = Path(tmp, "plain"), Path(tmp, "ruled")
        write(plain, org, policies=False)
        write(ruled, org, policies=True)
        _, without = run_check(plain)  # warm the file cache and the interpreter's .pyc files
        _, with_rules = run_check(ruled)
        compliance = sum(
            1
            for result in with_rules["results"]  # type: ignore[union-attr]
            for issue in result["issues"]
            if issue.get("rule")
        )
        a_times, b_times = [], []
        for _ in range(args.repeat):
            a_times.append(run_check(plain)[0])
            b_times.append(run_check(ruled)[0])
    pairs = without["total"]
    median = statistics.median(b_times) / statistics.median(a_times)
    best = min(b_times) / min(a_times)
    print(f"pairs: {pairs}; compliance issues with policies: {compliance}")
    print(f"check without policies: median {statistics.median(a_times):.3f} s, min {min(a_times):.3f} s")
    print(f"check with policies:    median {statistics.median(b_times):.3f} s, min {min(b_times):.3f} s")
    print(f"ratio with/without: median {median:.3f}, min {best:.3f} (target <= {TARGET})")
    return 0 if min(median, best) <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
