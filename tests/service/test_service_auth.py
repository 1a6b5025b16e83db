"""Access control: bearer tokens, the role matrix, the auth file, and tokens kept out of logs."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    ADMIN,
    APPLIED,
    CLUSTER,
    NLP,
    RESEARCH,
    VIEWER,
    VISION,
    Ids,
    bearer,
)

from template_engine.service.auth import Authenticator, AuthFileError

ROLES = (ADMIN, RESEARCH, APPLIED, VISION, NLP, VIEWER)
T = "/api/v1/workload-templates/distributed"
_names = iter(range(10**6))


def _job(scope: str, scope_id: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": f"job-{next(_names)}", "scopeType": scope}
    if scope_id is not None:
        meta["scopeId"] = scope_id
    return {"meta": meta, "spec": {"image": "x:1", "distributedFramework": "MPI"}}


Call = Callable[[Any, Ids, dict[str, str]], Any]

#: operation -> (call, the status for admin, research admin, applied admin, vision, nlp editors, viewer)
MATRIX: dict[str, tuple[Call, tuple[int, ...]]] = {
    "read a system template": (
        lambda c, i, h: c.get(f"{T}/{i.template('pytorch-elastic')}", headers=h),
        (200, 200, 200, 200, 200, 200),
    ),
    "read a research template": (
        lambda c, i, h: c.get(f"{T}/{i.template('tf-parameter-server', 'department')}", headers=h),
        (200, 200, 403, 200, 200, 200),
    ),
    "read a vision template": (
        lambda c, i, h: c.get(f"{T}/{i.template('vit-finetune', 'project')}", headers=h),
        (200, 200, 403, 200, 403, 200),
    ),
    "read an applied template": (
        lambda c, i, h: c.get(f"{T}/{i.template('xgboost-ctr', 'department')}", headers=h),
        (200, 403, 200, 403, 403, 200),
    ),
    "preview a system template from vision": (
        lambda c, i, h: c.get(
            f"{T}/{i.template('mpi-horovod')}", params={"projectId": i.projects["vision"]}, headers=h
        ),
        (200, 200, 403, 200, 403, 200),
    ),
    "create a system template": (
        lambda c, i, h: c.post(T, json=_job("system"), headers=h),
        (202, 403, 403, 403, 403, 403),
    ),
    "create a research template": (
        lambda c, i, h: c.post(T, json=_job("department", i.departments["research"]), headers=h),
        (202, 202, 403, 403, 403, 403),
    ),
    "create a vision template": (
        lambda c, i, h: c.post(T, json=_job("project", i.projects["vision"]), headers=h),
        (202, 202, 403, 202, 403, 403),
    ),
    "delete a vision template": (
        lambda c, i, h: c.delete(
            f"{T}/{c.post(T, json=_job('project', i.projects['vision'])).json()['meta']['id']}", headers=h
        ),
        (204, 204, 403, 204, 403, 403),
    ),
    "change the system defaults": (
        lambda c, i, h: c.patch("/api/v1/defaults/system", json={"spec": {"backoffLimit": 1}}, headers=h),
        (200, 403, 403, 403, 403, 403),
    ),
    "change research's defaults": (
        lambda c, i, h: c.patch(
            f"/api/v1/defaults/departments/{i.departments['research']}", json={}, headers=h
        ),
        (200, 200, 403, 403, 403, 403),
    ),
    "change vision's defaults": (
        lambda c, i, h: c.patch(f"/api/v1/defaults/projects/{i.projects['vision']}", json={}, headers=h),
        (200, 200, 403, 200, 403, 403),
    ),
    "read research's defaults": (
        lambda c, i, h: c.get(f"/api/v1/defaults/departments/{i.departments['research']}", headers=h),
        (200, 200, 403, 200, 200, 200),
    ),
    "read vision's defaults": (
        lambda c, i, h: c.get(f"/api/v1/defaults/projects/{i.projects['vision']}", headers=h),
        (200, 200, 403, 200, 403, 200),
    ),
    "create a department": (
        lambda c, i, h: c.post("/api/v1/org-unit/departments", json={"name": f"d{next(_names)}"}, headers=h),
        (201, 403, 403, 403, 403, 403),
    ),
    "create a research project": (
        lambda c, i, h: c.post(
            "/api/v1/org-unit/projects",
            json={"name": f"p{next(_names)}", "parentId": i.departments["research"]},
            headers=h,
        ),
        (201, 201, 403, 403, 403, 403),
    ),
    "rename vision": (
        lambda c, i, h: c.put(
            f"/api/v1/org-unit/projects/{i.projects['vision']}", json={"name": "vision"}, headers=h
        ),
        (200, 200, 403, 403, 403, 403),
    ),
    "create an asset": (
        lambda c, i, h: c.post(
            "/api/v1/asset/compute",
            json={"meta": {"name": f"c{next(_names)}", "scope": "tenant"}, "spec": {}},
            headers=h,
        ),
        (202, 403, 403, 403, 403, 403),
    ),
    "list assets": (lambda c, i, h: c.get("/api/v1/asset/datasource", headers=h), (200,) * 6),
    "submit a vision workload": (
        lambda c, i, h: c.post(
            "/api/v1/workloads/distributed",
            json={
                "name": f"w{next(_names)}",
                "projectId": i.projects["vision"],
                "clusterId": CLUSTER,
                "spec": {"image": "x:1", "distributedFramework": "MPI"},
            },
            headers=h,
        ),
        (202, 202, 403, 202, 403, 403),
    ),
}


@pytest.mark.parametrize("operation", list(MATRIX))
def test_role_matrix(client: Any, ids: Ids, operation: str) -> None:
    call, expected = MATRIX[operation]
    got = tuple(call(client, ids, bearer(token)).status_code for token in ROLES)
    assert got == expected
    denied = call(client, ids, bearer(APPLIED))
    if denied.status_code == 403:
        assert denied.json() == {"code": 403, "message": "You do not have sufficient permissions."}


def test_lists_show_what_the_caller_may_read(client: Any) -> None:
    def names(token: str) -> list[str]:
        entries = client.get(T, headers=bearer(token)).json()["entries"]
        return sorted(f"{e['meta']['scopeType']}:{e['meta']['name']}" for e in entries)

    assert names(VISION) == [
        "department:tf-parameter-server",
        "project:vit-finetune",
        "system:mpi-horovod",
        "system:pytorch-elastic",
    ]
    assert len(names(VIEWER)) == len(names(ADMIN)) == 7
    assert [
        d["name"]
        for d in client.get("/api/v1/org-unit/departments", headers=bearer(NLP)).json()["departments"]
    ] == ["research"]
    assert [
        p["name"]
        for p in client.get("/api/v1/org-unit/projects", headers=bearer(RESEARCH)).json()["projects"]
    ] == [
        "vision",
        "nlp",
    ]


def test_created_by_is_the_subject(client: Any, ids: Ids) -> None:
    created = client.post(T, json=_job("project", ids.projects["vision"]), headers=bearer(VISION)).json()
    assert created["meta"]["createdBy"] == "carol"
    patched = client.patch(
        f"{T}/{created['meta']['id']}", json={"spec": {"numWorkers": 2}}, headers=bearer(RESEARCH)
    )
    assert (patched.json()["meta"]["createdBy"], patched.json()["meta"]["updatedBy"]) == ("carol", "bob")


def test_every_endpoint_needs_a_known_token(app: Any, client: Any) -> None:
    """Every operation of the OpenAPI document but ``/health`` and ``/ready`` answers 401 without a known
    bearer token."""
    client.headers.pop("Authorization")
    uuid = "00000000-0000-4000-8000-000000000000"
    checked = 0
    for path, operations in app.openapi()["paths"].items():
        url = re.sub(r"\{(departmentId|projectId)\}", "1", path)
        url = re.sub(r"\{\w+\}", uuid, url)
        for method in operations:
            if path in ("/health", "/ready"):
                assert client.request(method, url).status_code == 200
                assert "security" not in operations[method]
                continue
            if path == "/api/v1/token":  # the login: client credentials in the body, no token
                assert client.request(method, url, json={}).status_code == 400
                assert "security" not in operations[method]
                continue
            assert operations[method]["security"] == [{"HTTPBearer": []}]
            missing = client.request(method, url)
            assert missing.status_code == 401, (method, path)
            assert (
                set(missing.json()) == {"code", "message"} and missing.headers["WWW-Authenticate"] == "Bearer"
            )
            unknown = client.request(method, url, headers=bearer("not-a-token"))
            assert unknown.status_code == 401
            assert unknown.json() == {"code": 401, "message": "Issuer is not familiar."}
            assert client.request(method, url, headers={"Authorization": "Basic YTpi"}).status_code == 401
            checked += 1
    assert checked >= 35
    assert client.get("/openapi.json").status_code == 200


def test_tokens_are_never_logged(client: Any, ids: Ids, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for token in (*ROLES, "wrong-token-123"):
        client.get(f"{T}/{ids.template('mpi-horovod')}", headers=bearer(token))
        client.post(T, json={"meta": {}}, headers=bearer(token))
    text = caplog.text
    assert all(token not in text for token in (*ROLES, "wrong-token-123"))


def test_tokens_are_compared_in_constant_time(monkeypatch: pytest.MonkeyPatch, auth_file: Path) -> None:
    """Every entry's digest is compared (no early exit on a match), always on equal-length digests."""
    authenticator = Authenticator.from_file(auth_file)
    calls: list[tuple[int, int]] = []
    real = hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    for token in (ADMIN, VIEWER, "unknown", "x" * 500):
        calls.clear()
        authenticator.authenticate(token)
        assert calls == [(32, 32)] * len(authenticator)
    assert authenticator.authenticate(RESEARCH) is not None  # a sha256 entry
    assert authenticator.authenticate(hashlib.sha256(RESEARCH.encode()).hexdigest()) is None


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("tokens:\n  - {subject: a, token: secret-1, role: root}\n", "tokens[0].role"),
        (
            "tokens:\n  - {subject: a, token: secret-1, sha256: '" + "0" * 64 + "', role: viewer}\n",
            "exactly one",
        ),
        ("tokens:\n  - {subject: a, token: secret-1, role: department-admin}\n", "department"),
        ("tokens:\n  - {subject: a, token: secret-1, role: viewer, project: p}\n", "project"),
        (
            "tokens:\n  - {subject: a, token: secret-1, role: cluster-admin}\n",
            "role cluster-admin needs cluster",
        ),
        (
            "tokens:\n  - {subject: a, token: secret-1, role: department-admin, department: d, cluster: c}\n",
            "cluster goes with role cluster-admin",
        ),
        ("tokens:\n  - {subject: a, sha256: nothex, role: viewer}\n", "sha256"),
        (
            "tokens:\n  - {subject: a, token: secret-1, role: viewer}\n"
            "  - {subject: b, token: secret-1, role: viewer}\n",
            "repeats",
        ),
        ("tokens: [\n", "not valid YAML"),
        ("users: []\n", "users"),
    ],
)
def test_bad_auth_files(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text(text)
    with pytest.raises(AuthFileError) as caught:
        Authenticator.from_file(path)
    assert fragment in str(caught.value)
    assert "secret-1" not in str(caught.value)


def test_a_missing_auth_file(tmp_path: Path) -> None:
    with pytest.raises(AuthFileError, match="cannot read"):
        Authenticator.from_file(tmp_path / "absent.yaml")
