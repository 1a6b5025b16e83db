"""Schemathesis against the server's own OpenAPI document, in process: no 5xx, and every response (status
code, content type, headers, body) is one the document describes.

Every operation gets schema-valid (positive) and schema-violating (negative) requests, with a system admin's
token: a fixed number of examples each (:data:`EXAMPLES`), derandomized, with no deadline and no time
budget, so the same requests are sent on every run and the outcome does not depend on the machine's speed.
Schemathesis is driven directly (one hypothesis run per operation and mode) rather than through its pytest
plugin, so that every operation is covered in both modes.
"""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ADMIN, bearer
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable

try:
    import schemathesis
    from schemathesis import GenerationMode
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )
except ImportError:  # pragma: no cover - a missing test dependency must not pass silently
    pytest.fail("schemathesis is missing: it belongs to the test extra (schemathesis>=4.32)", pytrace=False)

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
EXAMPLES = {GenerationMode.POSITIVE: 10, GenerationMode.NEGATIVE: 6}


def _runner(operation: Any, mode: GenerationMode, runs: dict[str, int], failures: list[str]) -> Any:
    label = f"{mode.value} {operation.label}"

    @settings(
        max_examples=EXAMPLES[mode],
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def run(case: Any) -> None:
        runs[label] = runs.get(label, 0) + 1
        try:
            case.call_and_validate(headers=bearer(ADMIN), checks=CHECKS)
        except AssertionError as exc:  # schemathesis' FailureGroup: keep going, report all at the end
            failures.append(f"{label}: {exc}")

    return run


def test_the_server_keeps_to_its_openapi_document(app: Any) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 45
    failures: list[str] = []
    runs: dict[str, int] = {}
    for mode in EXAMPLES:
        for operation in operations:
            try:
                _runner(operation, mode, runs, failures)()
            except Unsatisfiable:  # nothing in this operation can be made invalid (GET /health)
                assert mode is GenerationMode.NEGATIVE
    assert not failures, "\n\n".join(failures[:10])
    ran = {label.split(" ", 1)[1] for label in runs if label.startswith("positive")}
    assert len(ran) == len(operations), f"{len(operations) - len(ran)} operations got no positive example"
    print(f"schemathesis: {sum(runs.values())} requests over {len(operations)} operations, both modes")
