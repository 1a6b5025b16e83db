"""A quantity field holding something that is not a quantity (too long, an exponent beyond range, a number
that is not finite) is an issue of the runnable check, never an exception of ``preview`` or ``check``."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from template_engine import Composition
from template_engine.errors import InputError
from template_engine.merge.plan import SPEC_PLAN
from template_engine.runnable import check

Preview = Callable[..., Composition]
WriteTree = Callable[[Mapping[str, Any]], Path]

WORKER = {"image": "python:3.11", "distributedFramework": "PyTorch", "numWorkers": 2}

HOSTILE = [
    "1e99999999999999999999",  # decimal.Overflow before
    "1e" + "9" * 5000,  # ValueError before (int()'s digit limit)
    "1" * 5000 + "!",  # the pattern that backtracked (kept short: the test must not hang before the fix)
    "1e101",
]


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: v[:12] + f"-{len(v)}")
@pytest.mark.parametrize(
    "field", ["cpuMemoryRequest", "cpuMemoryLimit", "gpuMemoryRequest", "gpuMemoryLimit"]
)
def test_a_value_that_is_not_a_quantity_is_an_issue(field: str, value: str) -> None:
    other = field.replace("Request", "Limit") if "Request" in field else field.replace("Limit", "Request")
    result = check({**WORKER, "compute": {field: value, other: "1Gi"}}, None, False, SPEC_PLAN)
    assert [(i.field, "is not a valid quantity" in i.message) for i in result.issues] == [
        (("compute", field), True)
    ]


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")], ids=["inf", "-inf", "nan"])
def test_a_number_that_is_not_a_quantity_is_an_issue(value: float) -> None:
    result = check({**WORKER, "compute": {"cpuMemoryRequest": value}}, None, False, SPEC_PLAN)
    assert [i.field for i in result.issues] == [("compute", "cpuMemoryRequest")]


def test_preview_and_check_report_an_overflowing_quantity(write_tree: WriteTree, preview: Preview) -> None:
    """A quantity beyond the grammar's bounds is a problem of the file, at its line, as the API refuses it:
    preview stops on it and check fails naming it (it was a runnable issue found only after composing)."""
    job = (
        "meta:\n  name: job\nspec:\n  image: python:3.11\n  distributedFramework: PyTorch\n  numWorkers: 2\n"
        "  compute:\n    cpuMemoryRequest: '1e99999999999999999999'\n    cpuMemoryLimit: 1Gi\n"
    )
    root = write_tree({"projects/vision/templates/job.yaml": job})
    with pytest.raises(InputError) as refused:
        preview(root, "job", "vision")
    (problem,) = refused.value.problems
    assert problem.path == ("spec", "compute", "cpuMemoryRequest")
    assert problem.location is not None and problem.location.line == 8
    result = subprocess.run(
        [sys.executable, "-m", "template_engine", "check", "--root", str(root), "-p", "vision", "-t", "job"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in result.stderr
    assert result.returncode == 1
    assert "invalid value '1e99999999999999999999'" in result.stdout
