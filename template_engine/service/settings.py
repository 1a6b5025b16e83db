"""The service's settings: command-line options first, then the environment, then the defaults."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from template_engine.service.storage.database import DEFAULT_DATABASE_URL

#: Request bodies above this are refused with 413 before they are read.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024


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
        limit = env.get("TEMPLATE_ENGINE_MAX_BODY_BYTES")
        return cls(
            database_url=url,
            auth_file=auth,
            dev_tokens=dev_tokens,
            max_body_bytes=int(limit) if limit and limit.isdigit() else DEFAULT_MAX_BODY_BYTES,
            seed=seed,
        )
