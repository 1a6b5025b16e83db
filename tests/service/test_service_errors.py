"""Bad input is a 400/413 naming the field, never a 500 and never a partial write."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from conftest import ADMIN, CLUSTER, Ids, bearer, open_client
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
from waiting import LIVE_TIMEOUT

from template_engine.service.storage.repository import Repository

T = "/api/v1/workload-templates/distributed"
UUID = "00000000-0000-4000-8000-000000000000"


def _problems(response: Any) -> list[str]:
    return [p.get("field", "") for p in response.json()["problems"]]


def test_malformed_json(client: Any) -> None:
    response = client.post(T, content=b'{"meta": {"name": ', headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == 400 and "malformed JSON" in body["details"]


@pytest.mark.parametrize("payload", [b"[]", b'"text"', b"42", b"null"])
def test_a_body_that_is_not_an_object(client: Any, payload: bytes) -> None:
    response = client.post(T, content=payload, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["details"]


def test_a_body_that_is_not_json(client: Any) -> None:
    response = client.post(
        T, content=b"meta=1", headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    assert response.status_code == 400
    assert "application/json" in response.json()["details"]


def test_every_problem_is_named_at_once(client: Any) -> None:
    body = {
        "meta": {"name": "ok", "scopeType": "system", "colour": "red"},
        "spec": {
            "numWorkers": "2",
            "compute": {"gpus": 1, "cpuCoreRequest": -1},
            "ports": [{"container": 70000, "serviceType": "Nope"}],
            "imagePullPolicy": "Sometimes",
        },
    }
    response = client.post(T, json=body)
    assert response.status_code == 400
    assert sorted(_problems(response)) == sorted(
        [
            "meta.colour",
            "spec.numWorkers",
            "spec.compute.gpus",
            "spec.compute.cpuCoreRequest",
            "spec.ports[0].container",
            "spec.ports[0].serviceType",
            "spec.imagePullPolicy",
        ]
    )
    assert "spec.compute.gpus: unknown field 'gpus'" in response.json()["details"]


def test_an_unknown_field_gets_the_did_you_mean_a_file_gets(client: Any) -> None:
    """The API words an unknown field as the loader does a file's: the closest field of its object."""
    body = {
        "meta": {"name": "typo", "scopeType": "system"},
        "spec": {"distributedFramework": "PyTorch", "numWorker": 2, "compute": {"gpuDevicesRequests": 1}},
    }
    problems = client.post(T, json=body).json()["problems"]
    assert {p["field"]: (p["message"], p["expected"]) for p in problems} == {
        "spec.numWorker": (
            "unknown field 'numWorker' (did you mean 'numWorkers'?)",
            "'numWorkers' or another field of this section",
        ),
        "spec.compute.gpuDevicesRequests": (
            "unknown field 'gpuDevicesRequests' (did you mean 'gpuDevicesRequest'?)",
            "'gpuDevicesRequest' or another field of this section",
        ),
    }
    # Nothing close: every field of the object is listed.
    far = client.post("/api/v1/org-unit/departments", json={"name": "d9", "zzzzzz": 1}).json()["problems"]
    assert far[0]["message"] == "unknown field 'zzzzzz'" and far[0]["expected"].startswith("one of: ")
    assert "resources" in far[0]["expected"]


@pytest.mark.parametrize(
    "path",
    [
        f"{T}/nope",
        f"{T}/nope/explain",
        "/api/v1/workloads/distributed/123",
        "/api/v1/asset/environment/xyz",
        "/api/v1/org-unit/departments/abc",
        "/api/v1/org-unit/projects/-1",
        "/api/v1/defaults/projects/1e3",
    ],
)
def test_invalid_ids_in_paths(client: Any, path: str) -> None:
    """A segment that is not an id is no path of the service (test_service_routing.py sweeps every route)."""
    response = client.get(path)
    assert response.status_code == 404
    assert response.json() == {"code": 404, "message": "No such endpoint."}


@pytest.mark.parametrize("name", ["", "x" * 254, "has space", "-lead"])
def test_names_out_of_range(client: Any, name: str) -> None:
    for url, body in (
        ("/api/v1/org-unit/departments", {"name": name}),
        ("/api/v1/org-unit/projects", {"name": name, "parentId": "1"}),
        ("/api/v1/asset/compute", {"meta": {"name": name, "scope": "tenant"}, "spec": {}}),
        (T, {"meta": {"name": name, "scopeType": "system"}}),
    ):
        response = client.post(url, json=body)
        assert response.status_code == 400, url
        assert _problems(response) in (["name"], ["meta.name"])


def test_oversize_bodies(client: Any) -> None:
    big = {
        "meta": {"name": "big", "scopeType": "system", "description": "x"},
        "spec": {"args": "a" * (1 << 20)},
    }
    response = client.post(T, json=big)
    assert response.status_code == 413
    assert response.json()["code"] == 413
    assert client.get("/api/v1/workload-templates/count").status_code == 200
    # Just under the body's limit, each text within its own bound (an environment variable's value: 131,072)
    variables = [{"name": f"V{n}", "value": "a" * 120_000} for n in range(8)]
    spec = {"environmentVariables": variables}
    just_under = {"meta": {"name": "fits", "scopeType": "system"}, "spec": spec}
    assert 900_000 < len(json.dumps(just_under)) < 1 << 20
    assert client.post(T, json=just_under).status_code == 202


def test_an_oversize_streamed_body_on_a_real_server(app: Any, live_server: Any) -> None:
    """Without Content-Length (chunked), the body is cut off once it passes the limit."""

    def chunks() -> Iterator[bytes]:
        yield b'{"meta": {"name": "streamed", "scopeType": "system"}, "spec": {"args": "'
        for _ in range(80):
            yield b"a" * 16384
        yield b'"}}'

    with (
        live_server(app) as server,
        httpx.Client(base_url=server.url, headers=bearer(ADMIN), timeout=LIVE_TIMEOUT) as http,
    ):
        response = http.post(T, content=chunks(), headers={"Content-Type": "application/json"})
        assert response.status_code == 413
        free = {"templateName": "streamed", "scopeType": "system"}
        assert http.get("/api/v1/workload-templates/name-availability", params=free).status_code == 204


def test_unknown_routes_and_methods(client: Any) -> None:
    missing = client.get("/api/v1/nothing")
    assert missing.status_code == 404 and set(missing.json()) == {"code", "message"}
    wrong = client.put("/api/v1/workload-templates/count")
    assert wrong.status_code == 405 and wrong.json()["code"] == 405


def test_a_failure_mid_request_writes_nothing(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The template row is inserted, then the request breaks: 500, no traceback, and no template."""

    def boom(self: Repository, template_id: str, asset_ids: Any) -> None:
        raise RuntimeError("disk on fire at /secret/path")

    monkeypatch.setattr(Repository, "set_template_assets", boom)
    with open_client(app) as c:
        c.event_hooks = {"request": [], "response": []}
        response = c.post(T, json={"meta": {"name": "half", "scopeType": "system"}})
        assert response.status_code == 500
        assert response.json() == {"code": 500, "message": "Something went wrong."}
        assert "secret" not in response.text
        monkeypatch.undo()
        free = c.get(
            "/api/v1/workload-templates/name-availability",
            params={"templateName": "half", "scopeType": "system"},
        )
        assert free.status_code == 204


def test_a_refused_workload_leaves_nothing(client: Any, ids: Ids) -> None:
    body = {
        "name": "refused",
        "projectId": ids.projects["vision"],
        "clusterId": CLUSTER,
        "spec": {"image": "x"},
    }
    assert client.post(T.replace("workload-templates", "workloads"), json=body).status_code == 400
    body["spec"]["distributedFramework"] = "JAX"
    assert (
        client.post("/api/v1/workloads/distributed", json=body).status_code == 202
    )  # the name was never taken


def test_an_unavailable_database_is_a_503(app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every connection the service opens fails once the database goes down (the revision feed's and the
    routes' alike), so no route can answer from the database and no answer cached before is given back.

    Patched where every read starts (``Engine.connect``), not on one repository method: the list route
    once read ``Repository.templates`` and now reads ``template_heads``, and a patch of the old method
    left the database reachable (the test then answered 200)."""

    def down(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("SELECT 1", {}, ConnectionError("could not connect"))

    with open_client(app) as c:
        c.event_hooks = {"request": [], "response": []}
        before = c.get(T)
        assert before.status_code == 200 and before.headers["x-template-engine-cache"] == "miss"
        assert c.get(T).headers["x-template-engine-cache"] == "hit"  # cached while the database is up
        monkeypatch.setattr(Engine, "connect", down)
        for url in (T, f"{T}/{UUID}"):
            response = c.get(url)
            assert response.status_code == 503, url
            assert response.json() == {"code": 503, "message": "Please try again in few minutes."}
            assert "x-template-engine-cache" not in response.headers


def test_error_bodies_are_json_with_code_and_message(client: Any) -> None:
    for response in (
        client.get(f"{T}/{UUID}"),
        client.post(T, json={}),
        client.get(T, headers={"Authorization": "Bearer nope"}),
    ):
        body = json.loads(response.text)
        assert body["code"] == response.status_code and isinstance(body["message"], str)


@pytest.mark.parametrize(
    ("url", "body", "field"),
    [
        (
            T,
            {"meta": {"name": "huge", "scopeType": "system"}, "spec": {"numWorkers": "N"}},
            "spec.numWorkers",
        ),
        (
            f"{T}/preview",
            {"meta": {"name": "huge", "scopeType": "system"}, "spec": {"maxReplicas": "N"}},
            "spec.maxReplicas",
        ),
        (
            "/api/v1/defaults/system",
            {"spec": {"compute": {"gpuDevicesRequest": "N"}}},
            "spec.compute.gpuDevicesRequest",
        ),
        (
            "/api/v1/asset/compute",
            {"meta": {"name": "huge", "scope": "tenant"}, "spec": {"gpuDevicesRequest": "N"}},
            "spec.gpuDevicesRequest",
        ),
    ],
)
def test_a_400_digit_integer_is_refused_with_its_field(client: Any, url: str, body: Any, field: str) -> None:
    """Issue 17: a 400-digit numWorkers was stored; Run:ai's integers are int32 or int64 (the model's bounds,
    tests/test_integer_bounds.py), so every door refuses it."""
    content = json.dumps(body).replace('"N"', "9" * 400).encode()
    method = "PATCH" if url.startswith("/api/v1/defaults") else "POST"
    response = client.request(method, url, content=content, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    (problem,) = response.json()["problems"]
    assert problem["field"] == field
    # The asset's spec is checked by the folder's model after its translation: the bound is in "expected".
    assert "less than or equal to 2147483647" in problem["message"] + problem.get("expected", "")


def test_an_unknown_asset_is_named_with_its_article(client: Any) -> None:
    body = {
        "meta": {"name": "no-such-asset", "scopeType": "system"},
        "spec": {"distributedFramework": "PyTorch", "numWorkers": 1},
        "assets": {"environment": "nope", "compute": "nope-either"},
    }
    problems = {p["field"]: p["expected"] for p in client.post(T, json=body).json()["problems"]}
    assert problems == {
        "assets.environment": "the name of an environment asset",
        "assets.compute": "the name of a compute asset",
    }


@pytest.mark.parametrize(
    ("expression", "why"),
    [
        ("{{ 1 / 0 }}", "the expression divides by zero"),
        ("{{ 'a' + 1 }}", "the expression applies an operation to a value of a type it does not take"),
    ],
)
def test_an_expression_python_refuses_is_said_alike_by_the_api_and_the_cli(
    client: Any, ids: Ids, tmp_path: Any, expression: str, why: str
) -> None:
    """The API's preview and save say what ``template-engine preview`` says, at the same field, with no
    Python exception class name (issue 21)."""
    from click.testing import CliRunner

    from template_engine.cli import main

    project = ids.projects["vision"]
    spec = {"image": "python:3.11", "distributedFramework": "PyTorch", "workingDir": expression}
    template = {"meta": {"name": "expr", "scopeType": "project", "scopeId": str(project)}, "spec": spec}
    preview = client.post(f"{T}/preview", json=template)
    assert preview.status_code == 200, preview.text
    issues = preview.json()["runnable"]["issues"]
    message = f"combinedSpec cannot render {expression!r}: {why}"
    assert [(i["field"], i["message"].split(" (")[0]) for i in issues] == [("workingDir", message)]
    assert "Error" not in preview.text
    root = tmp_path / "org"
    (root / "projects/vision/templates").mkdir(parents=True)
    (root / "org.yaml").write_text("departments:\n- name: research\n  projects: [vision]\n")
    body = {"meta": {"name": "expr"}, "spec": spec}
    (root / "projects/vision/templates/expr.yaml").write_text(json.dumps(body))
    cli = CliRunner().invoke(main, ["preview", "--root", str(root), "-p", "vision", "-t", "expr"])
    assert cli.exit_code == 2
    assert cli.stderr.splitlines()[0].split(" (")[0] == f"error: {message}"


_NOT_OBJECTS = ["abc", [], 1, 1.5, True, False, 0]


@pytest.mark.parametrize("value", _NOT_OBJECTS)
@pytest.mark.parametrize("method", ["preview", "create", "replace", "patch"])
def test_a_template_meta_that_is_not_an_object_is_a_400_at_meta(
    client: Any, ids: Ids, method: str, value: Any
) -> None:
    """A number or a boolean as ``meta`` was a 500 (``TypeError`` in ``_document``); a string or a list was
    already a 400. Every one now says at ``meta`` that an object was expected."""
    body = {"meta": value, "spec": {"distributedFramework": "PyTorch"}}
    if method in ("replace", "patch"):
        made = client.post(T, json={"meta": {"name": "meta-target", "scopeType": "system"}})
        assert made.status_code == 202, made.text
        response = client.request(
            method.replace("replace", "put"), f"{T}/{made.json()['meta']['id']}", json=body
        )
    else:
        response = client.post(f"{T}/preview" if method == "preview" else T, json=body)
    assert response.status_code == 400, response.text
    problems = {p["field"]: p for p in response.json()["problems"]}
    assert "meta" in problems, problems
    said = problems["meta"]["message"] + problems["meta"].get("expected", "")
    assert "dictionary" in said or "object" in said, said


@pytest.mark.parametrize("value", _NOT_OBJECTS)
@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("PATCH", "/api/v1/defaults/system", {"spec": "V"}),
        ("PUT", "/api/v1/defaults/system", {"spec": "V"}),
        ("POST", "/api/v1/asset/compute", {"meta": "V", "spec": {}}),
        ("POST", "/api/v1/asset/compute", {"meta": {"name": "c9", "scope": "tenant"}, "spec": "V"}),
        ("POST", "/api/v1/asset/environment", {"meta": "V", "spec": {"image": "x"}}),
        ("PUT", "/api/v2/policy/distributed", {"meta": "V", "policy": {}}),
        ("PUT", "/api/v2/policy/distributed", {"meta": {"scope": "tenant"}, "policy": "V"}),
        ("PATCH", "/api/v2/policy/distributed", {"meta": "V", "policy": {}}),
        ("PATCH", "/api/v2/policy/distributed", {"meta": {"scope": "tenant"}, "policy": "V"}),
    ],
)
def test_a_meta_or_spec_that_is_not_an_object_is_a_400_on_every_template_like_write(
    client: Any, method: str, url: str, body: dict[str, Any], value: Any
) -> None:
    """The defaults, assets and policies take ``meta``/``spec``/``policy`` objects too: anything else is a
    400 naming the field, never a 500."""
    sent = {k: (value if v == "V" else v) for k, v in body.items()}
    response = client.request(method, url, json=sent)
    assert response.status_code == 400, (sent, response.text)
    fields = [p.get("field", "") for p in response.json().get("problems", [])]
    bad = next(k for k, v in body.items() if v == "V")
    assert any(f == bad or f.startswith(bad + ".") for f in fields), (sent, response.json())


def test_a_yaml_1_1_text_number_gets_the_loaders_hint_at_the_api(client: Any) -> None:
    """A YAML form's ``1e308`` reaches the API as text: its 400 says what ``validate`` says of it."""
    body = {"meta": {"name": "exp", "scopeType": "system"}, "spec": {"compute": {"cpuCoreLimit": "1e308"}}}
    (problem,) = client.post(f"{T}/preview", json=body).json()["problems"]
    assert problem["field"] == "spec.compute.cpuCoreLimit"
    assert "(got '1e308'; YAML reads 1e308 as text; write 1.0e+308)" in problem["message"]


def test_a_refusal_carries_its_reason_from_one_table_of_statuses() -> None:
    from template_engine.service.errors import MESSAGES, REASONS, ApiError, Reason

    assert ApiError(404).reason is Reason.NOT_FOUND
    assert ApiError(400, "The request is not valid.").reason is Reason.INVALID
    assert ApiError(412).reason is Reason.STALE and ApiError(413).reason is Reason.TOO_LARGE
    assert ApiError(500).reason is ApiError(418).reason is Reason.FAILED
    assert set(MESSAGES) - set(REASONS) == {500}  # every status the service answers has its reason
