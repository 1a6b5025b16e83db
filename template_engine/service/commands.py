"""``template-engine serve`` and ``template-engine db import|export|upgrade``.

Only click and the standard library are imported here: FastAPI, SQLAlchemy and uvicorn are imported inside
the commands, so the core CLI works with the core dependencies alone, and these commands say what to install
when the ``service`` extra is missing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from template_engine.service.importer import Folder
    from template_engine.service.settings import Listening, Settings

EXIT_ERROR = 2
_EXTRA = "install the service extra: pip install '.[service]' from a checkout (or template-engine[service])"


#: How long a SIGTERM waits for requests in flight (each is bounded; see docs/decisions.md).
GRACEFUL_SHUTDOWN_SECONDS = 5
#: Where prometheus-client's multiprocess mode keeps each process's values (read when it is imported, so it
#: is set before :mod:`.metrics` is imported: :data:`.metrics.MULTIPROC_DIR`).
MULTIPROC_DIR = "PROMETHEUS_MULTIPROC_DIR"
#: How long ``serve --workers N`` waits for a worker to answer its supervisor before restarting it.
WORKER_HEALTHCHECK_SECONDS = 60


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(EXIT_ERROR)


def _require_service(*extra: str) -> None:
    missing = []
    for module in ("fastapi", "uvicorn", "sqlalchemy", "alembic", *extra):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(module)
    if missing:
        _fail(f"the service is not installed: {_EXTRA}; missing: {', '.join(missing)}")


def _driver_for(url: str | None) -> tuple[str, ...]:
    return ("psycopg",) if url and url.startswith(("postgres", "postgresql")) else ()


def _shown(url: str) -> str:
    """``url`` for a message: its password and secret query parameters as ``***`` (:func:`.shown_url`)."""
    from template_engine.service.storage.database import shown_url

    return shown_url(url)


def _database_url(given: str | None, must_exist: bool = False) -> str:
    """The database URL a command uses: ``--database-url`` (``given``), else ``TEMPLATE_ENGINE_DATABASE_URL``,
    else ``DATABASE_URL``, else the default (:func:`.settings.resolve`, the one table ``serve`` reads too),
    checked before anything is opened: one SQLAlchemy cannot read (a port that is not a number) exits naming
    where it came from, the password hidden; so does a folder where an SQLite file should be, and, with
    ``must_exist``, an SQLite file that does not exist."""
    from template_engine.service.settings import URL_EXPECTED, SettingError, resolve
    from template_engine.service.storage.database import sqlite_file_problem, url_problem

    url: str = _settings_or_exit(lambda: resolve("database_url", given))
    if given is not None and (problem := url_problem(given)) is not None:
        _fail(str(SettingError("--database-url", given, f"{URL_EXPECTED} ({problem})", secret=True)))
    problem = sqlite_file_problem(url, must_exist)
    if problem is not None:
        _fail(f"no database at {_shown(url)}: {problem}")
    return url


def _problems(exc: Any) -> str:
    """Every problem of an engine error, each starting with ``error:`` as the core commands print them."""
    return "\n".join(f"error: {problem.render()}" for problem in exc.problems)


@contextlib.contextmanager
def _removed_on_failure(url: str) -> Iterator[None]:
    """Remove the SQLite file ``url`` names when it did not exist before and the block fails (exits too)."""
    from template_engine.service.storage.database import new_sqlite_file

    created = new_sqlite_file(url)
    try:
        yield
    except BaseException:
        if created is not None:
            created.discard()
        raise


def _read_folder(root: Path, then: str) -> Folder:
    """The folder at ``root``, read and checked before any database is opened; exits with its problems."""
    from template_engine.errors import TemplateEngineError
    from template_engine.service.importer import read_folder

    try:
        return read_folder(root)
    except TemplateEngineError as exc:
        _fail(f"{then}:\n" + _problems(exc))


def _open(url: str) -> Engine:
    """The engine of ``url`` (read by :func:`_database_url`), its schema created when the database is empty
    and checked otherwise (a schema not at the head, or not this service's, exits saying what to do)."""
    _require_service(*_driver_for(url))
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from template_engine.service.storage.database import SchemaError, create_db_engine, ensure_schema

    try:
        engine = create_db_engine(url)
        ensure_schema(engine)
    except ArgumentError:
        _fail(f"cannot read the database URL {_shown(url)}")
    except ImportError as exc:
        _fail(f"the database driver is missing ({exc.name}): {_EXTRA}")
    except SchemaError as exc:
        _fail(str(exc))
    except SQLAlchemyError as exc:
        _fail(f"cannot open the database {_shown(url)}: {getattr(exc, 'orig', exc)}")
    return engine


_URL_HELP = "SQLAlchemy URL: sqlite:///FILE or postgresql://..."


def _env_help(name: str, text: str) -> str:
    """An option's help with its variable and default, from the one table (:data:`.settings.KNOBS`)."""
    from template_engine.service.settings import KNOB

    knob = KNOB[name]
    default = "" if knob.default in (None, False) else f"; default: {knob.default}"
    fallback = f", then {knob.fallback}" if knob.fallback else ""
    return f"{text} [env: {knob.variable}{fallback}{default}]"


def _settings_or_exit(read: Callable[[], T]) -> T:
    """``read()``, or exit with the setting it could not read (the variable and what it expects)."""
    from template_engine.service.settings import SettingError

    try:
        return read()
    except SettingError as exc:
        _fail(str(exc))


@click.command()
@click.option("--host", help=_env_help("host", "The address to listen on."))
@click.option("--port", type=click.IntRange(0, 65535), help=_env_help("port", "The port."))
@click.option("--database-url", help=_env_help("database_url", _URL_HELP))
@click.option(
    "--auth-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help=_env_help("auth_file", "YAML file of tokens and role bindings."),
)
@click.option(
    "--dev",
    is_flag=True,
    default=None,
    help=_env_help("dev", "Accept the development tokens (dev-admin...); never in production."),
)
@click.option(
    "--seed",
    type=click.Path(file_okay=False, path_type=Path),
    help=_env_help("seed", "Import this templates folder at start-up when the database is empty."),
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    help=_env_help("log_level", "The least severe record logged (access records are info)."),
)
@click.option(
    "--log-format",
    type=click.Choice(["json", "text"]),
    help=_env_help("log_format", "Log lines on stderr: one JSON object each, or text."),
)
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    help=_env_help(
        "workers", "Worker processes sharing the port (each with its own cache; see docs/http-api.md)."
    ),
)
@click.option(
    "--max-body-bytes",
    type=click.IntRange(1),
    help=_env_help("max_body_bytes", "Request bodies above this are refused with 413."),
)
@click.option(
    "--cache-bytes",
    type=click.IntRange(0),
    help=_env_help("cache_bytes", "The bytes of answers each process keeps (0: none)."),
)
@click.option(
    "--session-seconds",
    type=click.IntRange(60, 7 * 24 * 3600),
    help=_env_help("session_seconds", "How long a UI session lasts after sign-in."),
)
def serve(
    host: str | None,
    port: int | None,
    database_url: str | None,
    auth_file: Path | None,
    dev: bool | None,
    seed: Path | None,
    log_level: str | None,
    log_format: str | None,
    workers: int | None,
    max_body_bytes: int | None,
    cache_bytes: int | None,
    session_seconds: int | None,
) -> None:
    """Run the template service (HTTP API shaped like Run:ai's) until interrupted.

    Each option may be given by its TEMPLATE_ENGINE_* variable instead; an option given wins over its
    variable, and a variable over the default (docs/operations.md, "Settings"). Every variable set is
    read, even one an option overrides: one that cannot be read stops the command.
    """
    _require_service()
    from template_engine.service.settings import Listening, Settings, check_environment

    _settings_or_exit(check_environment)
    url = _database_url(database_url)
    settings = _settings_or_exit(
        lambda: Settings.from_env(
            database_url=url,
            auth_file=auth_file,
            dev_tokens=dev,
            seed=seed,
            max_body_bytes=max_body_bytes,
            cache_bytes=cache_bytes,
            session_seconds=session_seconds,
        )
    )
    log_format = log_format or _terminal_log_format(settings.dev_tokens, sys.stderr.isatty())
    listening = _settings_or_exit(
        lambda: Listening.from_env(
            host=host, port=port, workers=workers, log_level=log_level, log_format=log_format
        )
    )
    _require_service(*_driver_for(settings.database_url))
    import uvicorn

    from template_engine.service.access_log import log_config

    _listenable(listening.host, listening.port, _origin("host", host))
    if settings.auth_file is not None:
        _check_path(settings.auth_file, "the auth file", folder=False, origin=_origin("auth_file", auth_file))
    seed_origin = _origin("seed", seed)
    seed = settings.seed
    if seed is not None:  # a broken seed is refused before a database is created or its schema changed
        _check_path(seed, "the seed folder", folder=True, origin=seed_origin)
        _read_folder(seed, f"cannot seed from {str(seed)!r}")
    options: dict[str, Any] = {
        "host": listening.host,
        "port": listening.port,
        "log_level": listening.log_level,
        "log_config": log_config(listening.log_format, listening.log_level),
        "access_log": False,  # the service's own access log (access_log.AccessLog) replaces uvicorn's
        "server_header": False,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
    }
    who = "development tokens" if settings.auth_file is None else f"tokens from {settings.auth_file}"
    if listening.workers == 1:
        banner = _logging(options["log_config"])  # before the seed: its lines are the server's records
        app = _started(settings, seed, lambda: _app(settings))
        banner("template-engine: database %s; %s", _shown(settings.database_url), who)
        uvicorn.run(app, **options)
        return
    with _metrics_directory():  # before prometheus-client is imported here: the parent's values go there too
        _supervise(settings, seed, listening, options)


def _terminal_log_format(dev: bool, terminal: bool) -> str | None:
    """``text`` for ``serve --dev`` writing to a terminal when neither ``--log-format`` nor its variable chose
    (a developer reads the lines; a log collector reads JSON, the default), else ``None``: the setting's own
    resolution (docs/decisions.md, "Text logs on a --dev terminal")."""
    from template_engine.service.settings import source

    return "text" if dev and terminal and source("log_format") is None else None


def _origin(name: str, given: object) -> str:
    """Where the setting ``name`` came from, for a message: its option, its variable, or the default."""
    from template_engine.service.settings import source

    if given is not None:
        return "--" + name.replace("_", "-")
    return source(name) or "the default"


def _check_path(path: Path, what: str, folder: bool, origin: str) -> None:
    """Exit unless ``path`` (from ``origin``: ``--seed``, ``TEMPLATE_ENGINE_SEED``) is a folder (``folder``)
    or a file, saying which it is not."""
    if not path.exists():
        _fail(f"{what} {str(path)!r} ({origin}) does not exist")
    if folder and not path.is_dir():
        _fail(f"{what} {str(path)!r} ({origin}) is a file, not a folder")
    if not folder and path.is_dir():
        _fail(f"{what} {str(path)!r} ({origin}) is a folder, not a file")


def _listenable(host: str, port: int, origin: str) -> None:
    """Exit (status 2, before uvicorn binds) when ``host`` is no address this machine can resolve: uvicorn
    would print the resolver's error and exit 3, the status of a port in use."""
    import socket

    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        _fail(f"cannot listen on {host!r} ({origin}): the address does not resolve ({reason})")


def _supervise(settings: Settings, seed: Path | None, listening: Listening, options: dict[str, Any]) -> None:
    """``serve --workers N``: the database prepared once, then the workers started and supervised."""
    import os
    import secrets

    from template_engine.service.app import prepare
    from template_engine.service.settings import WORKER_SETTINGS

    who = "development tokens" if settings.auth_file is None else f"tokens from {settings.auth_file}"
    banner = _logging(options["log_config"])  # before the seed: its lines are the server's records
    _started(settings, seed, lambda: prepare(settings))  # migrated and seeded once, before any worker
    if settings.dev_tokens:  # one key for all workers: a token one of them issued is valid at the others
        settings = dataclasses.replace(settings, dev_signing_key=secrets.token_bytes(32))
    os.environ[WORKER_SETTINGS] = settings.for_workers()
    banner(
        "template-engine: database %s; %s; %d worker processes",
        _shown(settings.database_url),
        who,
        listening.workers,
    )
    _run_workers(listening.workers, options)


def _logging(config: dict[str, Any]) -> Callable[..., None]:
    """Logging as the server will log (uvicorn applies ``config`` again, in each worker too), configured
    once the settings are read and before the database is opened or seeded, so that every line the server
    writes from then on (the seed's, a library's, a Python warning's) is a record in the chosen format; the
    function that logs the start-up line so.  A command that cannot start still says why in one plain
    ``error:`` line (:func:`_fail`), as every command does."""
    import logging
    import logging.config

    logging.config.dictConfig(config)
    logging.captureWarnings(True)
    return logging.getLogger("template_engine.service").info


@contextlib.contextmanager
def _metrics_directory() -> Iterator[Path]:
    """A fresh directory for the workers' metrics (prometheus-client's multiprocess mode: each worker writes
    its values there and a scrape of any worker sums them), in ``PROMETHEUS_MULTIPROC_DIR`` when that is
    set, else in the temporary directory; the workers inherit it, and it is removed when they have stopped.
    """
    import os
    import shutil
    import tempfile

    given = os.environ.get(MULTIPROC_DIR)
    directory = Path(tempfile.mkdtemp(prefix="template-engine-metrics-", dir=given or None))
    os.environ[MULTIPROC_DIR] = str(directory)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if given is None:
            del os.environ[MULTIPROC_DIR]
        else:
            os.environ[MULTIPROC_DIR] = given


def _run_workers(workers: int, options: dict[str, Any]) -> None:
    """uvicorn's supervisor of ``workers`` processes on one listening socket, as ``uvicorn.run`` starts it,
    with ``TCP_NODELAY`` on that socket: uvicorn creates it without the TCP protocol number, so asyncio does
    not set ``TCP_NODELAY`` on the connections the workers accept, and an answer written in two parts
    (headers, then body) then waits for the client's delayed ACK, 40 ms on Linux.  Linux gives accepted
    connections the listening socket's option."""
    import socket

    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "template_engine.service.app:app_from_workers",
        factory=True,
        workers=workers,
        # A worker answers the supervisor's pings once it has imported the service; on a loaded machine that
        # takes longer than uvicorn's 5 seconds, and a worker still starting would be killed and restarted.
        timeout_worker_healthcheck=WORKER_HEALTHCHECK_SECONDS,
        **options,
    )
    sock = config.bind_socket()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()


def _app(settings: Settings) -> Any:
    from template_engine.service.app import create_app

    return create_app(settings)


T = TypeVar("T")


def _started(settings: Settings, seed: Path | None, start: Callable[[], T]) -> T:
    """``start()`` (which opens, checks and seeds the database), or exit with what stopped it; an SQLite
    file it created is removed then."""
    from sqlalchemy.exc import ArgumentError, SQLAlchemyError

    from template_engine.errors import TemplateEngineError
    from template_engine.service.app import ConfigError
    from template_engine.service.storage.database import SchemaError

    with _removed_on_failure(settings.database_url):
        try:
            return start()
        except (ConfigError, SchemaError) as exc:
            _fail(str(exc))
        except TemplateEngineError as exc:
            _fail(f"cannot seed from {str(seed)!r}:\n" + _problems(exc))
        except ArgumentError:
            _fail(f"cannot read the database URL {_shown(settings.database_url)}")
        except ImportError as exc:
            _fail(f"the database driver is missing ({exc.name}): {_EXTRA}")
        except SQLAlchemyError as exc:
            _fail(f"cannot open the database {_shown(settings.database_url)}: {getattr(exc, 'orig', exc)}")


@click.group()
def db() -> None:
    """Move a templates folder into the service's database and back; upgrade its schema."""


@db.command(name="import")
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("templates"),
    show_default=True,
    help="The templates folder (with org.yaml).",
)
@click.option("--database-url", help=_env_help("database_url", _URL_HELP))
def import_command(root: Path, database_url: str | None) -> None:
    """Load a templates folder (one transaction; nothing is removed).

    Into an empty database, a folder written by `db export` is restored with its ids, versions, audit
    fields and workloads; otherwise everything is added or replaced by name.
    """
    _require_service()
    from sqlalchemy.exc import SQLAlchemyError

    from template_engine.errors import TemplateEngineError
    from template_engine.service.importer import import_folder

    url = _database_url(database_url)
    folder = _read_folder(root, "nothing imported")
    with _removed_on_failure(url):
        engine = _open(url)
        try:
            report = import_folder(engine, folder)
        except TemplateEngineError as exc:
            _fail("nothing imported:\n" + _problems(exc))
        except SQLAlchemyError as exc:
            _fail(f"nothing imported: the database refused it: {getattr(exc, 'orig', exc)}")
        finally:
            engine.dispose()
    click.echo(f"imported {root}: {report.summary() if report else 'nothing'}")


@db.command(name="export")
@click.option(
    "--root", type=click.Path(file_okay=False, path_type=Path), required=True, help="The folder to write."
)
@click.option("--database-url", help=_env_help("database_url", _URL_HELP))
@click.option(
    "--overwrite",
    is_flag=True,
    help=(
        "Replace org.yaml, cluster.yaml, system/, clusters/, departments/, projects/, assets/, "
        ".template-engine/."
    ),
)
def export_command(root: Path, database_url: str | None, overwrite: bool) -> None:
    """Write the database as a templates folder.

    The ids, versions, audit fields and workloads go to .template-engine/export.yaml. The folder is
    written aside and put in place only when complete: all or nothing.
    """
    _require_service()
    engine = _open(_database_url(database_url, must_exist=True))
    from template_engine.errors import TemplateEngineError
    from template_engine.service.exporter import export_folder

    try:
        report = export_folder(engine, root, overwrite=overwrite)
    except TemplateEngineError as exc:
        _fail("nothing exported:\n" + _problems(exc))
    except OSError as exc:
        _fail(f"nothing exported: cannot write {str(root)!r}: {exc.strerror}")
    finally:
        engine.dispose()
    click.echo(f"exported {report.files} file(s) to {root}: {report.summary()}")


@db.command(name="upgrade")
@click.option("--database-url", help=_env_help("database_url", _URL_HELP))
def upgrade_command(database_url: str | None) -> None:
    """Bring the schema up to this release's revision, every row kept.

    One transaction: all of it or nothing. A database made before schema revisions (schema version 1 to 5)
    is adopted. Running it again changes nothing. A server of this release refuses to start on an older
    schema until this has run (docs/operations.md, "Upgrading the database").
    """
    _require_service()
    url = _database_url(database_url, must_exist=True)
    _require_service(*_driver_for(url))
    from sqlalchemy.exc import SQLAlchemyError

    from template_engine.service.storage.database import SchemaError, create_db_engine, upgrade

    shown = _shown(url)
    try:
        engine = create_db_engine(url)
        try:
            done = upgrade(engine)
        finally:
            engine.dispose()
    except ImportError as exc:
        _fail(f"the database driver is missing ({exc.name}): {_EXTRA}")
    except SchemaError as exc:
        _fail(f"cannot upgrade {shown}: {exc}")
    except SQLAlchemyError as exc:
        _fail(f"cannot upgrade {shown}: {getattr(exc, 'orig', exc)}")
    if done.changed:
        click.echo(f"upgraded {shown} from {done.found.describe()} to revision {done.head}")
    else:
        click.echo(f"{shown} is at revision {done.head}, this release's newest: nothing to do")
