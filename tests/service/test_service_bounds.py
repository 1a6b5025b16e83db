"""Bounds a security review asked for: names that fit a file name of an export, bodies in UTF-8 only, a body's
work bounded by its number of JSON values before it is decoded, and ``HEAD`` answered like ``GET``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from conftest import CLUSTER, VIEWER, Ids, MakeApp, bearer, open_client
from hypothesis import given, settings
from hypothesis import strategies as st
from waiting import LIVE_TIMEOUT

from template_engine.cli import main
from template_engine.errors import InputError
from template_engine.loader.sources import MappingSource
from template_engine.loader.tree import load_org
from template_engine.service import documents
from template_engine.service.documents import MAX_VALUES, count_values
from template_engine.service.schemas import NAME_MAX_LENGTH

T = "/api/v1/workload-templates/distributed"
ORG = "/api/v1/org-unit"
AVAILABLE = "/api/v1/workload-templates/name-availability"
JSON = {"Content-Type": "application/json"}


def _fields(response: Any) -> list[str]:
    return [p.get("field", "") for p in response.json().get("problems", [])]


# -- names: each becomes a file or folder name of an export -------------------------------------------------

#: 250 characters and ".yaml" make 255 bytes, the most a file name has on most file systems.
LONGEST = "n" * 250
TOO_LONG = "n" * 251


def test_the_longest_name_and_its_yaml_suffix_fit_a_file_name() -> None:
    assert NAME_MAX_LENGTH == 250 and len(f"{LONGEST}.yaml".encode()) == 255


def _name_writes(client: Any, ids: Ids) -> list[tuple[str, str, Any, str, int]]:
    """Every write that takes a name: method, URL, a body with ``"%s"`` where the name goes, the field that
    names it, and the status the longest name gets (0: not tried)."""
    template = client.post(T, json={"meta": {"name": "short", "scopeType": "system"}}).json()["meta"]["id"]
    asset = client.post(
        "/api/v1/asset/compute", json={"meta": {"name": "short", "scope": "tenant"}, "spec": {}}
    )
    asset = asset.json()
    asset_id = asset["meta"]["id"]
    department = ids.departments["research"]
    project = ids.projects["vision"]
    reference = {"meta": {"name": "x", "scopeType": "system"}, "assets": {"compute": "%s"}}
    return [
        ("POST", T, {"meta": {"name": "%s", "scopeType": "system"}}, "meta.name", 202),
        ("PUT", f"{T}/{template}", {"meta": {"name": "%s"}}, "meta.name", 200),
        ("PATCH", f"{T}/{template}", {"meta": {"name": "%s"}}, "meta.name", 200),
        ("POST", T, reference, "assets.compute", 0),
        (
            "POST",
            "/api/v1/asset/compute",
            {"meta": {"name": "%s", "scope": "tenant"}, "spec": {}},
            "meta.name",
            202,
        ),
        (
            "PUT",
            f"/api/v1/asset/compute/{asset_id}",
            {"meta": {"name": "%s"}, "spec": {}},
            "meta.name",
            202,
        ),
        ("POST", f"{ORG}/departments", {"name": "%s"}, "name", 201),
        ("PUT", f"{ORG}/departments/{department}", {"name": "%s"}, "name", 200),
        ("POST", f"{ORG}/projects", {"name": "%s", "parentId": department}, "name", 201),
        ("PUT", f"{ORG}/projects/{project}", {"name": "%s"}, "name", 200),
    ]


def _with_name(body: Any, name: str) -> Any:
    return json.loads(json.dumps(body).replace('"%s"', json.dumps(name)))


def test_every_name_is_at_most_the_length_an_export_can_write(client: Any, ids: Ids) -> None:
    for index, (method, url, body, field, status) in enumerate(_name_writes(client, ids)):
        refused = client.request(method, url, json=_with_name(body, TOO_LONG))
        assert refused.status_code == 400, (method, url, refused.text)
        assert f"at most {NAME_MAX_LENGTH} characters" in refused.json()["details"], (method, url)
        if field:
            assert _fields(refused) == [field], (method, url)
        if status:  # a name of its own for each write: no two of them collide
            longest = chr(ord("a") + index) * NAME_MAX_LENGTH
            taken = client.request(method, url, json=_with_name(body, longest))
            assert taken.status_code == status, (method, url, taken.text)


@pytest.mark.parametrize("name", [TOO_LONG, "n" * 253, "n" * 254])
def test_name_availability_holds_names_to_the_same_length(client: Any, name: str) -> None:
    check = client.get(AVAILABLE, params={"templateName": name, "scopeType": "system"})
    assert check.status_code == 400 and _fields(check) == ["templateName"]
    if len(name) <= 253:  # the words of the name rule, as create says them
        assert f"at most {NAME_MAX_LENGTH} characters" in check.json()["details"]
    assert client.get(AVAILABLE, params={"templateName": LONGEST, "scopeType": "system"}).status_code == 204


def test_a_folder_with_a_name_too_long_is_refused_by_the_loader() -> None:
    files = {
        "org.yaml": "departments: []\n",
        f"system/templates/{TOO_LONG}.yaml": f"meta:\n  name: {TOO_LONG}\n",
        f"system/templates/{LONGEST}.yaml": f"meta:\n  name: {LONGEST}\n",
    }
    org = load_org(MappingSource(files))
    assert list(org.broken) == [f"system/templates/{TOO_LONG}.yaml"]
    problem = org.broken[f"system/templates/{TOO_LONG}.yaml"][0]
    assert problem.path == ("meta", "name") and f"at most {NAME_MAX_LENGTH}" in problem.render()
    for org_yaml in (
        f"departments:\n- name: {TOO_LONG}\n",
        f"departments:\n- name: d\n  projects: [{TOO_LONG}]\n",
    ):
        with pytest.raises(InputError, match=f"{NAME_MAX_LENGTH}"):
            load_org(MappingSource({"org.yaml": org_yaml}))


def test_the_longest_names_are_exported_and_imported(
    make_app: MakeApp, database_url: str, tmp_path: Path
) -> None:
    runner = CliRunner()
    names = {kind: kind[0] * NAME_MAX_LENGTH for kind in ("department", "project", "asset", "template")}
    with open_client(make_app(database_url)) as admin:
        dept = admin.post(f"{ORG}/departments", json={"name": names["department"]})
        assert dept.status_code == 201, dept.json()
        body = {"name": names["project"], "parentId": dept.json()["id"]}
        project = admin.post(f"{ORG}/projects", json=body)
        assert project.status_code == 201, project.json()
        asset = admin.post(
            "/api/v1/asset/compute", json={"meta": {"name": names["asset"], "scope": "tenant"}, "spec": {}}
        )
        assert asset.status_code == 202, asset.json()
        for scope, scope_id in (("department", dept.json()["id"]), ("project", project.json()["id"])):
            meta = {"name": names["template"], "scopeType": scope, "scopeId": scope_id}
            created = admin.post(T, json={"meta": meta, "assets": {"compute": names["asset"]}})
            assert created.status_code == 202, created.json()
    out = tmp_path / "out"
    result = runner.invoke(main, ["db", "export", "--root", str(out), "--database-url", database_url])
    assert result.exit_code == 0, result.output
    assert (out / f"assets/computes/{names['asset']}.yaml").is_file()
    assert (out / f"projects/{names['project']}/templates/{names['template']}.yaml").is_file()
    assert (out / f"departments/{names['department']}/templates/{names['template']}.yaml").is_file()
    back = f"sqlite:///{tmp_path / 'back.db'}"
    result = runner.invoke(main, ["db", "import", "--root", str(out), "--database-url", back])
    assert result.exit_code == 0, result.output


# -- bodies are UTF-8 --------------------------------------------------------------------------------------

BODY = '{"meta": {"name": "encoded", "scopeType": "system", "description": "caf\u00e9 \U0001f680"}}'


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_a_body_in_utf_16_or_utf_32_is_refused(client: Any, encoding: str) -> None:
    response = client.post(T, content=BODY.encode(encoding), headers=JSON)
    assert response.status_code == 400, response.text
    assert "the body is not UTF-8 text" in response.json()["details"]
    free = client.get(AVAILABLE, params={"templateName": "encoded", "scopeType": "system"})
    assert free.status_code == 204


def test_a_body_with_bytes_that_are_not_utf_8_is_refused(client: Any) -> None:
    for raw in (b"\xed\xa0\x80", b"\xff", b"\xc3"):  # an encoded surrogate, a byte UTF-8 never has, a cut one
        body = b'{"meta": {"name": "x", "scopeType": "system", "description": "' + raw + b'"}}'
        response = client.post(T, content=body, headers=JSON)
        assert response.status_code == 400 and "not UTF-8" in response.json()["details"], raw


def test_a_utf_8_body_is_taken_with_or_without_a_byte_order_mark(client: Any) -> None:
    assert client.post(T, content=BODY.encode("utf-8-sig"), headers=JSON).status_code == 202
    again = BODY.replace('"encoded"', '"encoded-2"').encode("utf-8")
    created = client.post(T, content=again, headers=JSON)
    assert created.status_code == 202 and created.json()["meta"]["description"] == "caf\u00e9 \U0001f680"


# -- a body's work is bounded by its number of values --------------------------------------------------------


def _values(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_values(v) for v in value)
    return 1


_KEYS = st.text(st.sampled_from('ab"\\{}[],: \n\t\u00e9\U0001f680'), max_size=6)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _KEYS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(_KEYS, children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=_JSON, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_values_are_counted_on_the_bytes_exactly(value: Any, indent: int | None, ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert count_values(text.encode("utf-8")) == _values(value)


def _env_preview(count: int) -> dict[str, Any]:
    """A preview body of ``7 + 3 * count`` values, without any expression."""
    env = [{"name": f"V{i}", "value": "x"} for i in range(count)]
    spec = {"image": "x:1", "environmentVariables": env}
    return {"meta": {"name": "big", "scopeType": "system"}, "spec": spec}


def test_a_body_of_too_many_values_is_refused_before_it_is_decoded(
    client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoded: list[int] = []
    hook = documents._object

    def counting(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        decoded.append(len(pairs))
        return hook(pairs)

    monkeypatch.setattr(documents, "_object", counting)
    body = _env_preview(25_000)  # 840 KB: a viewer's preview took 2.3 s and 135 MB
    sent = json.dumps(body).encode()
    assert len(sent) < 1024 * 1024 and count_values(sent) == _values(body) == 75_007
    response = client.post(f"{T}/preview", json=body, headers=bearer(VIEWER))
    assert response.status_code == 413
    assert response.json()["message"] == f"The request body holds more than {MAX_VALUES} JSON values."
    assert "the body holds 75007 JSON values" in response.json()["details"]
    assert decoded == []  # refused on its bytes: not one object was decoded

    # The limit itself is taken: a body of exactly MAX_VALUES values is decoded (and refused for its field).
    extra = [0] * (MAX_VALUES - 3)  # with the object, "x" and the array
    at_limit = {"name": "x", "unknown": extra}
    assert _values(at_limit) == MAX_VALUES
    response = client.post(f"{ORG}/departments", json=at_limit)
    assert response.status_code == 400 and _fields(response) == ["unknown"]
    assert decoded != []
    decoded.clear()
    over = client.post(f"{ORG}/departments", json={**at_limit, "unknown": [*extra, 0]})
    assert over.status_code == 413 and decoded == []


def test_deep_nesting_beyond_the_value_limit_is_a_413(client: Any) -> None:
    deep = client.post(T, content=b'{"spec": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", headers=JSON)
    assert deep.status_code == 413 and "100001 JSON values" in deep.json()["details"]


# -- HEAD is GET without the body ----------------------------------------------------------------------------


def test_head_is_answered_like_get_without_a_body(client: Any, ids: Ids) -> None:
    for url in ("/health", T, f"{T}/{ids.template('mpi-horovod')}", "/openapi.json"):
        got, head = client.get(url), client.head(url)
        assert head.status_code == got.status_code == 200, url
        assert head.content == b"", url
        for header in ("content-type", "content-length", "etag"):
            assert head.headers.get(header) == got.headers.get(header), (url, header)
    anonymous = httpx.Client(transport=client._transport, base_url=str(client.base_url))
    unauthorized = anonymous.head(T)
    assert unauthorized.status_code == 401 and unauthorized.content == b""
    assert anonymous.head("/health").status_code == 200
    # Where there is no GET, HEAD is not one either: a 405 naming what the path takes, or a 404.
    token = client.head("/api/v1/token")
    assert token.status_code == 405 and token.content == b""
    assert token.headers["Allow"] == "POST, OPTIONS"
    missing = client.head("/api/v1/nothing")
    assert missing.status_code == 404 and missing.content == b""


def test_head_on_a_real_server(app: Any, live_server: Any) -> None:
    """Through uvicorn: the answer to HEAD has the GET's Content-Length and no body, and the connection
    is still usable for the next request."""
    with live_server(app) as server, httpx.Client(base_url=server.url, timeout=LIVE_TIMEOUT) as http:
        got = http.get("/health")
        head = http.head("/health")
        assert head.status_code == 200 and head.content == b""
        assert head.headers["content-length"] == got.headers["content-length"] != "0"
        assert http.get("/health").json() == got.json()


def test_workload_heads(client: Any, ids: Ids) -> None:
    body = {"name": "headed", "projectId": ids.projects["vision"], "clusterId": CLUSTER}
    body["spec"] = {"image": "x:1", "distributedFramework": "MPI"}
    workload = client.post("/api/v1/workloads/distributed", json=body).json()["workloadId"]
    for url in (f"/api/v1/workloads/distributed/{workload}", "/api/v1/workloads", "/api/v1/workloads/count"):
        head = client.head(url)
        assert head.status_code == 200 and head.content == b"", url
        assert "HEAD" in client.options(url).headers["Allow"]
