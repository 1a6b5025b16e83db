"""The service's settings: command-line options first, then the environment, then the defaults."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from template_engine.service.storage.database import DEFAULT_DATABASE_URL

#: Request bodies above this are refused with 413 before they are read.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: The bytes of answers each process keeps (``TEMPLATE_ENGINE_CACHE_BYTES``; 0 turns the cache off).
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024

#: How long a UI session lasts after sign-in, in seconds (``TEMPLATE_ENGINE_SESSION_SECONDS``): 8 hours, a
#: working day; an application token's session ends when the token does, if that is sooner.
DEFAULT_SESSION_SECONDS = 8 * 3600
#: The bounds of that setting (a value outside them, or not a number, gives the default).
MIN_SESSION_SECONDS, MAX_SESSION_SECONDS = 60, 7 * 24 * 3600

#: How ``serve --workers N`` hands its settings to the worker processes it starts (JSON; not a user knob).
WORKER_SETTINGS = "TEMPLATE_ENGINE_WORKER_SETTINGS"


def _number(text: str | None, default: int) -> int:
    return int(text) if text and text.isdigit() else default


def _session_seconds(text: str | None) -> int:
    seconds = _number(text, DEFAULT_SESSION_SECONDS)
    return seconds if MIN_SESSION_SECONDS <= seconds <= MAX_SESSION_SECONDS else DEFAULT_SESSION_SECONDS


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything :func:`template_engine.service.app.create_app` needs."""

    database_url: str = DEFAULT_DATABASE_URL
    #: The YAML file of tokens and role bindings; ``None`` with ``dev_tokens`` uses the development tokens.
    auth_file: Path | None = None
    dev_tokens: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: A templates folder imported at start-up when the database is empty.
    seed: Path | None = None
    #: The bytes of answers this process keeps for exact template reads; 0: none.
    cache_bytes: int = DEFAULT_CACHE_BYTES
    #: The key the development application's tokens are signed with: ``serve --workers N --dev`` draws one
    #: for all its workers (a token one issued is valid at every other); ``None`` draws one per process.
    dev_signing_key: bytes | None = None
    #: How long a UI session lasts after sign-in (seconds).
    session_seconds: int = DEFAULT_SESSION_SECONDS

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        database_url: str | None = None,
        auth_file: Path | None = None,
        dev_tokens: bool = False,
        seed: Path | None = None,
    ) -> Settings:
        """Explicit values win over ``DATABASE_URL`` and ``TEMPLATE_ENGINE_AUTH_FILE``."""
        env = os.environ if env is None else env
        url = database_url or env.get("DATABASE_URL") or DEFAULT_DATABASE_URL
        auth = auth_file or (
            Path(env["TEMPLATE_ENGINE_AUTH_FILE"]) if env.get("TEMPLATE_ENGINE_AUTH_FILE") else None
        )
        return cls(
            database_url=url,
            auth_file=auth,
            dev_tokens=dev_tokens,
            max_body_bytes=_number(env.get("TEMPLATE_ENGINE_MAX_BODY_BYTES"), DEFAULT_MAX_BODY_BYTES),
            seed=seed,
            cache_bytes=_number(env.get("TEMPLATE_ENGINE_CACHE_BYTES"), DEFAULT_CACHE_BYTES),
            session_seconds=_session_seconds(env.get("TEMPLATE_ENGINE_SESSION_SECONDS")),
        )

    def for_workers(self) -> str:
        """These settings for the worker processes (:meth:`from_workers`), without ``seed``: the parent seeds
        once before they start."""
        data: dict[str, Any] = {
            "database_url": self.database_url,
            "auth_file": None if self.auth_file is None else str(self.auth_file),
            "dev_tokens": self.dev_tokens,
            "max_body_bytes": self.max_body_bytes,
            "cache_bytes": self.cache_bytes,
            "dev_signing_key": None if self.dev_signing_key is None else self.dev_signing_key.hex(),
            "session_seconds": self.session_seconds,
        }
        return json.dumps(data)

    @classmethod
    def from_workers(cls, text: str) -> Settings:
        data = json.loads(text)
        key = data.get("dev_signing_key")
        return cls(
            database_url=data["database_url"],
            auth_file=None if data.get("auth_file") is None else Path(data["auth_file"]),
            dev_tokens=bool(data.get("dev_tokens")),
            max_body_bytes=int(data["max_body_bytes"]),
            cache_bytes=int(data["cache_bytes"]),
            dev_signing_key=None if key is None else bytes.fromhex(key),
            session_seconds=int(data.get("session_seconds", DEFAULT_SESSION_SECONDS)),
        )
