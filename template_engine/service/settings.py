"""The service's settings: each ``serve`` option, then its ``TEMPLATE_ENGINE_*`` environment variable, then
its default (the table :data:`KNOBS`; docs/operations.md, "Settings").

Precedence is data, as in pydantic-settings: :func:`resolve` takes the value of the first source that has
one, in the order flag, environment, default; ``TEMPLATE_ENGINE_DATABASE_URL`` has the older ``DATABASE_URL``
as a fallback after it.  A value the environment gives is parsed by its knob, and one it cannot be read as is
a :class:`SettingError` naming the variable and what was expected: never a silent default.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from template_engine.service.url_secrets import hide_secrets

#: The database when none is given: :data:`.storage.database.DEFAULT_DATABASE_URL`, written here too so that
#: this table (and the help of ``serve``, built from it) needs only the standard library: the core CLI runs
#: without the service extra.  ``tests/service/test_settings_env.py`` holds the two equal.
DEFAULT_DATABASE_URL = "sqlite:///template-engine.db"

#: Request bodies above this are refused with 413 before they are read.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: The bytes of answers each process keeps (``TEMPLATE_ENGINE_CACHE_BYTES``; 0 turns the cache off).
DEFAULT_CACHE_BYTES = 64 * 1024 * 1024

#: How long a UI session lasts after sign-in, in seconds (``TEMPLATE_ENGINE_SESSION_SECONDS``): 8 hours, a
#: working day; an application token's session ends when the token does, if that is sooner.
DEFAULT_SESSION_SECONDS = 8 * 3600
#: The bounds of that setting (a value outside them is refused, naming them).
MIN_SESSION_SECONDS, MAX_SESSION_SECONDS = 60, 7 * 24 * 3600

#: How ``serve --workers N`` hands its settings to the worker processes it starts (JSON; not a user knob).
WORKER_SETTINGS = "TEMPLATE_ENGINE_WORKER_SETTINGS"

LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
LOG_FORMATS = ("json", "text")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


class SettingError(ValueError):
    """A setting's value cannot be read: ``variable`` (or flag) gave ``value``, ``expected`` says what may.
    ``secret``: the value is a database URL, shown with its password and secret parameters hidden."""

    def __init__(self, variable: str, value: str, expected: str, secret: bool = False) -> None:
        self.variable, self.value, self.expected = variable, value, expected
        value = hide_secrets(value) if secret else value
        shown = value if len(value) <= 80 else value[:77] + "..."
        super().__init__(f"{variable}={shown!r} cannot be read: expected {expected}")


class Unreadable(ValueError):
    """What a knob's parser raises to say why, beyond what its ``expected`` says (``reason``)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _number(text: str, low: int = 0, high: int | None = None) -> int:
    """A whole number from ``low`` to ``high`` (decimal digits only); ``ValueError`` otherwise."""
    if not text.isascii() or not text.isdigit() or len(text) > 18:
        raise ValueError(text)
    number = int(text)
    if number < low or (high is not None and number > high):
        raise ValueError(text)
    return number


def _flag(text: str) -> bool:
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(text)


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text.lower() not in choices:
            raise ValueError(text)
        return text.lower()

    return parse


def _text(text: str) -> str:
    if not text.strip():
        raise ValueError(text)
    return text


#: What a database URL may be, in words (the knob's ``expected``, and ``--database-url``'s message).
URL_EXPECTED = "an SQLAlchemy URL: sqlite:///FILE or postgresql://USER:PASSWORD@HOST:PORT/DB"


def _database_url(text: str) -> str:
    """A URL SQLAlchemy reads, its port a number (:func:`.storage.database.url_problem`; imported here, when
    a value is read: the table itself needs only the standard library)."""
    _text(text)
    from template_engine.service.storage.database import url_problem

    problem = url_problem(text)
    if problem is not None:
        raise Unreadable(problem)
    return text


@dataclass(frozen=True, slots=True)
class Knob:
    """One setting: the ``serve`` option ``name`` (``--max-body-bytes`` is ``max_body_bytes``), its
    environment ``variable`` (and an older ``fallback`` read after it), how a text is read (``parse``, which
    raises ``ValueError``, or :class:`Unreadable` saying why), what that accepts in words (``expected``), and
    the ``default``."""

    name: str
    variable: str
    parse: Callable[[str], Any]
    expected: str
    default: Any
    fallback: str | None = None
    #: The value may hold a secret (a database URL's password): messages hide it.
    secret: bool = False


def _bounded(low: int, high: int | None = None) -> Callable[[str], int]:
    return lambda text: _number(text, low, high)


#: Every setting of ``serve``, in the order of docs/operations.md's table.
KNOBS: tuple[Knob, ...] = (
    Knob(
        "database_url",
        "TEMPLATE_ENGINE_DATABASE_URL",
        _database_url,
        URL_EXPECTED,
        DEFAULT_DATABASE_URL,
        fallback="DATABASE_URL",
        secret=True,
    ),
    Knob("host", "TEMPLATE_ENGINE_HOST", _text, "an address to listen on", "127.0.0.1"),
    Knob("port", "TEMPLATE_ENGINE_PORT", _bounded(0, 65535), "a whole number from 0 to 65535", 8080),
    Knob("workers", "TEMPLATE_ENGINE_WORKERS", _bounded(1, 64), "a whole number from 1 to 64", 1),
    Knob("auth_file", "TEMPLATE_ENGINE_AUTH_FILE", lambda t: Path(_text(t)), "a file path", None),
    Knob("dev", "TEMPLATE_ENGINE_DEV", _flag, "1, true, yes, on, or 0, false, no, off", False),
    Knob("seed", "TEMPLATE_ENGINE_SEED", lambda t: Path(_text(t)), "a folder path", None),
    Knob(
        "max_body_bytes",
        "TEMPLATE_ENGINE_MAX_BODY_BYTES",
        _bounded(1),
        "a whole number of bytes, at least 1",
        DEFAULT_MAX_BODY_BYTES,
    ),
    Knob(
        "cache_bytes",
        "TEMPLATE_ENGINE_CACHE_BYTES",
        _bounded(0),
        "a whole number of bytes (0 turns the cache off)",
        DEFAULT_CACHE_BYTES,
    ),
    Knob(
        "session_seconds",
        "TEMPLATE_ENGINE_SESSION_SECONDS",
        _bounded(MIN_SESSION_SECONDS, MAX_SESSION_SECONDS),
        f"a whole number of seconds from {MIN_SESSION_SECONDS} to {MAX_SESSION_SECONDS}",
        DEFAULT_SESSION_SECONDS,
    ),
    Knob("log_format", "TEMPLATE_ENGINE_LOG_FORMAT", _choice(*LOG_FORMATS), "json or text", "json"),
    Knob("log_level", "TEMPLATE_ENGINE_LOG_LEVEL", _choice(*LOG_LEVELS), ", ".join(LOG_LEVELS), "info"),
)
KNOB = {knob.name: knob for knob in KNOBS}


def resolve(name: str, given: Any = None, env: Mapping[str, str] | None = None) -> Any:
    """The value of the setting ``name``: ``given`` (a flag) when not ``None``, else its variable's (or its
    fallback's) value parsed, else its default.  A variable that is set but cannot be read raises
    :class:`SettingError` naming it."""
    knob = KNOB[name]
    if given is not None:
        return given
    env = os.environ if env is None else env
    variable = source(name, env)
    if variable is None:
        return knob.default
    try:
        return knob.parse(env[variable])
    except Unreadable as exc:
        expected = f"{knob.expected} ({exc.reason})"
        raise SettingError(variable, env[variable], expected, knob.secret) from None
    except ValueError:
        raise SettingError(variable, env[variable], knob.expected, knob.secret) from None


def source(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """The variable the setting ``name`` is read from when no flag gives it: its own when set, else its
    fallback when set, else ``None`` (the default)."""
    knob = KNOB[name]
    env = os.environ if env is None else env
    for variable in (knob.variable, knob.fallback):
        if variable is not None and variable in env:
            return variable
    return None


def check_environment(env: Mapping[str, str] | None = None) -> None:
    """Read every setting's variable that is set, a flag given or not: one that cannot be read raises
    :class:`SettingError` (``serve`` calls this first, so an operator's bad variable never waits, hidden by
    a flag, for the day the flag is dropped)."""
    for knob in KNOBS:
        resolve(knob.name, None, env)


@dataclass(frozen=True, slots=True)
class Listening:
    """What ``serve`` needs beyond :class:`Settings`: where it listens, how many processes, how it logs."""

    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    log_format: str = "json"
    log_level: str = "info"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **given: Any) -> Listening:
        """Each field from ``given`` (flags; ``None``: not given), the environment or the default."""
        return cls(**{name: resolve(name, given.get(name), env) for name in cls.__dataclass_fields__})


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
        dev_tokens: bool | None = None,
        seed: Path | None = None,
        max_body_bytes: int | None = None,
        cache_bytes: int | None = None,
        session_seconds: int | None = None,
    ) -> Settings:
        """Each setting from its argument (a flag; ``None``: not given), else its ``TEMPLATE_ENGINE_*``
        variable (``DATABASE_URL`` after ``TEMPLATE_ENGINE_DATABASE_URL``), else its default
        (:func:`resolve`); a variable that cannot be read raises :class:`SettingError`."""
        env = os.environ if env is None else env
        return cls(
            database_url=resolve("database_url", database_url or None, env),
            auth_file=resolve("auth_file", auth_file, env),
            dev_tokens=resolve("dev", dev_tokens, env),
            max_body_bytes=resolve("max_body_bytes", max_body_bytes, env),
            seed=resolve("seed", seed, env),
            cache_bytes=resolve("cache_bytes", cache_bytes, env),
            session_seconds=resolve("session_seconds", session_seconds, env),
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
