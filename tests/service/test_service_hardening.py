"""Hardened writes and queries (issue 7): a refused write stores nothing, on SQLite and PostgreSQL alike; JSON
bodies are read strictly (no duplicate keys, NaN, Infinity, numbers beyond range, NUL or lone surrogates);
filters parse their values; name-availability refuses what create refuses; Allow is complete; the OpenAPI
document states the rules; messages speak plainly."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import ADMIN, CLUSTER, Ids, MakeApp, bearer, open_client

from template_engine.service.listing import TEMPLATES
from template_engine.service.routes import common
from template_engine.service.schemas import NAME_MAX_LENGTH, NAME_PATTERN

T = "/api/v1/workload-templates/distributed"
JSON = {"Content-Type": "application/json"}

#: JSON texts of values no write may store, and a word their refusal names.
BAD_VALUES = [
    ("1e309", "too large"),
    ("-1e400", "too large"),
    ("NaN", "NaN"),
    ("Infinity", "Infinity"),
    ("-Infinity", "Infinity"),
    ('"\\udfff"', "lone surrogate"),
    ('"x\\ud800y"', "lone surrogate"),
    ('"a\\u0000b"', "NUL"),
]


def _send(client: Any, method: str, url: str, text: str, **kwargs: Any) -> Any:
    """``text`` as the body, byte for byte (httpx's ``json=`` cannot send NaN or a lone surrogate)."""
    return client.request(method, url, content=text.encode("utf-8"), headers=JSON, **kwargs)


def _fields(response: Any) -> list[str]:
    return [p.get("field", "") for p in response.json().get("problems", [])]


def _template_id(client: Any, name: str, **body: Any) -> str:
    response = client.post(T, json={"meta": {"name": name, "scopeType": "system"}, **body})
    assert response.status_code == 202, response.json()
    template_id: str = response.json()["meta"]["id"]
    return template_id


def _writes(ids: Ids, template_id: str) -> list[tuple[str, str, str, str]]:
    """Every kind of write, each with a ``%s`` where a value goes, and the field path that value has."""
    vision = ids.projects["vision"]
    defaults = f"/api/v1/defaults/projects/{vision}"
    project = f"/api/v1/org-unit/projects/{vision}"
    workload = (
        f'{{"name": "refused", "projectId": "{vision}", "clusterId": "{CLUSTER}", '
        '"spec": {"image": "x:1", "distributedFramework": "MPI", "args": %s}}'
    )
    variable = '{"spec": {"environmentVariables": [{"name": "A", "value": %s}]}}'
    template = '{"meta": {"name": "refused", "scopeType": "system", "description": %s}}'
    asset = '{"meta": {"name": "refused", "scope": "tenant", "description": %s}, "spec": {}}'
    return [
        ("PATCH", defaults, '{"spec": {"compute": {"cpuCoreRequest": %s}}}', "spec.compute.cpuCoreRequest"),
        ("PATCH", defaults, variable, "spec.environmentVariables[0].value"),
        ("PUT", "/api/v1/defaults/system", '{"spec": {"args": %s}}', "spec.args"),
        ("POST", T, template, "meta.description"),
        ("PATCH", f"{T}/{template_id}", '{"spec": {"args": %s}}', "spec.args"),
        ("PUT", f"{T}/{template_id}", '{"meta": {"name": "kept", "description": %s}}', "meta.description"),
        ("POST", "/api/v1/asset/environment", asset, "meta.description"),
        ("POST", "/api/v1/workloads/distributed", workload, "spec.args"),
        ("POST", "/api/v1/org-unit/departments", '{"name": "refused", "description": %s}', "description"),
        ("PUT", project, '{"name": "vision", "description": %s}', "description"),
    ]


def _state(client: Any, ids: Ids, template_id: str) -> dict[str, Any]:
    """What the refused writes could have changed; every read must answer (a 500 fails the client)."""
    vision = ids.projects["vision"]
    defaults = client.get(f"/api/v1/defaults/projects/{vision}")
    system = client.get("/api/v1/defaults/system")
    template = client.get(f"{T}/{template_id}")
    return {
        "defaults": (defaults.json(), defaults.headers["ETag"]),
        "system": (system.json(), system.headers["ETag"]),
        "template": (template.json()["spec"], template.json()["meta"], template.headers["ETag"]),
        "templates": sorted(e["meta"]["id"] for e in client.get(T, params={"limit": 500}).json()["entries"]),
        "assets": sorted(
            a["meta"]["name"] for a in client.get("/api/v1/asset/environment").json()["entries"]
        ),
        "departments": client.get("/api/v1/org-unit/departments").json(),
        "project": client.get(f"/api/v1/org-unit/projects/{vision}").json(),
    }


# -- 1. a refused write stores nothing, on both databases ----------------------------------------------------


def test_a_refused_write_stores_nothing(make_app: MakeApp, database_url: str) -> None:
    with open_client(make_app(database_url)) as client:
        ids = Ids(client)
        template_id = _template_id(client, "kept", spec={"args": "a"})
        before = _state(client, ids, template_id)
        for method, url, body, field in _writes(ids, template_id):
            for value, word in BAD_VALUES:
                response = _send(client, method, url, body % value)
                assert response.status_code == 400, (method, url, value, response.text)
                assert _fields(response) == [field], (method, url, value)
                assert word in response.json()["details"], response.json()["details"]
        assert _state(client, ids, template_id) == before
        # The names the refused creates used are free: nothing of them was written.
        free = {"templateName": "refused", "scopeType": "system"}
        assert client.get("/api/v1/workload-templates/name-availability", params=free).status_code == 204
        submitted = client.post(
            "/api/v1/workloads/distributed",
            json={
                "name": "refused",
                "projectId": ids.projects["vision"],
                "clusterId": CLUSTER,
                "spec": {"image": "x:1", "distributedFramework": "MPI"},
            },
        )
        assert submitted.status_code == 202, submitted.json()
        assert submitted.json()["name"] == "refused"


def test_the_repository_refuses_what_it_cannot_store(
    make_app: MakeApp, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the strict decoding step replaced by Python's lenient one, the repository still refuses, before
    anything is written: 400 on both databases (PostgreSQL used to answer 503 for a NUL), nothing stored."""
    monkeypatch.setattr(common, "read_json", lambda body: json.loads(body))
    with open_client(make_app(database_url)) as client:
        ids = Ids(client)
        vision = ids.projects["vision"]
        template_id = _template_id(client, "kept", spec={"args": "a"})
        before = _state(client, ids, template_id)
        defaults = f"/api/v1/defaults/projects/{vision}"
        project = f"/api/v1/org-unit/projects/{vision}"
        variable = '{"spec": {"environmentVariables": [{"name": "A", "value": "\\udfff"}]}}'
        asset = '{"meta": {"name": "refused", "scope": "tenant"}, "spec": {"args": "\\udfff"}}'
        for method, url, body, field in [
            (
                "PATCH",
                defaults,
                '{"spec": {"compute": {"cpuCoreRequest": 1e309}}}',
                "spec.compute.cpuCoreRequest",
            ),
            ("PATCH", defaults, variable, "spec.environmentVariables[0].value"),
            ("PATCH", f"{T}/{template_id}", '{"meta": {"description": "a\\u0000b"}}', "meta.description"),
            (
                "POST",
                "/api/v1/org-unit/departments",
                '{"name": "refused", "description": "a\\u0000b"}',
                "description",
            ),
            ("PUT", project, '{"name": "vision", "description": "a\\u0000"}', "description"),
            ("POST", "/api/v1/asset/environment", asset, "spec.args"),
        ]:
            response = _send(client, method, url, body)
            assert response.status_code == 400, (method, url, response.text)
            assert _fields(response) == [field], response.json()
            assert "cannot be stored" in response.json()["details"]
        assert _state(client, ids, template_id) == before


def test_keys_are_checked_too(client: Any) -> None:
    body = (
        '{"meta": {"name": "k", "scopeType": "system"}, '
        '"spec": {"annotations": [{"name": "a", "x\\u0000": 1}]}}'
    )
    response = _send(client, "POST", T, body)
    assert response.status_code == 400
    assert _fields(response) == ["spec.annotations[0]"]
    assert "the key 'x\\x00' holds a NUL character" in response.json()["details"]


def test_a_surrogate_pair_is_text_not_a_lone_surrogate(client: Any) -> None:
    body = '{"meta": {"name": "smile", "scopeType": "system", "description": "ok \\ud83d\\ude00"}}'
    response = _send(client, "POST", T, body)
    assert response.status_code == 202, response.json()
    assert client.get(f"{T}/{response.json()['meta']['id']}").json()["meta"]["description"] == "ok \U0001f600"


# -- 2. duplicate keys, two Authorization headers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "key"),
    [
        ('{"meta": {"name": "a", "scopeType": "system"}, "meta": {"name": "b", "scopeType": "system"}}',
         "meta", "meta"),
        ('{"meta": {"name": "a", "name": "b", "scopeType": "system"}}', "meta.name", "name"),
        ('{"meta": {"name": "a", "scopeType": "system"}, "spec": {"environmentVariables": '
         '[{"name": "A", "value": "1", "value": "2"}]}}', "spec.environmentVariables[0].value", "value"),
    ],
)  # fmt: skip
def test_a_key_given_twice_is_refused(client: Any, body: str, field: str, key: str) -> None:
    response = _send(client, "POST", T, body)
    assert response.status_code == 400
    assert _fields(response) == [field]
    assert f"the key {key!r} is given more than once" in response.json()["details"]
    free = {"templateName": "b", "scopeType": "system"}
    assert client.get("/api/v1/workload-templates/name-availability", params=free).status_code == 204


@pytest.mark.parametrize("second", [ADMIN, "nope"])
def test_two_authorization_headers_are_refused(app: Any, second: str) -> None:
    with open_client(app, token=None) as client:
        headers = [("Authorization", f"Bearer {ADMIN}"), ("Authorization", f"Bearer {second}")]
        response = client.get("/api/v1/workload-templates/count", headers=headers)
        assert response.status_code == 400
        assert "Authorization is given 2 times" in response.json()["message"]
        assert client.get("/api/v1/workload-templates/count", headers=bearer(ADMIN)).status_code == 200


# -- 3. NaN and Infinity -------------------------------------------------------------------------------------


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_literals_are_refused(client: Any, literal: str) -> None:
    body = '{"meta": {"name": "n", "scopeType": "system"}, "spec": {"compute": {"cpuCoreRequest": %s}}}'
    response = _send(client, "POST", T, body % literal)
    assert response.status_code == 400
    assert _fields(response) == ["spec.compute.cpuCoreRequest"]
    assert response.json()["problems"][0]["message"] == (
        f"{literal} is not a JSON number (JSON has no NaN or Infinity)"
    )


@pytest.mark.parametrize("text", ["NaN", "nan", "inf", ".inf", "-.inf", "Infinity", "1e309"])
def test_numbers_written_as_text_are_refused(client: Any, text: str) -> None:
    body = {"meta": {"name": "n", "scopeType": "system"}, "spec": {"compute": {"cpuCoreRequest": text}}}
    response = client.post(T, json=body)
    assert response.status_code == 400
    assert _fields(response) == ["spec.compute.cpuCoreRequest"]


# -- 4. filters ----------------------------------------------------------------------------------------------


def _names(client: Any, *filters: str) -> list[str]:
    response = client.get(T, params={"filterBy": list(filters), "limit": 500})
    assert response.status_code == 200, response.json()
    return sorted(e["meta"]["name"] for e in response.json()["entries"])


@pytest.mark.parametrize(
    "given",
    ["createdAt>=yesterday", "updatedAt<=2024-13-01", "createdAt=@2024", "projectId>=abc", "runnable==yes"],
)
def test_a_filter_value_that_cannot_be_read_is_a_400(client: Any, given: str) -> None:
    for url in (T, "/api/v1/workload-templates/count"):
        response = client.get(url, params={"filterBy": given})
        assert response.status_code == 400, (url, given)
        assert _fields(response) == ["filterBy[0]"]


def test_date_filters_compare_instants(client: Any) -> None:
    everything = _names(client)
    assert _names(client, "createdAt>=2000-01-01") == everything
    assert _names(client, "createdAt<=2000-01-01T00:00:00Z") == []
    assert _names(client, "updatedAt<=2999-12-31T23:59:59+14:00") == everything
    template_id = _template_id(client, "dated")
    stamp = client.get(f"{T}/{template_id}").json()["meta"]["updatedAt"]  # 2026-...T...Z
    assert stamp.endswith("Z")
    same_instant = stamp[:-1] + "+00:00"  # a different text for the same instant
    assert "dated" in _names(client, f"updatedAt=={same_instant}")
    assert "dated" not in _names(client, f"updatedAt!={same_instant}")


def test_filters_joined_by_commas_all_apply(client: Any, ids: Ids) -> None:
    system = sorted(name for scope, name in ids.templates if scope == "system")
    name = system[0]
    assert _names(client, f"name=={name},scopeType==system") == [name]
    assert _names(client, f"name=={name},scopeType==project") == []
    assert _names(client, f"scopeType==system,name=={name}") == _names(
        client, "scopeType==system", f"name=={name}"
    )
    count = client.get(
        "/api/v1/workload-templates/count", params={"filterBy": f"name=={name},scopeType==system"}
    )
    assert count.json() == {"count": 1}
    # A comma not followed by a field and an operator belongs to the value.
    assert _names(client, "createdBy==seed,x") == []
    assert _names(client, "createdBy=@seed") != []


def test_id_filters_order_numbers(client: Any) -> None:
    entries = client.get(T, params={"limit": 500}).json()["entries"]
    with_project = sorted(e["meta"]["name"] for e in entries if e["meta"].get("projectId"))
    assert with_project, "the example org has project templates"
    highest = max(int(e["meta"]["projectId"]) for e in entries if e["meta"].get("projectId"))
    assert _names(client, "projectId>=0") == with_project
    assert _names(client, f"projectId>={highest + 1}") == []
    # As text, '1' <= '0N' would be false and '1' >= '0N' true: numbers order otherwise.
    assert _names(client, f"projectId<=0{highest}") == with_project
    assert _names(client, f"projectId>=0{highest + 1}") == []


# -- 5. name-availability, Allow, the OpenAPI document -------------------------------------------------------


@pytest.mark.parametrize("name", ["-lead", "has space", "x" * 251, "trail.", "a\u0000b"])
def test_name_availability_refuses_what_create_refuses(client: Any, name: str) -> None:
    create = client.post(T, json={"meta": {"name": name, "scopeType": "system"}})
    assert create.status_code == 400
    check = client.get(
        "/api/v1/workload-templates/name-availability", params={"templateName": name, "scopeType": "system"}
    )
    assert check.status_code == 400
    assert _fields(check) == ["templateName"]
    said = create.json()["problems"][0]["message"]
    if len(name) > NAME_MAX_LENGTH:  # create checks the length, the query the pattern, which bounds it too
        assert f"at most {NAME_MAX_LENGTH} characters" in said
        assert f"at most {NAME_MAX_LENGTH} characters" in check.json()["problems"][0]["message"]
    elif "NUL" not in said:  # the body's NUL is refused when decoded; the query's by the name rule
        assert said in check.json()["problems"][0]["message"]


def test_name_availability_and_the_system_scope(client: Any) -> None:
    params = {"templateName": "free-name", "scopeType": "system"}
    assert client.get("/api/v1/workload-templates/name-availability", params=params).status_code == 204
    tenant = client.get("/api/v1/workload-templates/name-availability", params={**params, "scopeId": "1"})
    assert tenant.status_code == 204  # the tenant's own id names the system scope too
    with_id = client.get("/api/v1/workload-templates/name-availability", params={**params, "scopeId": "2"})
    created = client.post(T, json={"meta": {"name": "free-name", "scopeType": "system", "scopeId": "2"}})
    assert with_id.status_code == created.status_code == 400
    assert with_id.json()["problems"][0]["message"] == created.json()["problems"][0]["message"]


@pytest.mark.parametrize(
    ("path", "methods"),
    [
        (T, "GET, HEAD, POST, OPTIONS"),
        (f"{T}/00000000-0000-4000-8000-000000000000", "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"),
        ("/api/v1/defaults/system", "GET, HEAD, PUT, PATCH, DELETE, OPTIONS"),
        ("/api/v1/workload-templates/count", "GET, HEAD, OPTIONS"),
        ("/api/v1/asset/compute", "GET, HEAD, POST, OPTIONS"),
        ("/health", "GET, HEAD, OPTIONS"),
        ("/api/v1/token", "POST, OPTIONS"),
    ],
)
def test_options_and_405_name_every_method(client: Any, path: str, methods: str) -> None:
    options = client.options(path)
    assert options.status_code == 204
    assert options.headers["Allow"] == methods
    wrong = client.request("TRACE", path)
    assert wrong.status_code == 405
    assert wrong.headers["Allow"] == methods
    assert wrong.json()["code"] == 405 and methods in wrong.json()["message"]
    assert client.options("/api/v1/nothing").status_code == 404


def test_the_openapi_document_states_the_rules(client: Any) -> None:
    doc = client.get("/openapi.json").json()

    def parameter(path: str, name: str) -> dict[str, Any]:
        found: dict[str, Any] = next(p for p in doc["paths"][path]["get"]["parameters"] if p["name"] == name)
        return found

    for path in (T, "/api/v1/workload-templates/count"):
        filter_by = parameter(path, "filterBy")
        items = filter_by["schema"]["anyOf"][0]["items"]
        assert items["pattern"] == TEMPLATES.pattern  # the grammar parse() takes (issue 30)
        assert "ISO 8601" in filter_by["description"] and "commas" in filter_by["description"]
    name = parameter("/api/v1/workload-templates/name-availability", "templateName")
    assert name["schema"]["pattern"] == NAME_PATTERN  # which bounds the length to NAME_MAX_LENGTH
    assert (
        "system scope takes none"
        in parameter("/api/v1/workload-templates/name-availability", "scopeId")["description"]
    )
    meta = doc["components"]["schemas"]["TemplateCreateMeta"]
    assert meta["properties"]["name"]["pattern"] == NAME_PATTERN
    assert meta["if"] == {
        "properties": {"scopeType": {"enum": ["system", "tenant"]}},
        "required": ["scopeType"],
    }
    assert meta["then"] == {"properties": {"scopeId": {"enum": [None, "1", 1]}}}
    assert meta["else"]["required"] == ["scopeId"]


# -- 6. wording ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "sent"),
    [(b"[]", "an array"), (b'"text"', "a string"), (b"42", "a number"), (b"true", "true"), (b"null", "null")],
)
def test_a_body_that_is_not_an_object_says_so(client: Any, payload: bytes, sent: str) -> None:
    response = client.post(T, content=payload, headers=JSON)
    assert response.status_code == 400
    details = response.json()["details"]
    assert details == f"the body must be a JSON object, not {sent} (expected a JSON object)"
    assert "Content-Type" not in details


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        ("/api/v1/org-unit/departments", {"name": "-x"}, "name"),
        ("/api/v1/org-unit/projects", {"name": "-x", "parentId": "1"}, "name"),
        ("/api/v1/asset/compute", {"meta": {"name": "-x", "scope": "tenant"}, "spec": {}}, "meta.name"),
        (T, {"meta": {"name": "-x", "scopeType": "system"}}, "meta.name"),
        (
            T,
            {"meta": {"name": "ok", "scopeType": "system"}, "assets": {"environment": "-x"}},
            "assets.environment",
        ),
    ],
)
def test_a_bad_name_is_explained_in_words(client: Any, url: str, body: dict[str, Any], field: str) -> None:
    response = client.post(url, json=body)
    assert response.status_code == 400
    assert _fields(response) == [field]
    details = response.json()["details"]
    assert "^[" not in details and "pattern" not in details
    assert "letters, digits" in details and "starting and ending with a letter or digit" in details


def test_a_bad_workload_name_is_explained_in_words(client: Any, ids: Ids) -> None:
    body = {"name": "Upper", "projectId": ids.projects["vision"], "clusterId": CLUSTER}
    response = client.post("/api/v1/workloads/distributed", json=body)
    assert response.status_code == 400
    details = response.json()["details"]
    assert "^[" not in details and "lowercase letters, digits and '-'" in details


def test_a_bad_template_name_in_a_replace_is_explained_in_words(client: Any) -> None:
    template_id = _template_id(client, "renamed")
    response = client.put(f"{T}/{template_id}", json={"meta": {"name": "has space"}})
    assert response.status_code == 400
    assert "^[" not in response.json()["details"] and "letters, digits" in response.json()["details"]


def test_an_integer_too_large_is_named_plainly(client: Any) -> None:
    digits = "1" * 5000
    body = '{"meta": {"name": "big", "scopeType": "system"}, "spec": {"numWorkers": ' + digits + "}}"
    response = _send(client, "POST", T, body)
    assert response.status_code == 400
    assert _fields(response) == ["spec.numWorkers"]
    assert response.json()["problems"][0]["message"] == "integer too large (5000 digits)"
    cleared = client.patch("/api/v1/defaults/system", json={"fieldsToClear": [f"spec.ports[{digits}]"]})
    assert cleared.status_code == 400
    assert _fields(cleared) == ["fieldsToClear[0]"]
    assert "set_int_max_str_digits" not in cleared.text and "1000 characters" in cleared.json()["details"]


def test_deep_and_undecodable_bodies_are_400s(client: Any) -> None:
    # (10,000 levels: fewer values than the limit of a body, which a deeper one is refused for first)
    deep = client.post(T, content=b'{"spec": ' + b"[" * 10_000 + b"]" * 10_000 + b"}", headers=JSON)
    assert deep.status_code == 400 and "nested more than 64 levels" in deep.json()["details"]
    nested = client.post(T, content=b'{"spec": ' + b'{"a": ' * 100 + b"1" + b"}" * 100 + b"}", headers=JSON)
    assert nested.status_code == 400 and "nested more than 64 levels" in nested.json()["details"]
    latin1 = client.post(T, content='{"meta": {"name": "é"}}'.encode("latin-1"), headers=JSON)
    assert latin1.status_code == 400 and "UTF-8" in latin1.json()["details"]


def test_a_long_quantity_text_is_refused_without_running_the_pattern_on_it(monkeypatch: Any) -> None:
    # A pattern of Run:ai's may backtrack on a long text: the length comes first.
    from template_engine.loader import values

    seen: list[int] = []

    class Recorder:
        def match(self, text: str) -> None:
            seen.append(len(text))

    check = values._text(Recorder(), "words", longest=64)  # type: ignore[arg-type]
    assert check("1" * 60000 + "!") == "words"
    assert seen == []
    assert check("1Gi") == "words" and seen == [3]
