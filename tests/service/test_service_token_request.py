"""``POST /api/v1/token``'s body: Run:ai's ``TokenRequest``, strict.

Issue 17 found keys matched without regard to case and a body giving both ``clientSecret`` and
``AppSecret`` accepted.  The keys are the document's (``clientID``, ``clientSecret``, ``appID``,
``appSecret``, ``grantType``) and the SDK's ``AppId``/``AppSecret``; test_sdk.py drives the SDK's own
logins (``runapy.ApiClient`` and ``TokensApi.grant_token``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from template_engine.service.app import create_app
from template_engine.service.auth import DEV_APPLICATION
from template_engine.service.settings import Settings

CLIENT_ID, SECRET, _ = DEV_APPLICATION


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path_factory.mktemp('token') / 'service.db'}"
    with TestClient(create_app(Settings(database_url=url, dev_tokens=True))) as c:
        yield c


@pytest.mark.parametrize(
    "body",
    [
        {"grantType": "client_credentials", "clientID": CLIENT_ID, "clientSecret": SECRET},
        {"grantType": "app_token", "appID": CLIENT_ID, "appSecret": SECRET},
        {"grantType": "app_token", "AppId": CLIENT_ID, "AppSecret": SECRET},  # runapy's ApiClient
        {"clientID": CLIENT_ID, "clientSecret": SECRET},
    ],
)
def test_the_documented_bodies_get_a_token(client: TestClient, body: dict[str, Any]) -> None:
    answer = client.post("/api/v1/token", json=body)
    assert answer.status_code == 200, answer.json()
    token = answer.json()["accessToken"]
    assert client.get("/api/v1/org-unit/departments", headers={"Authorization": f"Bearer {token}"}).is_success


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"grantType": "app_token", "appid": CLIENT_ID, "AppSecret": SECRET}, "appid", "appID or AppId"),
        ({"clientid": CLIENT_ID, "clientSecret": SECRET}, "clientid", "spelled clientID"),
        ({"clientID": CLIENT_ID, "CLIENTSECRET": SECRET}, "CLIENTSECRET", "spelled clientSecret"),
        ({"GrantType": "app_token", "AppId": CLIENT_ID, "AppSecret": SECRET}, "GrantType", "grantType"),
        ({"appId": CLIENT_ID, "AppSecret": SECRET}, "appId", "appID or AppId"),
        (
            {"clientID": CLIENT_ID, "clientSecret": SECRET, "AppSecret": SECRET},
            "AppSecret",
            "secret is given 2 times (clientSecret, AppSecret)",
        ),
        (
            {"clientID": CLIENT_ID, "AppId": CLIENT_ID, "clientSecret": SECRET},
            "AppId",
            "client id is given 2 times (clientID, AppId)",
        ),
        ({"clientID": CLIENT_ID, "appSecret": SECRET}, "appSecret", "mix two pairs"),
        ({"AppId": CLIENT_ID, "AppSecret": SECRET, "scope": "x"}, "scope", "unknown field"),
        ({"AppId": CLIENT_ID, "AppSecret": SECRET, "refreshToken": "r"}, "refreshToken", "grant"),
        ({"grantType": "password", "AppId": CLIENT_ID, "AppSecret": SECRET}, "grantType", "does not give"),
        ({"grantType": "magic", "AppId": CLIENT_ID, "AppSecret": SECRET}, "grantType", "not one of"),
        ({"AppId": 7, "AppSecret": SECRET}, "AppId", "must be a string"),
        ({"AppId": None, "AppSecret": None}, "AppId", "must be a string"),
    ],
)
def test_a_body_that_is_not_run_ai_s_is_refused_naming_the_field(
    client: TestClient, body: dict[str, Any], field: str, says: str
) -> None:
    answer = client.post("/api/v1/token", json=body)
    assert answer.status_code == 400, answer.json()
    assert "accessToken" not in answer.json()
    named = [p for p in answer.json()["problems"] if p["field"] == field]
    assert named and says in named[0]["message"] + (named[0].get("expected") or ""), answer.json()


def test_every_problem_of_a_body_is_answered_at_once(client: TestClient) -> None:
    body = {"clientid": CLIENT_ID, "clientSecret": SECRET, "AppSecret": SECRET, "other": 1}
    answer = client.post("/api/v1/token", json=body).json()
    assert {p["field"] for p in answer["problems"]} == {"clientid", "other", "AppSecret"}


@pytest.mark.parametrize(
    "body",
    [
        {"clientID": CLIENT_ID, "clientSecret": "wrong"},
        {"clientID": CLIENT_ID, "clientSecret": ""},
        {"clientID": CLIENT_ID},
        {},
    ],
)
def test_wrong_or_missing_credentials_are_run_ai_s_400(client: TestClient, body: dict[str, Any]) -> None:
    answer = client.post("/api/v1/token", json=body)
    assert answer.status_code == 400 and "accessToken" not in answer.json()
