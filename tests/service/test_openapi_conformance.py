"""Every response the suite produces conforms to Run:ai's real schemas, and every status is declared.

Importing :mod:`sdk_helpers` installs its conformance check on Starlette's TestClient, httpx and the SDK's
REST client, so every response of the service suite (``pytest tests/service``, or the whole suite) is
validated as it is received: a body that does not fit Run:ai's schema for its operation and status, an
error body that is not Run:ai's ``Error``, or a status the service's OpenAPI document does not declare fails
the test that received it.  The tests here check the check, drive every Run:ai operation through the
in-process client, and pin the status codes the service answers beyond the ones Run:ai declares
(docs/http-api.md lists them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import CLUSTER, Ids
from sdk_helpers import (
    CONFORMANCE,
    SDK_MODELS,
    install,
    real_schemas,
    service_document,
)

install()

T = "/api/v1/workload-templates/distributed"
W = "/api/v1/workloads/distributed"
P = "/api/v2/policy/distributed"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "http-api.md"
UUID = "00000000-0000-4000-8000-000000000000"

#: What Run:ai declares for the SDK operations the subset lacks (runapy 1.224.0's OpenAPI document).
DECLARED_ELSEWHERE: dict[tuple[str, str], set[str]] = {
    ("GET", "/api/v1/workload-templates"): {"200", "401", "403", "500", "503"},
    ("GET", "/api/v1/workload-templates/{templateId}"): {"200", "401", "403", "404", "500", "503"},
    ("GET", "/api/v1/workload-templates/count"): {"200", "401", "403", "500", "503"},
    ("GET", "/api/v1/workload-templates/name-availability"): {"204", "401", "403", "409", "503"},
    ("GET", "/api/v1/workloads"): {"200", "401", "403", "500", "503"},
    ("GET", "/api/v1/workloads/count"): {"200", "401", "403", "500", "503"},
    ("GET", "/api/v1/workloads/{workloadId}"): {"200", "401", "403", "404", "500", "503"},
    ("POST", "/api/v1/token"): {"200", "400", "500", "503"},
}

#: The statuses the service answers that Run:ai's operation does not declare, each declared in the service's
#: OpenAPI document and listed in docs/http-api.md ("Status codes beyond Run:ai's").
EXTRA_STATUSES: dict[tuple[str, str], set[str]] = {
    ("GET", T): {"400", "413"},
    ("POST", T): {"409", "413"},
    ("GET", f"{T}/{{templateId}}"): {"400", "413"},
    ("PUT", f"{T}/{{templateId}}"): {"409", "412", "413"},
    ("PATCH", f"{T}/{{templateId}}"): {"409", "412", "413"},
    ("DELETE", f"{T}/{{templateId}}"): {"400", "412", "413"},
    ("POST", W): {"409", "413", "500"},
    ("GET", f"{W}/{{workloadId}}"): {"400", "413"},
    ("DELETE", f"{W}/{{workloadId}}"): {"400", "413"},
    ("POST", f"{W}/{{workloadId}}/suspend"): {"400", "409", "413"},
    ("POST", f"{W}/{{workloadId}}/resume"): {"400", "409", "413"},
    ("GET", "/api/v1/workload-templates"): {"400", "413"},
    ("GET", "/api/v1/workload-templates/{templateId}"): {"400", "413"},
    ("GET", "/api/v1/workload-templates/count"): {"400", "413"},
    ("GET", "/api/v1/workload-templates/name-availability"): {"400", "413", "500"},
    ("GET", "/api/v1/workloads"): {"400", "413"},
    ("GET", "/api/v1/workloads/count"): {"400", "413"},
    ("GET", "/api/v1/workloads/{workloadId}"): {"400", "413"},
    ("POST", "/api/v1/token"): {"413"},
    ("GET", P): {"413", "500"},
    ("PUT", P): {"409", "412", "413", "500"},
    ("PATCH", P): {"409", "412", "413", "500"},
    ("DELETE", P): {"409", "412", "413", "500"},
}


def _problems(method: str, path: str, status: int, body: Any) -> list[str]:
    return CONFORMANCE.problems(method, path, status, "application/json", json.dumps(body).encode())


def test_the_check_catches_what_the_sdk_and_the_schemas_refuse() -> None:
    meta = {
        "id": UUID,
        "name": "x",
        "workloadType": "Distributed",
        "scopeType": "system",
        "scopeId": "1",
        "createdBy": "a",
        "createdAt": "2024-01-01T00:00:00.000Z",
    }
    assert _problems("GET", f"{T}/{UUID}", 200, {"meta": meta}) == []
    wrong = _problems("GET", f"{T}/{UUID}", 200, {"meta": {**meta, "projectId": "5", "scopeId": None}})
    assert any("meta/projectId" in p for p in wrong) and any("meta/scopeId" in p for p in wrong)
    listed = _problems(
        "GET", T, 200, {"entries": [], "pagination": {"limit": 1, "offset": 0, "nextOffset": None}}
    )
    assert any("nextOffset" in p for p in listed)
    assert _problems("GET", T, 200, {"entries": [], "pagination": {"limit": 1, "offset": 0}}) == []
    assert any("message" in p for p in _problems("GET", T, 403, {"code": 403}))
    workload = {"workloads": [{"id": UUID, "name": "x"}]}
    # Checked by Run:ai's whole document with WHOLE_DOCUMENT, by the SDK's GetWorkloads200Response without it.
    missing = _problems("GET", "/api/v1/workloads", 200, workload)
    assert missing and all(p.startswith("workloads") and "required" in p for p in missing), missing
    assert any("does not declare 418" in p for p in _problems("GET", T, 418, {"code": 418, "message": "x"}))
    with pytest.raises(AssertionError, match="does not conform"):
        CONFORMANCE.check("GET", T, 403, "application/json", b'{"code": 403}')


def _sdk_operations() -> set[tuple[str, str]]:
    subset = {
        (method.upper(), path)
        for path, operations in real_schemas().doc["paths"].items()
        for method in operations
    }
    return subset | set(DECLARED_ELSEWHERE)


def test_every_run_ai_operation_answers_what_run_ai_declares_or_a_documented_better_code() -> None:
    ours = service_document()["paths"]
    found: dict[tuple[str, str], set[str]] = {}
    for method, path in sorted(_sdk_operations()):
        assert path in ours and method.lower() in ours[path], f"{method} {path} is not served"
        real = DECLARED_ELSEWHERE.get((method, path))
        if real is None:
            real = set(real_schemas().doc["paths"][path][method.lower()]["responses"])
        extra = set(ours[path][method.lower()]["responses"]) - real
        if extra:
            found[(method, path)] = extra
    assert found == EXTRA_STATUSES
    documented = _documented_statuses()
    assert documented == EXTRA_STATUSES, (
        "docs/http-api.md lists other status differences than the service has"
    )


def _documented_statuses() -> dict[tuple[str, str], set[str]]:
    text = DOCS.read_text()
    section = text[text.index("### Status codes beyond Run:ai's") :]
    section = section[: section.index("\n## ")]
    out: dict[tuple[str, str], set[str]] = {}
    for line in section.splitlines():
        m = re.match(r"^\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` \| ([0-9, ]+) \|", line)
        if m:
            out[(m.group(1), m.group(2))] = {c.strip() for c in m.group(3).split(",")}
    return out


def test_the_operations_the_subset_has_no_schema_for() -> None:
    """What docs/http-api.md says is checked with the SDK's models instead: the subset has none of them."""
    for method, path in SDK_MODELS:
        concrete = path.replace("{templateId}", UUID).replace("{workloadId}", UUID)
        assert real_schemas().operation(method, concrete) is None, (method, path)


def _kinds(before: dict[tuple[str, str, str], int]) -> set[tuple[str, str, str]]:
    return {key for key, count in CONFORMANCE.checked.items() if count > before.get(key, 0)}


def test_every_run_ai_operation_is_schema_checked_through_the_test_client(client: Any, ids: Ids) -> None:
    """Success and error answers of every Run:ai operation, in process; each is checked as it arrives."""
    before = dict(CONFORMANCE.checked)
    vision = ids.projects["vision"]
    created = client.post(
        T, json={"meta": {"name": "conform", "scopeType": "tenant"}, "spec": {"image": "a:1"}}
    )
    assert created.status_code == 202
    template_id = created.json()["meta"]["id"]
    for params in ({}, {"limit": 1}, {"complyToProject": vision, "complyToReplicaType": "Worker"}):
        assert client.get(T, params=params).status_code == 200
    assert client.get("/api/v1/workload-templates", params={"complyToProject": vision}).status_code == 200
    assert client.get(f"{T}/{template_id}").status_code == 200
    assert client.get(f"/api/v1/workload-templates/{template_id}").status_code == 200
    assert client.get("/api/v1/workload-templates/count").status_code == 200
    assert (
        client.put(
            f"{T}/{template_id}", json={"meta": {"name": "conform"}, "spec": {"args": "x"}}
        ).status_code
        == 200
    )
    assert client.patch(f"{T}/{template_id}", json={"spec": {"image": "b:1"}}).status_code == 200
    bad = client.post(
        T, json={"meta": {"name": "conform", "scopeType": "cluster"}, "spec": {"numWorkers": 0}}
    )
    assert bad.status_code == 400
    assert client.post(T, json={"meta": {"name": "conform", "scopeType": "system"}}).status_code == 400
    body = {"name": "conform", "projectId": vision, "clusterId": CLUSTER, "templateId": template_id}
    body["spec"] = {"distributedFramework": "PyTorch"}
    workload = client.post(W, json=body)
    assert workload.status_code == 202, workload.json()
    workload_id = workload.json()["workloadId"]
    assert client.post(W, json={**body, "spec": {"numWorkers": "2"}}).status_code == 400
    for url in (
        f"{W}/{workload_id}",
        f"/api/v1/workloads/{workload_id}",
        "/api/v1/workloads",
        "/api/v1/workloads/count",
    ):
        assert client.get(url).status_code == 200
    for action in ("suspend", "resume"):
        assert client.post(f"{W}/{workload_id}/{action}").status_code == 202
    assert client.delete(f"{W}/{workload_id}").status_code == 202
    assert client.post(f"{W}/{workload_id}/resume").status_code == 409
    assert client.get(f"{W}/{UUID}").status_code == 404
    research = {"scope": "department", "departmentId": ids.departments["research"]}
    assert client.get(P, params=research).status_code == 200
    research = {"name": "research", **research}
    assert client.get(P, params={"scope": "project", "projectId": "9999"}).status_code == 404
    rules = {"rules": {"worker": {"tty": {"canEdit": False}}}}
    assert client.put(P, json={"meta": research, "policy": rules}).status_code == 200
    assert client.patch(P, json={"meta": research, "reset": ["rules.worker.tty"]}).status_code == 200
    assert client.put(P, json={"meta": {"scope": "cluster"}}).status_code == 400
    assert client.delete(P, params={"scope": "project", "projectId": vision}).status_code == 204
    assert client.delete(f"{T}/{template_id}").status_code == 204
    assert client.get(f"{T}/{template_id}").status_code == 404
    checked = _kinds(before)
    for method, path in sorted(_sdk_operations()):
        if (method, path) in (
            ("GET", "/api/v1/workload-templates/name-availability"),
            ("POST", "/api/v1/token"),
        ):
            continue  # test_sdk.py drives these (a 204 has no body; the login is public)
        kinds = {kind for m, p, kind in checked if (m, p) == (method, path)}
        assert kinds & {"schema", "sdk-model"}, f"{method} {path}: no success body was checked ({kinds})"
