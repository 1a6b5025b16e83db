"""Settings by flag and by environment variable (docs/operations.md, "Settings"): a flag wins over its
``TEMPLATE_ENGINE_*`` variable, the variable over the default, and a variable that cannot be read stops the
command with a message naming it and what it expects, never a silent default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import ADMIN, TEMPLATES, bearer
from servers import serve

from template_engine.cli import main
from template_engine.service.commands import db
from template_engine.service.commands import serve as serve_command
from template_engine.service.settings import (
    DEFAULT_CACHE_BYTES,
    KNOB,
    KNOBS,
    Listening,
    SettingError,
    Settings,
    resolve,
)
from template_engine.service.storage import database
from template_engine.service.url_secrets import hide_secrets

#: (setting, a text of its variable, the value it reads as, a value a flag gives).
READABLE: list[tuple[str, str, Any, Any]] = [
    ("database_url", "sqlite:///env.db", "sqlite:///env.db", "sqlite:///flag.db"),
    ("host", "0.0.0.0", "0.0.0.0", "::1"),
    ("port", "9000", 9000, 9001),
    ("workers", "4", 4, 2),
    ("auth_file", "/etc/te/auth.yaml", Path("/etc/te/auth.yaml"), Path("flag.yaml")),
    ("dev", "true", True, True),
    ("seed", "templates", Path("templates"), Path("other")),
    ("max_body_bytes", "2048", 2048, 4096),
    ("cache_bytes", "0", 0, 5),
    ("session_seconds", "900", 900, 1200),
    ("log_format", "TEXT", "text", "json"),
    ("log_level", "debug", "debug", "warning"),
]


def test_every_option_of_serve_has_one_row_in_the_table() -> None:
    options = {param.name for param in serve_command.params if param.name != "help"}
    assert options == set(KNOB)
    assert {name for name, *_ in READABLE} == set(KNOB)
    assert all(knob.variable.startswith("TEMPLATE_ENGINE_") for knob in KNOBS)


@pytest.mark.parametrize(("name", "text", "value", "flag"), READABLE, ids=[r[0] for r in READABLE])
def test_a_flag_wins_over_its_variable_which_wins_over_the_default(
    name: str, text: str, value: Any, flag: Any
) -> None:
    variable = KNOB[name].variable
    assert resolve(name, None, {}) == KNOB[name].default
    assert resolve(name, None, {variable: text}) == value
    assert resolve(name, flag, {variable: text}) == flag


def test_the_database_url_falls_back_to_database_url() -> None:
    new, old = "TEMPLATE_ENGINE_DATABASE_URL", "DATABASE_URL"
    assert Settings.from_env({}).database_url == database.DEFAULT_DATABASE_URL
    assert Settings.from_env({old: "sqlite:///old.db"}).database_url == "sqlite:///old.db"
    both = {old: "sqlite:///old.db", new: "sqlite:///new.db"}
    assert Settings.from_env(both).database_url == "sqlite:///new.db"
    assert Settings.from_env(both, database_url="sqlite:///flag.db").database_url == "sqlite:///flag.db"


def test_settings_and_listening_read_the_environment_given() -> None:
    env = {
        "TEMPLATE_ENGINE_CACHE_BYTES": "1000",
        "TEMPLATE_ENGINE_DEV": "1",
        "TEMPLATE_ENGINE_PORT": "9100",
        "TEMPLATE_ENGINE_LOG_FORMAT": "text",
    }
    settings = Settings.from_env(env, cache_bytes=None)
    assert (settings.cache_bytes, settings.dev_tokens, settings.max_body_bytes) == (1000, True, 1024 * 1024)
    assert Settings.from_env(env, cache_bytes=7).cache_bytes == 7
    listening = Listening.from_env(env, host=None, port=None, workers=3)
    assert listening == Listening(port=9100, workers=3, log_format="text")
    assert Settings.from_env({}).cache_bytes == DEFAULT_CACHE_BYTES


UNREADABLE = [
    ("TEMPLATE_ENGINE_PORT", "80x", "a whole number from 0 to 65535"),
    ("TEMPLATE_ENGINE_PORT", "70000", "a whole number from 0 to 65535"),
    ("TEMPLATE_ENGINE_WORKERS", "0", "a whole number from 1 to 64"),
    ("TEMPLATE_ENGINE_MAX_BODY_BYTES", "-1", "a whole number of bytes, at least 1"),
    ("TEMPLATE_ENGINE_CACHE_BYTES", "64MB", "a whole number of bytes (0 turns the cache off)"),
    ("TEMPLATE_ENGINE_CACHE_BYTES", "", "a whole number of bytes"),
    ("TEMPLATE_ENGINE_SESSION_SECONDS", "5", "from 60 to 604800"),
    ("TEMPLATE_ENGINE_SESSION_SECONDS", "٣٠٠", "a whole number of seconds"),  # digits, but not ASCII
    ("TEMPLATE_ENGINE_LOG_FORMAT", "xml", "json or text"),
    ("TEMPLATE_ENGINE_LOG_LEVEL", "loud", "critical, error, warning, info, debug"),
    ("TEMPLATE_ENGINE_DEV", "maybe", "1, true, yes, on, or 0, false, no, off"),
    ("TEMPLATE_ENGINE_DATABASE_URL", " ", "an SQLAlchemy URL"),
    ("TEMPLATE_ENGINE_DATABASE_URL", "notaurl", "an SQLAlchemy URL: sqlite:///FILE or postgresql://"),
]


@pytest.mark.parametrize(("variable", "text", "expected"), UNREADABLE)
def test_a_variable_that_cannot_be_read_is_refused_naming_it(variable: str, text: str, expected: str) -> None:
    env = {variable: text}
    with pytest.raises(SettingError) as caught:
        Settings.from_env(env)
        Listening.from_env(env)
    assert caught.value.variable == variable
    assert str(caught.value).startswith(f"{variable}={text!r} cannot be read: expected ")
    assert expected in str(caught.value)


def test_serve_exits_with_the_variable_it_cannot_read() -> None:
    result = CliRunner().invoke(serve_command, ["--dev"], env={"TEMPLATE_ENGINE_CACHE_BYTES": "lots"})
    assert result.exit_code == 2
    assert result.output == (
        "error: TEMPLATE_ENGINE_CACHE_BYTES='lots' cannot be read: "
        "expected a whole number of bytes (0 turns the cache off)\n"
    )
    result = CliRunner().invoke(serve_command, ["--dev"], env={"TEMPLATE_ENGINE_WORKERS": "many"})
    assert result.exit_code == 2 and "TEMPLATE_ENGINE_WORKERS='many'" in result.output
    assert "Traceback" not in result.output


def test_db_commands_read_the_same_database_variable(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    env = {"TEMPLATE_ENGINE_DATABASE_URL": f"sqlite:///{missing}", "DATABASE_URL": "sqlite:///other.db"}
    result = CliRunner().invoke(db, ["export", "--root", str(tmp_path / "out")], env=env)
    assert result.exit_code == 2
    assert f"no database at sqlite:///{missing}" in result.output


def test_a_real_server_takes_its_settings_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ``--cache-bytes`` or ``--log-format``: the variables turn the answer cache off and log text."""
    monkeypatch.setenv("TEMPLATE_ENGINE_CACHE_BYTES", "0")
    monkeypatch.setenv("TEMPLATE_ENGINE_LOG_FORMAT", "text")
    with serve(f"sqlite:///{tmp_path / 'db.sqlite'}", None) as server, server.client() as http:
        answer = http.get("/api/v1/workload-templates/count", headers={"X-Request-Id": "env-1"})
        assert answer.status_code == 200
        assert "x-template-engine-cache" not in answer.headers  # TEMPLATE_ENGINE_CACHE_BYTES=0
    lines = [line for line in server.output.splitlines() if "request_id=env-1" in line]
    assert len(lines) == 1, server.output
    assert '"GET /api/v1/workload-templates/count" 200' in lines[0]
    assert "route=/api/v1/workload-templates/count" in lines[0]
    assert not any(line.startswith("{") for line in server.output.splitlines())
    assert bearer(ADMIN)["Authorization"] not in server.output


# -- every command that takes --database-url reads it from the same table ----------------------------------


@pytest.mark.parametrize("command", ["upgrade", "export", "import"])
def test_every_db_command_takes_the_database_from_the_settings_table(tmp_path: Path, command: str) -> None:
    """``TEMPLATE_ENGINE_DATABASE_URL`` wins over ``DATABASE_URL`` for ``db upgrade`` as for ``serve`` (it
    once read ``DATABASE_URL`` alone, through click), and every help says so."""
    wanted, other = tmp_path / "wanted.db", tmp_path / "other.db"
    other.touch()  # an empty SQLite database: db upgrade would give it the schema
    env = {"TEMPLATE_ENGINE_DATABASE_URL": f"sqlite:///{wanted}", "DATABASE_URL": f"sqlite:///{other}"}
    args = {"upgrade": [], "export": ["--root", str(tmp_path / "out")], "import": ["--root", str(TEMPLATES)]}
    result = CliRunner().invoke(db, [command, *args[command]], env=env)
    if command == "import":  # a missing file is created by an import
        assert result.exit_code == 0, result.output
        assert wanted.stat().st_size > 0
    else:  # and refused by the others
        assert result.exit_code == 2
        assert result.output == (
            f"error: no database at sqlite:///{wanted}: the SQLite file {str(wanted)!r} does not exist\n"
        )
    assert other.stat().st_size == 0  # the fallback's database was not touched
    help_text = " ".join(CliRunner().invoke(db, [command, "--help"]).output.split())
    assert (
        "[env: TEMPLATE_ENGINE_DATABASE_URL, then DATABASE_URL; default: sqlite:///template-engine.db]"
        in (help_text)
    )


BAD_URLS = [
    ("postgresql://u:secret@127.0.0.1:abc/x", "postgresql://u:***@127.0.0.1:abc/x", "its port is not"),
    ("postgresql://u:secret@[::1:1/x", "postgresql://u:***@[::1:1/x", "an IPv6 host in brackets"),
    (
        "postgresql://u:secret@127.0.0.1:70000/x",
        "postgresql://u:***@127.0.0.1:70000/x",
        "not from 0 to 65535",
    ),
    ("postgresql://u:se@cret@127.0.0.1/x", "postgresql://u:***@127.0.0.1/x", "holds an unescaped '@'"),
    ("postgresql://u:se@c@ret@h:ab/x", "postgresql://u:***@h:ab/x", "each '@' in them as %40"),
    ("notaurl", "notaurl", "not a URL: it must start with DIALECT://"),
    ("mongodb://u:secret@h/x", "mongodb://u:***@h/x", "SQLAlchemy knows no database 'mongodb'"),
]


@pytest.mark.parametrize(("url", "shown", "reason"), BAD_URLS, ids=[u[2] for u in BAD_URLS])
@pytest.mark.parametrize("args", [["db", "upgrade"], ["serve", "--dev"]], ids=["db upgrade", "serve"])
def test_a_database_url_that_cannot_be_read_is_a_clear_error_with_the_password_hidden(
    url: str, shown: str, reason: str, args: list[str]
) -> None:
    """From the flag or from the variable: exit 2 naming where it came from and the form expected; never a
    traceback (``ValueError: invalid literal for int()``), never the password."""
    expected = "expected an SQLAlchemy URL: sqlite:///FILE or postgresql://USER:PASSWORD@HOST:PORT/DB"
    for source, extra, env in (
        ("--database-url", ["--database-url", url], {}),
        ("TEMPLATE_ENGINE_DATABASE_URL", [], {"TEMPLATE_ENGINE_DATABASE_URL": url}),
        ("DATABASE_URL", [], {"DATABASE_URL": url}),
    ):
        result = CliRunner().invoke(main, [*args, *extra], env=env)
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.output.startswith(f"error: {source}={shown!r} cannot be read: {expected} (")
        assert reason in result.output
        assert "secret" not in result.output and "Traceback" not in result.output
        assert "cret" not in result.output and "ret@" not in result.output  # no part of an '@' password


def test_a_flag_does_not_hide_a_variable_that_cannot_be_read(tmp_path: Path) -> None:
    """``TEMPLATE_ENGINE_PORT=abc serve --port N`` once started: every variable set is read."""
    env = {"TEMPLATE_ENGINE_PORT": "abc", "TEMPLATE_ENGINE_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    result = CliRunner().invoke(serve_command, ["--dev", "--port", "18733"], env=env)
    assert result.exit_code == 2
    assert result.output == (
        "error: TEMPLATE_ENGINE_PORT='abc' cannot be read: expected a whole number from 0 to 65535\n"
    )
    flagged = CliRunner().invoke(
        serve_command, ["--database-url", f"sqlite:///{tmp_path / 'y.db'}"], env={"DATABASE_URL": "not a url"}
    )
    assert flagged.exit_code == 2 and flagged.output.startswith("error: DATABASE_URL='not a url' cannot")
    assert not (tmp_path / "x.db").exists() and not (tmp_path / "y.db").exists()


def test_a_seed_or_auth_file_that_is_not_there_names_its_setting(tmp_path: Path) -> None:
    missing = str(tmp_path / "nonexistent")
    url = {"TEMPLATE_ENGINE_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}"}
    cases = [
        ({"TEMPLATE_ENGINE_SEED": missing}, ["--dev"], f"the seed folder {missing!r} (TEMPLATE_ENGINE_SEED)"),
        ({}, ["--dev", "--seed", missing], f"the seed folder {missing!r} (--seed)"),
        (
            {"TEMPLATE_ENGINE_AUTH_FILE": missing},
            [],
            f"the auth file {missing!r} (TEMPLATE_ENGINE_AUTH_FILE)",
        ),
        ({}, ["--auth-file", missing], f"the auth file {missing!r} (--auth-file)"),
    ]
    for env, args, named in cases:
        result = CliRunner().invoke(serve_command, args, env={**url, **env})
        assert result.exit_code == 2
        assert result.output == f"error: {named} does not exist\n"
    folder = CliRunner().invoke(serve_command, [], env={**url, "TEMPLATE_ENGINE_AUTH_FILE": str(tmp_path)})
    assert (
        folder.output
        == f"error: the auth file {str(tmp_path)!r} (TEMPLATE_ENGINE_AUTH_FILE) is a folder, not a file\n"
    )
    assert not (tmp_path / "x.db").exists()


def test_an_address_that_does_not_resolve_stops_serve_before_it_binds(tmp_path: Path) -> None:
    """Exit 2 naming the setting, not uvicorn's exit 3 (the status of a port in use)."""
    env = {
        "TEMPLATE_ENGINE_HOST": "999.1.1.1",
        "TEMPLATE_ENGINE_DATABASE_URL": f"sqlite:///{tmp_path / 'x.db'}",
    }
    result = CliRunner().invoke(serve_command, ["--dev"], env=env)
    assert result.exit_code == 2
    assert result.output.startswith(
        "error: cannot listen on '999.1.1.1' (TEMPLATE_ENGINE_HOST): the address does not resolve ("
    )
    flag = CliRunner().invoke(serve_command, ["--dev", "--host", "999.1.1.1"], env=env)
    assert flag.exit_code == 2 and "(--host)" in flag.output
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize(
    ("url", "shown", "refused"),
    [
        ("postgresql://u:p@ss@host/db", "postgresql://u:***@host/db", True),
        ("postgresql://u:p@s/s@h:1/db?sslmode=disable", "postgresql://u:***@h:1/db?sslmode=disable", True),
        # SQLAlchemy reads this user name (its '@' before the ':' is not cut there)
        ("postgresql://u@x:pass@host/db", "postgresql://u@x:***@host/db", False),
        ("postgresql://u:p%40ss@host/db", "postgresql://u:***@host/db", False),
    ],
)
def test_a_password_holding_an_unescaped_at_is_hidden_whole(url: str, shown: str, refused: bool) -> None:
    """SQLAlchemy ends a password at its first ``@``: the rest of it is never shown as a host, and only the
    unescaped one is refused, saying to write it ``%40``."""
    assert hide_secrets(url) == shown
    assert not any(part in database.shown_url(url) for part in ("ss@", "s/s", "pass", "p%40"))
    problem = database.url_problem(url)
    assert (problem is not None and "in them as %40" in problem) is refused


def test_secrets_in_the_query_string_are_hidden_wherever_a_url_is_shown() -> None:
    """``password``, ``sslpassword`` (and any name with password, secret or token in it) are secrets;
    ``passfile`` and ``sslkey`` are paths, shown."""
    url = "postgresql://te@127.0.0.1:1/x?password=s1&sslpassword=s2&auth_token=s3&passfile=/p&sslmode=require"
    shown = database.shown_url(url)
    assert not any(secret in shown for secret in ("s1", "s2", "s3"))
    assert "password=***" in shown and "sslpassword=***" in shown and "auth_token=***" in shown
    assert "passfile=" in shown and "sslmode=require" in shown
    assert "s1" not in database.shown_url("postgresql://te@127.0.0.1:abc/x?password=s1")  # unreadable too
    result = CliRunner().invoke(main, ["db", "upgrade", "--database-url", url])
    assert (
        result.exit_code == 2
        and "error: cannot upgrade postgresql+psycopg://te@127.0.0.1:1/x?" in result.output
    )
    assert not any(secret in result.output for secret in ("s1", "s2", "s3"))
