"""Ids are ASCII digits wherever one is read (issue 30): Python's ``int()`` takes an Arabic-Indic one (U+0661)
as 1 and ``isdigit()`` takes a superscript three (U+00B3), on which ``int()`` then raises.  Every query
parameter that carries a department or project id, found by walking the OpenAPI document, answers such a
text with a 400 naming the parameter, for every role; so do the bodies that name a scope; a path segment
that is not an id is no path of the service (404)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from conftest import ADMIN, VIEWER, VISION, Ids, bearer

from template_engine.kinds import TEMPLATE_KINDS
from template_engine.service.ids import id_number

NOT_IDS = ("\u00b3", "\u0661", "1\u0661", "\uff11", "1x", "-1", " 1", "1 ", "+1", "0x1", "9" * 19)
#: Query parameters that are not department or project ids (UUIDs, flags).
_OTHER = {"clusterId", "templateId", "workloadId", "assetId", "assetIds", "validateOnly"}


def test_the_one_parser_takes_ascii_digits_only() -> None:
    assert id_number("12") == 12 and id_number(7) == 7 and id_number("0") == 0
    for text in NOT_IDS:
        assert id_number(text) is None, text
    for value in (True, 1.0, None, -3, [], "", "9" * 19):
        assert id_number(value) is None, value


def _id_queries(client: Any) -> list[tuple[str, str, str]]:
    document = client.get("/openapi.json").json()
    found = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", []):
                name = parameter["name"]
                if parameter["in"] == "query" and name.endswith("Id") and name not in _OTHER:
                    found.append((method.upper(), path, name))
    return found


def _concrete(path: str, ids: Ids, templates: dict[str, str]) -> str:
    """``path`` with an id of each parameter: a template of the path's kind (issue 32: another kind's id is
    a 404 there)."""
    kind = next((segment for segment in templates if f"/workload-templates/{segment}/" in path), None)
    values = {
        "templateId": templates[kind] if kind is not None else ids.template("pytorch-elastic"),
        "departmentId": ids.departments["research"],
        "projectId": ids.projects["vision"],
    }
    return re.sub(r"\{(\w+)\}", lambda m: str(values.get(m.group(1), "1")), path)


def _template(ids: Ids) -> dict[str, Any]:
    scope = {"scopeType": "project", "scopeId": str(ids.projects["vision"])}
    return {"meta": {"name": "ids-probe", **scope}, "spec": {"image": "python:3.12"}}


def _kind_templates(client: Any) -> dict[str, str]:
    """A template of each kind but distributed (the example org has distributed ones), by its path segment."""
    made = {}
    for kind in TEMPLATE_KINDS:
        if kind.name != "distributed":
            body = {"meta": {"name": f"ids-{kind.name}", "scopeType": "system"}, "spec": {"image": "a:1"}}
            url = f"/api/v1/workload-templates/{kind.template_segment}"
            made[str(kind.template_segment)] = client.post(url, json=body).json()["meta"]["id"]
    return made


def test_every_query_id_is_refused_unless_it_is_ascii_digits(client: Any, ids: Ids) -> None:
    queries = _id_queries(client)
    templates = _kind_templates(client)
    names = {name for _, _, name in queries}
    assert {"departmentId", "projectId", "scopeId"} <= names, names
    assert len(queries) >= 15, queries
    for method, path, name in queries:
        # What else the route needs to reach the id: the scope an id goes with, a body to preview.
        extra = {"scope": "department" if name == "departmentId" else "project"} if "policy" in path else {}
        if name == "scopeId":
            extra = {"scopeType": "project", "templateName": "free"}
        body = _template(ids) if path.endswith("/preview") else None
        # A write is the admin's: who else may write is decided on the scope the id names.
        for token in (ADMIN,) if method == "DELETE" else (ADMIN, VISION, VIEWER):
            for text in NOT_IDS:
                response = client.request(
                    method,
                    _concrete(path, ids, templates),
                    params={**extra, name: text},
                    json=body,
                    headers=bearer(token),
                )
                assert response.status_code == 400, (method, path, name, token, text, response.text)
                fields = [p.get("field") for p in response.json()["problems"]]
                assert name in fields, (method, path, text, response.json())


@pytest.mark.parametrize("text", ["\u00b3", "\u0661", "1x"])
def test_a_body_naming_a_scope_by_a_non_id_is_a_400_on_that_field(client: Any, ids: Ids, text: str) -> None:
    template = _template(ids)
    template["meta"]["scopeId"] = text
    for url in ("/api/v1/workload-templates/distributed/preview", "/api/v1/workload-templates/distributed"):
        response = client.post(url, json=template)
        assert response.status_code == 400, (url, response.text)
        assert "meta.scopeId" in [p.get("field") for p in response.json()["problems"]], response.json()
    asset = {
        "meta": {"name": "ids-probe", "scope": "department", "departmentId": text},
        "spec": {"image": "python:3.12"},
    }
    response = client.post("/api/v1/asset/environment", json=asset)
    assert response.status_code == 400, response.text
    assert "meta.departmentId" in [p.get("field") for p in response.json()["problems"]], response.json()


@pytest.mark.parametrize("path", ["/api/v1/org-unit/projects/{}", "/api/v1/defaults/departments/{}"])
def test_a_path_segment_that_is_not_an_id_is_no_path(client: Any, path: str) -> None:
    for text in ("\u00b3", "\u0661", "1x"):
        assert client.get(path.format(text)).status_code == 404, text


# -- node pools in resources, duplicates, filterBy, one wording (the review of issue 30) ---------------------

D, P = "/api/v1/org-unit/departments", "/api/v1/org-unit/projects"
#: The one wording of an id refused anywhere (``service/ids.py``).
REFUSED = "must be an id of 1 to 18 ASCII digits, such as '1' (got '\u00b3')"


def _problems(response: Any) -> dict[str, str]:
    assert response.status_code == 400, response.text
    return {p.get("field", ""): p["message"] for p in response.json()["problems"]}


def _resource_writes(ids: Ids, resources: list[Any]) -> list[tuple[str, str, Any, str]]:
    """Every body that carries a unit's resources: method, url, body and the prefix of the field's path."""
    project, department = ids.projects["vision"], ids.departments["research"]
    return [
        ("PUT", f"{P}/{project}/resources", resources, ""),
        ("PATCH", f"{P}/{project}/resources", resources, ""),
        ("PUT", f"{D}/{department}/resources", resources, ""),
        ("PATCH", f"{D}/{department}/resources", resources, ""),
        ("POST", P, {"name": "probe", "parentId": str(department), "resources": resources}, "resources"),
        ("PUT", f"{P}/{project}", {"resources": resources}, "resources"),
        ("POST", D, {"name": "probe", "resources": resources}, "resources"),
        ("PUT", f"{D}/{department}", {"resources": resources}, "resources"),
    ]


@pytest.mark.parametrize("text", ["\u00b3", "\u0661", "1x", ""])
def test_a_node_pool_id_in_resources_is_ascii_digits(client: Any, ids: Ids, text: str) -> None:
    resources = [{"nodePool": {"id": text}, "gpu": {"deserved": 1}}]
    for method, url, body, prefix in _resource_writes(ids, resources):
        response = client.request(method, url, json=body)
        field = f"{prefix}[0].nodePool.id"
        assert field in _problems(response), (method, url, response.json())
    stored = client.get(f"{P}/{ids.projects['vision']}").json()["resources"]
    assert all(entry.get("nodePool", {}).get("id") != text for entry in stored), stored


def test_a_node_pool_id_in_resources_is_refused_in_the_one_wording(client: Any, ids: Ids) -> None:
    response = client.put(f"{P}/{ids.projects['vision']}/resources", json=[{"nodePool": {"id": "\u00b3"}}])
    assert _problems(response) == {"[0].nodePool.id": REFUSED}


def test_a_node_pool_is_given_once_in_resources(client: Any, ids: Ids) -> None:
    twice = [
        {"nodePool": {"id": "1"}, "gpu": {"deserved": 1}},
        {"nodePool": {"id": "1"}, "gpu": {"deserved": 2}},
    ]
    for method, url, body, prefix in _resource_writes(ids, twice):
        problems = _problems(client.request(method, url, json=body))
        assert problems == {
            f"{prefix}[1].nodePool.id": "entry [0] already gives the quotas of node pool '1': give each once "
            "(got '1')"
        }, (method, url)
    none_twice = [{"gpu": {"deserved": 1}}, {"gpu": {"deserved": 2}}]
    assert "[1]" in _problems(client.put(f"{P}/{ids.projects['vision']}/resources", json=none_twice))
    other = [
        {"nodePool": {"id": "1"}, "gpu": {"deserved": 1}},
        {"nodePool": {"id": "2"}, "gpu": {"deserved": 2}},
    ]
    answered = client.put(f"{P}/{ids.projects['vision']}/resources", json=other)
    assert answered.status_code == 200, answered.text
    assert client.get(f"{P}/{ids.projects['vision']}").json()["totalResources"]["gpuQuota"] == 3


@pytest.mark.parametrize(
    ("url", "field"),
    [
        (P, "departmentId"),
        (P, "parentId"),
        ("/api/v1/workload-templates", "departmentId"),
        ("/api/v1/workload-templates", "projectId"),
        ("/api/v1/workloads", "projectId"),
    ],
)
@pytest.mark.parametrize("op", ["==", "!=", "=@", "<="])
def test_a_filter_on_an_id_field_takes_an_id(client: Any, url: str, field: str, op: str) -> None:
    response = client.get(url, params={"filterBy": f"{field}{op}\u00b3"})
    assert _problems(response) == {"filterBy[0]": f"{field}: {REFUSED}"}, response.json()
    assert client.get(url, params={"filterBy": f"{field}{op}1"}).status_code == 200


_TEMPLATE_BODY = {"meta": {"name": "p", "scopeType": "project", "scopeId": "\u00b3"}, "spec": {"image": "x"}}
#: Each door an id comes through: method, url, query, body and the field the 400 names.
_DOORS = {
    "query": ("GET", "/api/v1/asset/environment", {"projectId": "\u00b3"}, None, "projectId"),
    "policy query": (
        "GET",
        "/api/v2/policy/distributed",
        {"scope": "department", "departmentId": "\u00b3"},
        None,
        "departmentId",
    ),
    "create body": ("POST", P, None, {"name": "probe", "parentId": "\u00b3"}, "parentId"),
    "template body": ("POST", "/api/v1/workload-templates/distributed", None, _TEMPLATE_BODY, "meta.scopeId"),
    "resources body": ("PUT", f"{P}/1/resources", None, [{"nodePool": {"id": "\u00b3"}}], "[0].nodePool.id"),
    "filterBy": ("GET", P, {"filterBy": "parentId==\u00b3"}, None, "filterBy[0]"),
}


@pytest.mark.parametrize("door", list(_DOORS))
def test_every_door_refuses_an_id_in_one_wording(client: Any, door: str) -> None:
    """A query (one typed as an integer too), a policy query, bodies, ``filterBy``: one wording."""
    method, url, params, body, field = _DOORS[door]
    response = client.request(method, url, params=params, json=body)
    problems = _problems(response)
    assert field in problems, (door, problems)
    assert problems[field].endswith(REFUSED), (door, problems[field])


def test_a_path_segment_that_is_not_an_id_is_no_path_so_no_400_wording(client: Any) -> None:
    """A path is the one door where a non-id is not a 400: no route has such a path (404)."""
    assert client.put(f"{P}/\u00b3/resources", json=[]).status_code == 404
    assert client.get(f"{P}/{'9' * 19}").status_code == 404


def test_a_models_own_check_answers_in_its_words_at_its_field(client: Any, ids: Ids) -> None:
    huge = [
        {"nodePool": {"id": "1"}, "gpu": {"deserved": 1e308}},
        {"nodePool": {"id": "2"}, "gpu": {"deserved": 1e308}},
    ]
    problems = _problems(client.post(D, json={"name": "probe", "resources": huge}))
    assert problems == {
        "resources[1].gpu.deserved": "the node pools' gpu quotas would add up to more than a double holds "
        "(TotalResources.gpuQuota, at most 1.8e308) (got 1e+308)"
    }


def test_a_wrong_type_is_named_as_json_not_as_a_class(client: Any, ids: Ids) -> None:
    response = client.post("/api/v1/workload-templates/distributed", json={"meta": "x", "spec": {}})
    messages = _problems(response)
    assert messages["meta"] == "must be an object (got 'x')", messages
    assert not any("instance of" in m or "dictionary" in m for m in messages.values()), messages
    assert _problems(client.post(D, json={"name": "probe", "resources": {}}))["resources"] == (
        "must be an array (got an object)"
    )


def test_a_long_description_gets_its_own_bound_only(client: Any, ids: Ids) -> None:
    template = _template(ids)
    template["meta"]["description"] = "d" * 5000
    response = client.post("/api/v1/workload-templates/distributed", json=template)
    assert response.status_code == 400, response.text
    messages = [p["message"] for p in response.json()["problems"] if p.get("field") == "meta.description"]
    assert len(messages) == 1 and "250 characters" in messages[0], messages
