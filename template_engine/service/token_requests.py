"""A token request (Run:ai's ``TokenRequest``) checked and answered: an application logs in with its client
credentials (``grantType`` ``app_token`` or ``client_credentials``, the pair spelled as Run:ai's document or
the SDK spells it); every problem of the body in one 400, wrong credentials a 400 of their own.
"""

from __future__ import annotations

from typing import Any

from template_engine.errors import Problem
from template_engine.service.auth import Authenticator
from template_engine.service.errors import ApiError, bad_request

GRANTS = ("app_token", "client_credentials")


#: Run:ai's ``TokenRequestGrantTypeEnum``: the grants its document names.
RUNAI_GRANTS = (*GRANTS, "refresh_token", "exchange_token", "password", "external_token_exchange")


#: The client id's and the secret's keys, by pair: Run:ai's document's, then the SDK's spelling.
PAIRS = (("clientID", "clientSecret"), ("appID", "appSecret"), ("AppId", "AppSecret"))


IDS = tuple(pair[0] for pair in PAIRS)


SECRETS = tuple(pair[1] for pair in PAIRS)


#: The keys of Run:ai's ``TokenRequest`` for the grants this service does not give.
OTHER_GRANTS_KEYS = ("code", "redirectUri", "refreshToken", "username", "password", "externalToken")


KEYS = ("grantType", *IDS, *SECRETS)


REFUSED = "Invalid client credentials."


_EXPECTED = "grantType, and clientID with clientSecret (or AppId with AppSecret, or appID with appSecret)"


def _key_problems(raw: dict[str, Any]) -> list[Problem]:
    problems = []
    for key, value in raw.items():
        if key in OTHER_GRANTS_KEYS:
            problems.append(
                Problem(
                    f"{key} belongs to a grant this service does not give: it gives tokens for an "
                    "application's client credentials only",
                    (key,),
                    None,
                    _EXPECTED,
                )
            )
        elif key not in KEYS:
            meant = [k for k in (*KEYS, *OTHER_GRANTS_KEYS) if k.lower() == key.lower()]
            message = (
                f"unknown field: keys are case-sensitive, the field is spelled {' or '.join(meant)}"
                if meant
                else "unknown field"
            )
            problems.append(Problem(message, (key,), None, _EXPECTED))
        elif not isinstance(value, str):
            problems.append(Problem("must be a string", (key,), None, "a string"))
    return problems


def _grant_problems(raw: dict[str, Any]) -> list[Problem]:
    grant = raw.get("grantType")
    if not isinstance(grant, str) or grant in GRANTS:
        return []
    known = grant in RUNAI_GRANTS
    what = "a grant this service does not give" if known else "not one of Run:ai's grant types"
    return [Problem(f"{grant!r} is {what}", ("grantType",), None, " or ".join(GRANTS))]


def _pair_problems(raw: dict[str, Any]) -> list[Problem]:
    problems = []
    for what, keys in (("client id", IDS), ("secret", SECRETS)):
        given = [key for key in keys if key in raw]
        if len(given) > 1:
            problems.append(
                Problem(
                    f"the {what} is given {len(given)} times ({', '.join(given)}): give it once",
                    (given[1],),
                    None,
                    f"one of {', '.join(keys)}",
                )
            )
    pairs = {index for index, pair in enumerate(PAIRS) for key in pair if key in raw}
    if len(pairs) > 1 and not problems:
        named = [key for pair in PAIRS for key in pair if key in raw]
        problems.append(
            Problem(
                f"{' and '.join(named)} mix two pairs of credentials: give one pair",
                (named[1],),
                None,
                _EXPECTED,
            )
        )
    return problems


def _one(raw: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    value = next((raw[key] for key in keys if key in raw), None)
    return value if isinstance(value, str) and value else None


def login(authenticator: Authenticator, raw: dict[str, Any]) -> tuple[str, int]:
    """The bearer token (and its lifetime in seconds) of the application a token request names; a 400 naming
    every problem of the request, or refusing its credentials."""
    problems = [*_key_problems(raw), *_grant_problems(raw), *_pair_problems(raw)]
    if problems:
        raise bad_request(problems, "The token request is not valid.")
    client_id, secret = _one(raw, IDS), _one(raw, SECRETS)
    if client_id is None or secret is None:
        raise ApiError(400, "The request has no client credentials: send clientID and clientSecret.")
    issued = authenticator.login(client_id, secret)
    if issued is None:
        raise ApiError(400, REFUSED)
    return issued
