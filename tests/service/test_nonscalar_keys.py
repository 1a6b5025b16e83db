"""A keyed-list item whose key is an object or a list is a 400 on the field, from any role, on every route
that takes a spec: never a 500 (it was ``TypeError: unhashable type`` in the key check), and a role that may
not write gets its 403 (issue 17, item 4)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ADMIN, VIEWER, VISION, bearer

from template_engine.merge.plan import SPEC_PLAN

KEYS: list[Any] = [[], {}, [1], {"a": 1}]
#: Every keyed list directly under a spec, with its key field.
LISTS = sorted(
    (name, node.key.field)
    for name, node in (SPEC_PLAN.children or {}).items()
    if node.key is not None and not node.whole
)


def _spec(field: str, key_field: str, key: Any) -> dict[str, Any]:
    return {"image": "python:3.11", "distributedFramework": "PyTorch", field: [{key_field: key}]}


def test_there_are_keyed_lists_to_try() -> None:
    assert len(LISTS) >= 8, LISTS


@pytest.mark.parametrize(("field", "key_field"), LISTS)
def test_a_non_scalar_key_is_a_400_on_the_field_for_every_role_and_route(
    client: Any, ids: Any, field: str, key_field: str
) -> None:
    project = ids.projects["vision"]
    for key in KEYS:
        spec = _spec(field, key_field, key)
        template = {
            "meta": {"name": "bad-key", "scopeType": "project", "scopeId": str(project)},
            "spec": spec,
        }
        where = f"spec.{field}[0].{key_field}"
        for token in (ADMIN, VISION, VIEWER):
            headers = bearer(token)
            preview = client.post(
                "/api/v1/workload-templates/distributed/preview", json=template, headers=headers
            )
            assert preview.status_code == 400, (token, key, preview.text)
            assert where in [p.get("field") for p in preview.json()["problems"]], preview.text
            created = client.post("/api/v1/workload-templates/distributed", json=template, headers=headers)
            assert created.status_code == (403 if token == VIEWER else 400), (token, key, created.text)
            workload = {"name": "bad-key", "projectId": str(project), "spec": spec}
            submitted = client.post("/api/v1/workloads/distributed", json=workload, headers=headers)
            assert submitted.status_code == (403 if token == VIEWER else 400), (token, key, submitted.text)


def test_a_value_written_as_an_expression_is_held_to_runais_rules_as_rendered(client: Any, ids: Any) -> None:
    """Literal values Run:ai refuses are a 400 of the body; the same values written as expressions are held
    to the rules once rendered: the submission is not runnable and nothing is stored."""
    project = ids.projects["vision"]
    spec = {
        "image": "python:3.11",
        "distributedFramework": "PyTorch",
        "imagePullSecrets": [{"name": '{{ "Bad_Secret" }}'}],
        "probes": {"readiness": {"handler": {"httpGet": {"path": '{{ "no slash" }}'}}}},
    }
    before = client.get("/api/v1/workloads").json()["workloads"]
    submitted = client.post(
        "/api/v1/workloads/distributed", json={"name": "x", "projectId": str(project), "spec": spec}
    )
    assert submitted.status_code == 400, submitted.text
    details = submitted.text
    assert "Bad_Secret" in details and "Kubernetes name" in details
    assert "no slash" in details and "URL path" in details
    assert client.get("/api/v1/workloads").json()["workloads"] == before


def test_a_viewers_write_is_a_403_before_its_body_is_read(client: Any, ids: Any) -> None:
    """A viewer may write nothing: a malformed body does not get a 400 first (it would tell the viewer
    what the body lacks, and cost the work of reading it)."""
    project = ids.projects["vision"]
    bad = {"spec": {"labels": [{"name": []}]}}
    headers = bearer(VIEWER)
    for method, url, params in (
        ("PATCH", f"/api/v1/defaults/projects/{project}", {}),
        ("PATCH", f"/api/v1/defaults/projects/{project}", {"validateOnly": "true"}),
        ("PUT", "/api/v1/defaults/system", {}),
        ("POST", "/api/v1/asset/environment", {}),
        ("POST", "/api/v1/workload-templates/distributed", {}),
    ):
        answer = client.request(method, url, json=bad, params=params, headers=headers)
        assert answer.status_code == 403, (method, url, answer.text)
    # A preview is a read: the viewer gets the body's problems.
    preview = client.post("/api/v1/workload-templates/distributed/preview", json=bad, headers=headers)
    assert preview.status_code == 400
