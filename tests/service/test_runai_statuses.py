"""Statuses Run:ai declares: every status the service's OpenAPI document declares on an operation that
Run:ai's whole document also has (``runai-openapi-1.224.0.json``; the subset for an operation it lacks) is
one Run:ai declares there, or a row of the service's one table of deviations, with its reason
(:data:`template_engine.service.deviations.DEVIATIONS`).  And where Run:ai declares a status for a case,
the service answers with it.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from conftest import CLUSTER, Ids
from sdk_helpers import service_document

from template_engine.service.deviations import DEVIATIONS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runai"
METHODS = ("get", "put", "post", "patch", "delete")
Operation = tuple[str, str]


def _shape(path: str) -> str:
    """A path with its parameters unnamed: Run:ai's ``{AssetId}`` is the service's ``{assetId}``."""
    return re.sub(r"{[^}]+}", "{}", path)


def _declared(document: dict[str, Any]) -> dict[Operation, set[str]]:
    return {
        (method.upper(), _shape(path)): set(operation["responses"])
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method in METHODS
    }


@cache
def _runai() -> dict[Operation, set[str]]:
    """What Run:ai declares per operation: its whole document, then the subset for what it lacks."""
    whole = json.loads((FIXTURES / "runai-openapi-1.224.0.json").read_text())
    subset = json.loads((FIXTURES / "runai-openapi-subset.json").read_text())
    return _declared(subset) | _declared(whole)


@cache
def _ours() -> dict[Operation, set[str]]:
    """The service's operations Run:ai also has, by the service's own path, with the statuses it declares."""
    runai = _runai()
    out: dict[Operation, set[str]] = {}
    for path, operations in service_document()["paths"].items():
        for method, operation in operations.items():
            if method in METHODS and (method.upper(), _shape(path)) in runai:
                out[(method.upper(), path)] = set(operation["responses"])
    return out


def test_every_status_beyond_runais_is_a_deviation_with_a_reason() -> None:
    runai = _runai()
    beyond = {}
    for (method, path), statuses in sorted(_ours().items()):
        extra = statuses - runai[(method, _shape(path))]
        if extra:
            beyond[(method, path)] = extra
    assert beyond == {key: set(row) for key, row in DEVIATIONS.items()}
    for key, row in DEVIATIONS.items():
        for status, reason in row.items():
            assert len(reason) > 20, (key, status)


def test_the_check_sees_the_operations_it_should() -> None:
    """The comparison covers the families of the issue, and Run:ai's declarations are read as they are."""
    ours = _ours()
    for operation in [
        ("GET", "/api/v1/workload-templates"),
        ("POST", "/api/v1/workload-templates/distributed"),
        ("POST", "/api/v1/workloads/distributed"),
        ("PATCH", "/api/v2/policy/distributed"),
        ("GET", "/api/v1/org-unit/projects"),
        ("POST", "/api/v1/asset/environment"),
    ]:
        assert operation in ours, operation
    assert "/api/v1/defaults/system" not in {path for _, path in ours}  # the service's own: not compared
    assert _runai()[("POST", "/api/v1/workload-templates/distributed")] == {
        "202", "400", "401", "403", "500", "503"
    }  # fmt: skip
    assert "409" not in _runai()[("POST", "/api/v1/workloads/distributed")]
    assert "409" in _runai()[("GET", "/api/v1/workload-templates/name-availability")]


def _status(client: Any, method: str, path: str, **kwargs: Any) -> int:
    status: int = client.request(method, path, **kwargs).status_code
    return status


@pytest.mark.parametrize(
    "params", [{"limit": 0}, {"sortBy": "bogus"}, {"offset": -1}], ids=["limit=0", "sortBy", "offset"]
)
def test_an_unreadable_list_query_is_a_declared_deviation(client: Any, params: dict[str, Any]) -> None:
    for path in ("/api/v1/workload-templates", "/api/v1/workload-templates/distributed", "/api/v1/workloads"):
        assert _status(client, "GET", path, params=params) == 400, (path, params)
        assert "400" in DEVIATIONS[("GET", path)] and "400" not in _runai()[("GET", path)]


def test_a_taken_name_answers_what_runai_declares(client: Any, ids: Ids) -> None:
    templates = "/api/v1/workload-templates/distributed"
    body = {"meta": {"name": "twice", "scopeType": "system"}, "spec": {"image": "a:1"}}
    assert _status(client, "POST", templates, json=body) == 202
    assert _status(client, "POST", templates, json=body) == 400  # Run:ai declares 400 here, not 409
    free = {"templateName": "twice", "scopeType": "system"}
    assert _status(client, "GET", "/api/v1/workload-templates/name-availability", params=free) == 409
    workloads = "/api/v1/workloads/distributed"
    submission = {
        "name": "twice",
        "projectId": ids.projects["vision"],
        "clusterId": CLUSTER,
        "spec": {"image": "a:1", "distributedFramework": "MPI"},
    }
    assert _status(client, "POST", workloads, json=submission) == 202
    assert _status(client, "POST", workloads, json=submission) == 400  # a live workload's name
