"""Short-lived bearer tokens for applications: JWTs signed with HMAC-SHA256 (``HS256``) by the service.

An application logs in with its client credentials (``POST /api/v1/token``) and gets a token of the form
``header.payload.signature`` whose payload names the application (``sub``) and when the token expires
(``exp``, seconds since the epoch).  The token carries no role: every request looks the application up in
the auth file again, so removing an application (and restarting) revokes its tokens.

Run:ai's Python SDK reads ``exp`` from the payload with the *standard* base64 alphabet, so a payload segment
holding ``-`` or ``_`` (the URL-safe alphabet's) would not decode there: :meth:`Signer.issue` draws a new
``jti`` until the segment has neither.  Signatures are compared with :func:`hmac.compare_digest`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass

ISSUER = "template-engine"
_HEADER = {"alg": "HS256", "typ": "JWT"}
#: Tokens live between these bounds (seconds); Run:ai's SDK logs in again when fewer than 60 s remain.
MIN_LIFETIME = 300
MAX_LIFETIME = 86_400
DEFAULT_LIFETIME = 3_600
#: The shortest signing key an auth file may give.
MIN_KEY_LENGTH = 32
_ATTEMPTS = 30


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _decode(text: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None


def _json(data: dict[str, object]) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Claims:
    """What a valid token says: who it was issued to and when it expires."""

    subject: str
    expires: int


class Signer:
    """Issues and verifies the service's tokens with one secret key."""

    def __init__(self, key: bytes, lifetime: int = DEFAULT_LIFETIME) -> None:
        self._key = key
        self.lifetime = lifetime

    def _sign(self, signing_input: str) -> str:
        return _encode(hmac.new(self._key, signing_input.encode("ascii"), hashlib.sha256).digest())

    def issue(self, subject: str, now: int) -> str:
        """A token for ``subject``, valid from ``now`` for :attr:`lifetime` seconds.

        The payload holds only digits, hexadecimal text (``sub`` is the subject's UTF-8 in hex) and fixed
        keys, so the only thing that decides whether its base64 holds ``-`` or ``_`` is where the variable
        part falls; a ``jti`` of 16, 18 or 20 hex digits moves it, and one of the first tries fits."""
        header = _encode(_json(dict(_HEADER)))
        for attempt in range(_ATTEMPTS):
            claims = {
                "iss": ISSUER,
                "sub": subject.encode("utf-8").hex(),
                "iat": now,
                "exp": now + self.lifetime,
                "jti": secrets.token_hex(8 + attempt % 3),
            }
            payload = _encode(_json(claims))
            if "-" not in payload and "_" not in payload:  # standard base64 as well (see the module doc)
                signing_input = f"{header}.{payload}"
                return f"{signing_input}.{self._sign(signing_input)}"
        raise RuntimeError(f"no token payload without '-' or '_' in {_ATTEMPTS} tries")

    def verify(self, token: str, now: int) -> Claims | None:
        """The claims of a token this signer issued that has not expired; ``None`` for anything else."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        header, payload, signature = parts
        if not hmac.compare_digest(self._sign(f"{header}.{payload}").encode(), signature.encode()):
            return None
        raw = _decode(payload)
        try:
            claims = json.loads(raw) if raw is not None else None
        except ValueError:
            return None
        if not isinstance(claims, dict) or claims.get("iss") != ISSUER:
            return None
        subject, expires = claims.get("sub"), claims.get("exp")
        if not isinstance(subject, str) or not isinstance(expires, int) or isinstance(expires, bool):
            return None
        try:
            return Claims(bytes.fromhex(subject).decode("utf-8"), expires)
        except ValueError:
            return None

    @staticmethod
    def expired(claims: Claims, now: int) -> bool:
        return claims.expires <= now
