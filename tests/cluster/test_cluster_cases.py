"""A case folder per framework and topology (``tests/cluster_cases/``): the job the cluster runs.

Each folder holds ``templates/`` (a tiny org: one project, its defaults and one template ``job``) and
``expect.yaml``::

    description: what the case shows
    preview: {project, template}
    expect:
      kind                 the job object's kind
      container            the name of every replica's (one) container: the operator's default container
      replicas             {replica type: replicas}, exactly the job's replica types
      images               {replica type: image}
      runnable             whether compose() says runnable
      checks               the ``check`` of each of compose()'s runnable issues, in order
      runLauncherAsWorker  (MPI) whether the launcher is one of the workers

Every case's objects validate with the independent validators (``independent_check.py``), runnable or not;
the engine's own checks (``validity.manifests_problems``) find nothing in a runnable case.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from independent_check import REPLICAS_KEY, independent_errors

from template_engine import Composition
from template_engine.cluster.validity import manifests_problems

CASES = Path(__file__).resolve().parents[1] / "cluster_cases"
CASE_DIRS = sorted(p for p in CASES.iterdir() if (p / "expect.yaml").is_file())
FRAMEWORKS = ("pytorch", "tf", "xgboost", "jax", "mpi")
TOPOLOGIES = ("same-master", "separate-master", "workers-only")

Preview = Callable[..., Composition]


def test_a_case_per_framework_and_topology() -> None:
    assert [p.name for p in CASE_DIRS] == sorted(f"{f}-{t}" for f in FRAMEWORKS for t in TOPOLOGIES)


@pytest.mark.parametrize("case_dir", CASE_DIRS, ids=lambda p: p.name)
def test_cluster_case(preview: Preview, case_dir: Path) -> None:
    case: dict[str, Any] = yaml.safe_load((case_dir / "expect.yaml").read_text(encoding="utf-8"))
    assert set(case) == {"description", "preview", "expect"}
    expect = case["expect"]
    composition = preview(case_dir / "templates", case["preview"]["template"], case["preview"]["project"])
    runnable = composition.runnable
    assert runnable.is_runnable is expect["runnable"], [i.message for i in runnable.issues]
    assert [issue.check for issue in runnable.issues] == expect["checks"]
    manifests = composition.manifests
    assert manifests is not None
    job = manifests.objects[0]
    assert job["kind"] == expect["kind"]
    replicas = job["spec"][REPLICAS_KEY[job["kind"]]]
    assert {rtype: r["replicas"] for rtype, r in replicas.items()} == expect["replicas"]
    for rtype, replica in replicas.items():
        containers = replica["template"]["spec"]["containers"]
        assert [c["name"] for c in containers] == [expect["container"]]
        assert containers[0]["image"] == expect["images"][rtype]
    if "runLauncherAsWorker" in expect:
        assert job["spec"].get("runLauncherAsWorker", False) is expect["runLauncherAsWorker"]
    assert independent_errors(manifests.objects) == []
    if expect["runnable"]:
        assert manifests_problems(manifests.objects) == []
