"""A department whose defaults set ``masterSpecSameAsWorker: false`` makes every template without a master
section workers only, system templates included: each such composition warns, naming the defaults file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import Composition

Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], Path]

RESEARCH_FALSE = "masterSpecSameAsWorker: false\nspec:\n  labels:\n  - name: tier\n    value: research\n"
SYSTEM_JOB = (
    "meta:\n  name: ddp\nspec:\n  image: python:3.11\n  distributedFramework: PyTorch\n  numWorkers: 2\n"
)


def workers_only_warnings(composition: Composition) -> list[str]:
    return [w.message for w in composition.runnable.warnings if w.field == "masterSpecSameAsWorker"]


def test_a_department_that_turns_templates_workers_only_is_a_warning(
    write_tree: WriteTree, preview: Preview
) -> None:
    root = write_tree(
        {"departments/research/defaults.yaml": RESEARCH_FALSE, "system/templates/ddp.yaml": SYSTEM_JOB}
    )
    composition = preview(root, "ddp", "vision")
    assert composition.combined_master_spec is None
    (message,) = workers_only_warnings(composition)
    assert "department research defaults" in message
    assert "template 'ddp' has no master section" in message
    assert message.endswith("[departments/research/defaults.yaml:1]")
    (warning,) = [w for w in composition.runnable.warnings if w.field == "masterSpecSameAsWorker"]
    assert warning.replica == "master"
    # the other department is not concerned
    assert workers_only_warnings(preview(root, "ddp", "recsys")) == []


@pytest.mark.parametrize(
    "files",
    [
        # the template decides
        {"system/templates/ddp.yaml": SYSTEM_JOB + "masterSpecSameAsWorker: false\n"},
        # the template has a master of its own
        {"system/templates/ddp.yaml": SYSTEM_JOB + "master:\n  spec:\n    image: launcher:1\n"},
        # the project's defaults decide (false on purpose, or back to true)
        {"projects/vision/defaults.yaml": "masterSpecSameAsWorker: false\n"},
        {"projects/vision/defaults.yaml": "masterSpecSameAsWorker: true\n"},
    ],
    ids=["template-decides", "template-has-master", "project-decides-false", "project-decides-true"],
)
def test_no_warning_when_something_nearer_decides(
    write_tree: WriteTree, preview: Preview, files: dict[str, str]
) -> None:
    base = {"departments/research/defaults.yaml": RESEARCH_FALSE, "system/templates/ddp.yaml": SYSTEM_JOB}
    composition = preview(write_tree({**base, **files}), "ddp", "vision")
    assert workers_only_warnings(composition) == []


def test_check_prints_the_warning(write_tree: WriteTree) -> None:
    root = write_tree(
        {"departments/research/defaults.yaml": RESEARCH_FALSE, "system/templates/ddp.yaml": SYSTEM_JOB}
    )
    result = subprocess.run(
        [sys.executable, "-m", "template_engine", "check", "--root", str(root), "-p", "vision", "-t", "ddp"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (
        "warning: master masterSpecSameAsWorker: set to false by department research defaults"
        in result.stdout
    )
