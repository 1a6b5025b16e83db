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
from sdk_helpers import install_schemathesis

#: Examples per operation in each mode (schemathesis' GenerationMode, by its value).
EXAMPLES = {"positive": 10, "negative": 6}


def _schemathesis() -> Any:
    """Schemathesis, imported by the test that uses it (about 0.5 s that the other xdist worker need not pay
    collecting this module), its ASGI transport's responses checked against Run:ai's schemas."""
    try:
        import schemathesis
    except ImportError:  # pragma: no cover - a missing test dependency must not pass silently
        pytest.fail(
            "schemathesis is missing: it belongs to the test extra (schemathesis>=4.32)", pytrace=False
        )
    install_schemathesis()
    return schemathesis


def _checks() -> list[Any]:
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    return [
        not_a_server_error,
        status_code_conformance,
        content_type_conformance,
        response_headers_conformance,
        response_schema_conformance,
    ]


def _runner(operation: Any, mode: Any, runs: dict[str, int], failures: list[str], checks: list[Any]) -> Any:
    label = f"{mode.value} {operation.label}"

    @settings(
        max_examples=EXAMPLES[mode.value],
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
            case.call_and_validate(headers=bearer(ADMIN), checks=checks)
        except AssertionError as exc:  # schemathesis' FailureGroup: keep going, report all at the end
            failures.append(f"{label}: {exc}")

    return run


def test_the_server_keeps_to_its_openapi_document(app: Any) -> None:
    schemathesis = _schemathesis()
    checks = _checks()
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 45
    failures: list[str] = []
    runs: dict[str, int] = {}
    for mode in map(schemathesis.GenerationMode, EXAMPLES):
        for operation in operations:
            try:
                _runner(operation, mode, runs, failures, checks)()
            except Unsatisfiable:  # nothing in this operation can be made invalid (GET /health)
                assert mode is schemathesis.GenerationMode.NEGATIVE
    assert not failures, "\n\n".join(failures[:10])
    ran = {label.split(" ", 1)[1] for label in runs if label.startswith("positive")}
    assert len(ran) == len(operations), f"{len(operations) - len(ran)} operations got no positive example"
    print(f"schemathesis: {sum(runs.values())} requests over {len(operations)} operations, both modes")
