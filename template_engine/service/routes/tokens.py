"""Client-credentials login: ``POST /api/v1/token`` (Run:ai's ``grant_token``, the SDK's login).

The body is Run:ai's ``TokenRequest``; its keys are matched case-insensitively, as Run:ai's server does:
the SDK sends ``{"grantType": "app_token", "AppId": ..., "AppSecret": ...}``, Run:ai's document spells them
``appID``/``appSecret`` and, with ``grantType: client_credentials``, ``clientID``/``clientSecret``.  The
answer is ``{"accessToken": <a signed JWT>, "expiresIn": <seconds>}``; wrong or missing credentials are a
400 ``Error``, the only refusal Run:ai's ``/api/v1/token`` declares (a 401 would make the SDK retry the
login three times before it gives up).  No token is needed to log in.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from template_engine.service.auth import Authenticator
from template_engine.service.bodies import documented
from template_engine.service.errors import ApiError
from template_engine.service.routes.common import JsonObject, JsonRoute, errors, json_response
from template_engine.service.schemas import TokenOut, TokenRequestIn

router = APIRouter(prefix="/api/v1", tags=["Tokens"], route_class=JsonRoute)

GRANTS = frozenset({"app_token", "client_credentials"})
_IDS = ("appid", "clientid")
_SECRETS = ("appsecret", "clientsecret")
REFUSED = "Invalid client credentials."


def _credential(body: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for key, value in body.items():
        if key.lower() in names and isinstance(value, str) and value:
            return value
    return None


@router.post(
    "/token",
    response_model=TokenOut,
    responses={k: v for k, v in errors().items() if k not in (401, 403)},
    openapi_extra=documented(TokenRequestIn),
)
def grant_token(request: Request, raw: JsonObject) -> JSONResponse:
    """Log an application in with its client credentials; answers a bearer token for the API."""
    grant = next((v for k, v in raw.items() if k.lower() == "granttype"), None)
    if grant is not None and (not isinstance(grant, str) or grant not in GRANTS):
        raise ApiError(400, f"grantType {grant!r} is not supported: use app_token or client_credentials.")
    client_id, secret = _credential(raw, _IDS), _credential(raw, _SECRETS)
    if client_id is None or secret is None:
        raise ApiError(400, "The request has no client credentials: send AppId and AppSecret.")
    authenticator: Authenticator = request.app.state.authenticator
    issued = authenticator.login(client_id, secret)
    if issued is None:
        raise ApiError(400, REFUSED)
    token, lifetime = issued
    return json_response({"accessToken": token, "expiresIn": lifetime})
