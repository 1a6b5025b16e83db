"""The example org with one system template of each one-role kind (``kind:`` files, as a templates folder
writes them), for the tests of workloads of every kind: the service reads them by ``db import`` (its seed).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from template_engine.kinds import KINDS, WorkloadKind

EXAMPLE = Path(__file__).resolve().parents[2] / "templates"

#: The spec of each kind's template: what its runnable needs (an image; an inference's serving port).
SPECS: dict[str, str] = {
    "training": "  image: python:3.11\n  completions: 2\n  parallelism: 1\n",
    "workspace": "  image: jupyter/base-notebook:2024-01\n",
    "inference": "  image: vllm/vllm-openai:0.6\n  servingPort:\n    container: 8000\n",
}
#: The one-role kinds that have workloads (trainings, workspaces, inferences).
ONE_ROLE = tuple(k for k in KINDS if k.workload_segment is not None and not k.is_distributed)


def template_name(kind: WorkloadKind) -> str:
    return f"basic-{kind.name}"


def kinds_org(root: Path) -> Path:
    """A copy of the example org under ``root`` with a system template ``basic-<kind>`` of each one-role
    kind."""
    org = root / "org"
    shutil.copytree(EXAMPLE, org)
    for kind in ONE_ROLE:
        text = f"kind: {kind.name}\nmeta:\n  name: {template_name(kind)}\nspec:\n{SPECS[kind.name]}"
        (org / "system" / "templates" / f"{template_name(kind)}.yaml").write_text(text)
    return org
