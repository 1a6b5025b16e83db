"""Integers within Run:ai's bounds, at the model: every door (a template file, ``db import``, the CLI, the
API) validates with it, so a 400-digit ``numWorkers`` is refused everywhere with its field and line.

The bounds are read from Run:ai's OpenAPI document (the vendored subset): every integer of the distributed
spec, ``format: int32``/``int64`` and its ``minimum``/``maximum``; an integer Run:ai gives no format is an
int32 (docs/decisions.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from template_engine import load_org
from template_engine.models.spec import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, WorkerSpec

RUNAI = Path(__file__).resolve().parent / "fixtures" / "runai" / "runai-openapi-subset.json"
SCHEMAS: dict[str, Any] = json.loads(RUNAI.read_text())["components"]["schemas"]
BOUNDS = {"int32": (INT32_MIN, INT32_MAX), "int64": (INT64_MIN, INT64_MAX), None: (INT32_MIN, INT32_MAX)}
#: Where the model is bounded otherwise, and why: a port is 1 to 65535 (Run:ai says so of ``ports``, not of
#: ``exposedUrls``); Kubernetes' ``tolerationSeconds`` is an int64 (Run:ai gives no format).
OTHERWISE: dict[tuple[str, ...], tuple[int, int]] = {
    ("exposedUrls", "[]", "container"): (1, 65535),
    ("tolerations", "[]", "seconds"): (1, INT64_MAX),
}
#: A path is a tuple of field names; ``[]`` stands for "an item of this list".
Field = tuple[str, ...]


def _integers(schema: Mapping[str, Any], path: Field, depth: int = 0) -> Iterator[tuple[Field, Any]]:
    """Every integer of a Run:ai schema, with its path, through ``$ref``, ``allOf`` and list items."""
    if depth > 12:
        return
    if "$ref" in schema:
        yield from _integers(SCHEMAS[schema["$ref"].rsplit("/", 1)[-1]], path, depth + 1)
        return
    for part in schema.get("allOf", ()):
        yield from _integers(part, path, depth + 1)
    if schema.get("type") == "integer":
        yield path, schema
    for name, sub in schema.get("properties", {}).items():
        yield from _integers(sub, (*path, name), depth + 1)
    if "items" in schema:
        yield from _integers(schema["items"], (*path, "[]"), depth + 1)


def _document(path: Field, value: int) -> dict[str, Any]:
    out: Any = value
    for part in reversed(path):
        out = [out] if part == "[]" else {part: out}
    assert isinstance(out, dict)
    return out


def _refused(path: Field, value: int) -> list[str]:
    try:
        WorkerSpec.model_validate(_document(path, value))
    except ValidationError as exc:
        return [str(e["type"]) for e in exc.errors()]
    return []


INTEGERS = sorted({path: schema for path, schema in _integers(SCHEMAS["DistributedSpecSpec"], ())}.items())


def test_the_spec_has_integers_to_check() -> None:
    names = {path[-1] for path, _ in INTEGERS}
    assert {"numWorkers", "minReplicas", "maxReplicas", "gpuDevicesRequest", "container", "runAsUid"} <= names


@pytest.mark.parametrize(("path", "schema"), INTEGERS, ids=[".".join(p) for p, _ in INTEGERS])
def test_every_integer_of_the_spec_keeps_run_ai_s_bounds(path: Field, schema: Mapping[str, Any]) -> None:
    low, high = BOUNDS[schema.get("format")]
    low, high = OTHERWISE.get(
        path, (max(low, schema.get("minimum", low)), min(high, schema.get("maximum", high)))
    )
    if "extra_forbidden" in _refused(path, low):
        pytest.fail(f"{'.'.join(path)}: Run:ai's field is not in the model")
    assert _refused(path, low) == [] and _refused(path, high) == []
    assert _refused(path, high + 1) == ["less_than_equal"]
    assert _refused(path, low - 1) == ["greater_than_equal"]
    assert _refused(path, int("9" * 400)) == ["less_than_equal"]


BIG = "9" * 400


def test_a_400_digit_number_of_workers_in_a_file_is_a_problem_at_its_line(
    write_tree: Callable[[Mapping[str, Any]], Path],
) -> None:
    body = (
        f"meta:\n  name: job\nspec:\n  image: x\n  numWorkers: {BIG}\n"
        f"  ports:\n  - container: 80\n    external: -{BIG}\n"
    )
    root = write_tree({"projects/vision/templates/job.yaml": body})
    problems = load_org(root).broken["projects/vision/templates/job.yaml"]
    found = {(p.path, p.location.line if p.location else None, p.message, p.expected) for p in problems}
    assert found == {
        (
            ("spec", "numWorkers"),
            5,
            "invalid value a 400-digit integer",
            "Input should be less than or equal to 2147483647",
        ),
        (
            ("spec", "ports", 0, "external"),
            8,
            "invalid value -a 400-digit integer",
            "Input should be greater than or equal to -2147483648",
        ),
    }
    result = subprocess.run(
        [sys.executable, "-m", "template_engine", "validate", "--root", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert (
        "at: spec.numWorkers\n    in: projects/vision/templates/job.yaml:5:" in result.stdout + result.stderr
    )
