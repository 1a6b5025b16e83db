"""Client-credentials login: ``POST /api/v1/token`` (Run:ai's ``grant_token``, the SDK's login).

The body is Run:ai's ``TokenRequest``, read strictly: its keys are the document's, spelled as the document
spells them (``grantType``, ``clientID``/``clientSecret``, the deprecated ``appID``/``appSecret``), plus
``AppId``/``AppSecret``, the spelling Run:ai's Python SDK sends (runapy 1.224.0's ``ApiClient`` logs in with
``{"grantType": "app_token", "AppId": ..., "AppSecret": ...}``).  Every other key is refused with 400 naming
it: a key that differs from one of those only in case (``clientid``, ``APPSECRET``) with the spelling
meant, the document's keys of the grants this service does not give (``refreshToken``, ``code``,
``password``...) as such, anything else as unknown.  A body naming the client id twice (``clientID`` and
``AppId``) or the secret twice (``clientSecret`` and ``AppSecret``), or mixing the two pairs, is refused:
which one counts would be a guess.

The answer is ``{"accessToken": <a signed JWT>, "expiresIn": <seconds>}``; wrong or missing credentials are a
400 ``Error``, the only refusal Run:ai's ``/api/v1/token`` declares (a 401 would make the SDK retry the
login three times before it gives up).  No token is needed to log in.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from template_engine.service.bodies import documented
from template_engine.service.routes.common import JsonObject, JsonRoute, errors, json_response
from template_engine.service.schemas import TokenOut, TokenRequestIn
from template_engine.service.token_requests import login

router = APIRouter(prefix="/api/v1", tags=["Tokens"], route_class=JsonRoute)


@router.post(
    "/token",
    response_model=TokenOut,
    responses={k: v for k, v in errors().items() if k not in (401, 403)},
    openapi_extra=documented(TokenRequestIn),
)
def grant_token(request: Request, raw: JsonObject) -> JSONResponse:
    """Log an application in with its client credentials; answers a bearer token for the API."""
    token, lifetime = login(request.app.state.authenticator, raw)
    return json_response({"accessToken": token, "expiresIn": lifetime})
