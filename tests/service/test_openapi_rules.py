"""The service's OpenAPI document states the rules the service enforces: what the service refuses with a 400,
the document refuses too (a client generated from it, or a validator in front of it, finds the same
mistakes), and what the service takes, the document takes.

Each case is sent to the service and validated against the document's schema of that operation's body or
parameter (JSON Schema 2020-12, as OpenAPI 3.1 writes it).
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import pytest
from conftest import Ids
from sdk_helpers import service_document

T = "/api/v1/workload-templates/distributed"
P = "/api/v2/policy/distributed"
AVAILABLE = "/api/v1/workload-templates/name-availability"
#: A cluster UUID (of no cluster: the bodies with it are refused before it is looked up).
NO_CLUSTER = "00000000-0000-0000-0000-0000000000aa"


@functools.cache
def _document() -> dict[str, Any]:
    return service_document()


def _errors(schema: dict[str, Any], value: Any) -> list[str]:
    """What the document's ``schema`` says of ``value``; its ``$ref`` resolve in the document itself."""
    document = _document()
    root = {**schema, "components": document["components"]}
    validator = jsonschema.Draft202012Validator(root)
    return [error.message for error in validator.iter_errors(value)]


def _body_schema(method: str, path: str) -> dict[str, Any]:
    operation = _document()["paths"][path][method.lower()]
    schema: dict[str, Any] = operation["requestBody"]["content"]["application/json"]["schema"]
    return schema


def _parameter_schema(method: str, path: str, name: str) -> dict[str, Any]:
    operation = _document()["paths"][path][method.lower()]
    (schema,) = [p["schema"] for p in operation["parameters"] if p["name"] == name]
    return dict(schema)


def _template(**meta: Any) -> dict[str, Any]:
    return {"meta": {"name": "rules", **meta}, "spec": {"image": "python:3.11"}}


def _policy(**meta: Any) -> dict[str, Any]:
    return {"meta": {"name": "rules", **meta}}


#: (method, path, body) the service refuses with a 400; ids of the example org are filled in per test.
REFUSED_BODIES = [
    ("POST", T, _template(scopeType="cluster")),
    ("POST", T, _template(scopeType="tenant", scopeId="2")),
    ("POST", T, _template(scopeType="project")),
    ("POST", T, {**_template(scopeType="system"), "spec": {"numWorkers": 2**31}}),
    ("POST", T, {**_template(scopeType="system"), "spec": {"compute": {"gpuDevicesRequest": -1}}}),
    ("POST", T, {**_template(scopeType="system"), "spec": {"ports": [{"container": 70000}]}}),
    ("POST", T, {**_template(scopeType="system"), "spec": {"security": {"runAsUid": 2**63}}}),
    ("POST", T, {**_template(scopeType="system"), "spec": {"security": {"runAsGid": -(2**63) - 1}}}),
    ("PUT", P, _policy(scope="cluster")),
    ("PUT", P, _policy(scope="cluster", clusterId=NO_CLUSTER, departmentId="{research}")),
    ("PUT", P, _policy(scope="tenant", clusterId=NO_CLUSTER)),
    ("PUT", P, _policy(scope="tenant", projectId="{vision}")),
    ("PUT", P, _policy(scope="tenant", departmentId="{research}")),
    ("PUT", P, _policy(scope="department", projectId="{vision}", departmentId="{research}")),
    ("PUT", P, _policy(scope="department")),
    ("PUT", P, _policy(scope="project", departmentId="{research}")),
    ("PATCH", P, _policy(scope="system", projectId="{vision}")),
]
TAKEN_BODIES = [
    ("POST", T, _template(scopeType="tenant")),
    ("POST", T, _template(scopeType="department", scopeId="{research}")),
    ("POST", T, {**_template(scopeType="system"), "spec": {"numWorkers": 2**31 - 1}}),
    ("POST", T, {**_template(scopeType="system"), "spec": {"security": {"runAsUid": 2**63 - 1}}}),
    ("PUT", P, _policy(scope="tenant")),
    ("PUT", P, _policy(scope="department", departmentId="{research}")),
    ("PUT", P, _policy(scope="project", projectId="{vision}", departmentId="{research}")),
]


def _filled(value: Any, ids: Ids) -> Any:
    if isinstance(value, dict):  # a policy's projectId is an integer (Run:ai's ProjectIdOptional)
        filled = {k: _filled(v, ids) for k, v in value.items()}
        return filled | ({"projectId": int(filled["projectId"])} if "projectId" in value else {})
    if isinstance(value, str) and value.startswith("{"):
        name = value.strip("{}")
        return ids.projects.get(name) or ids.departments[name]
    return value


def _name(case: tuple[str, str, Any]) -> str:
    method, path, body = case
    return f"{method} {path.rsplit('/', 1)[-1]} {body['meta']}" + (
        f" {body['spec']}" if "spec" in body else ""
    )


@pytest.mark.parametrize("case", REFUSED_BODIES, ids=[_name(c) for c in REFUSED_BODIES])
def test_a_body_the_service_refuses_the_document_refuses(client: Any, ids: Ids, case: Any) -> None:
    method, path, body = case
    body = _filled(body, ids)
    response = client.request(method, path, json=body)
    assert response.status_code == 400, response.text
    fields = {p.get("field", "") for p in response.json()["problems"]}
    assert all(f.startswith(("meta", "spec")) for f in fields), fields  # refused for the case's reason
    assert _errors(_body_schema(method, path), body), f"the document takes what the service refused: {body}"


@pytest.mark.parametrize("case", TAKEN_BODIES, ids=[_name(c) for c in TAKEN_BODIES])
def test_a_body_the_service_takes_the_document_takes(client: Any, ids: Ids, case: Any) -> None:
    method, path, body = case
    body = _filled(body, ids)
    response = client.request(method, path, params={"validateOnly": "true"} if path == P else None, json=body)
    assert response.status_code in (200, 202), response.text
    assert _errors(_body_schema(method, path), body) == []


@pytest.mark.parametrize(
    ("method", "path", "params", "name", "needed"),
    [
        ("GET", AVAILABLE, {"templateName": "free", "scopeType": "cluster"}, "scopeType", "scopeId"),
        ("GET", P, {"scope": "cluster"}, "scope", "clusterId"),
        ("DELETE", P, {"scope": "cluster"}, "scope", "clusterId"),
    ],
)
def test_the_document_offers_the_cluster_scope_and_the_service_wants_its_id(
    client: Any, method: str, path: str, params: dict[str, str], name: str, needed: str
) -> None:
    response = client.request(method, path, params=params)
    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == [needed]
    assert "cluster" in response.json()["details"]
    schema = _parameter_schema(method, path, name)
    assert _errors(schema, "cluster") == []
    assert _errors(schema, "tenant") == []
    assert _errors(schema, "region")


def test_the_documents_numbers_carry_run_ai_s_bounds() -> None:
    spec = _document()["components"]["schemas"]["WorkerSpec"]["properties"]
    (workers,) = [s for s in spec["numWorkers"]["anyOf"] if s.get("type") == "integer"]
    assert (workers["minimum"], workers["maximum"]) == (1, 2**31 - 1)
    security = _document()["components"]["schemas"]["Security"]["properties"]
    (uid,) = [s for s in security["runAsUid"]["anyOf"] if s.get("type") == "integer"]
    assert (uid["minimum"], uid["maximum"]) == (-(2**63), 2**63 - 1)
    assert all(isinstance(bound, int) for bound in (*workers.values(), *uid.values()) if bound != "integer")
