"""A department (or the system) whose defaults set ``masterSpecSameAsWorker: false`` makes every template
without a master section workers only, system templates included: each such composition warns, naming the
defaults file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import Composition, Location
from template_engine.errors import WarningKind

Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], Path]

RESEARCH_FALSE = "masterSpecSameAsWorker: false\nspec:\n  labels:\n  - name: tier\n    value: research\n"
SYSTEM_JOB = (
    "meta:\n  name: ddp\nspec:\n  image: python:3.11\n  distributedFramework: PyTorch\n  numWorkers: 2\n"
)


def workers_only_warnings(composition: Composition) -> list[str]:
    return [
        w.render() for w in composition.runnable.warnings if w.kind is WarningKind.WORKERS_ONLY_BY_DEPARTMENT
    ]


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
    (warning,) = [w for w in composition.runnable.warnings if w.field == ("masterSpecSameAsWorker",)]
    assert warning.kind is WarningKind.WORKERS_ONLY_BY_DEPARTMENT
    assert warning.replica == "master"
    assert warning.location == Location(
        "departments/research/defaults.yaml", 1, 1, "department research defaults"
    )
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


# -- the system's defaults ----------------------------------------------------------------------------------

SYSTEM_FALSE = "# org-wide\nmasterSpecSameAsWorker: false\nspec:\n  imagePullPolicy: IfNotPresent\n"


@pytest.mark.parametrize(
    ("rel", "template", "project"),
    [
        ("system/templates/ddp.yaml", "ddp", "vision"),
        ("departments/research/templates/ddp.yaml", "ddp", "vision"),
        ("projects/vision/templates/ddp.yaml", "ddp", "vision"),
    ],
    ids=["system-template", "department-template", "project-template"],
)
def test_system_defaults_that_turn_templates_workers_only_are_a_warning(
    write_tree: WriteTree, preview: Preview, rel: str, template: str, project: str
) -> None:
    root = write_tree({"system/defaults.yaml": SYSTEM_FALSE, rel: SYSTEM_JOB})
    composition = preview(root, template, project)
    assert composition.combined_master_spec is None
    (message,) = workers_only_warnings(composition)
    assert "set to false by system defaults" in message
    assert "template 'ddp' has no master section" in message
    assert message.endswith("[system/defaults.yaml:2]")
    (warning,) = [w for w in composition.runnable.warnings if w.field == ("masterSpecSameAsWorker",)]
    assert warning.replica == "master"
    assert warning.location == Location("system/defaults.yaml", 2, 1, "system defaults")


@pytest.mark.parametrize(
    "files",
    [
        {"system/templates/ddp.yaml": SYSTEM_JOB + "masterSpecSameAsWorker: false\n"},
        {"system/templates/ddp.yaml": SYSTEM_JOB + "master:\n  spec:\n    image: launcher:1\n"},
        {"projects/vision/defaults.yaml": "masterSpecSameAsWorker: false\n"},
        {"projects/vision/defaults.yaml": "masterSpecSameAsWorker: true\n"},
        # the department's defaults say true again: the system's false decides nothing
        {"departments/research/defaults.yaml": "masterSpecSameAsWorker: true\n"},
    ],
    ids=[
        "template-decides",
        "template-has-master",
        "project-decides-false",
        "project-decides-true",
        "department-decides-true",
    ],
)
def test_no_system_warning_when_something_nearer_decides(
    write_tree: WriteTree, preview: Preview, files: dict[str, str]
) -> None:
    base = {"system/defaults.yaml": SYSTEM_FALSE, "system/templates/ddp.yaml": SYSTEM_JOB}
    composition = preview(write_tree({**base, **files}), "ddp", "vision")
    assert workers_only_warnings(composition) == []


def test_the_department_is_named_when_both_it_and_the_system_say_false(
    write_tree: WriteTree, preview: Preview
) -> None:
    root = write_tree(
        {
            "system/defaults.yaml": SYSTEM_FALSE,
            "departments/research/defaults.yaml": RESEARCH_FALSE,
            "system/templates/ddp.yaml": SYSTEM_JOB,
        }
    )
    (message,) = workers_only_warnings(preview(root, "ddp", "vision"))
    assert "set to false by department research defaults" in message
    (message,) = workers_only_warnings(preview(root, "ddp", "recsys"))
    assert "set to false by system defaults" in message
