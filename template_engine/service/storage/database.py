"""The SQLAlchemy engine for a database URL, transactions, and the schema: created at start-up on an empty
database, checked on any other (:func:`ensure_schema`), upgraded by ``db upgrade`` (:func:`upgrade`, Alembic's
revisions in :mod:`.migrations`), and asked by ``GET /ready`` (:class:`Readiness`).

SQLite (the default, one file) runs in WAL mode with foreign keys on; a write transaction starts with
``BEGIN IMMEDIATE`` so writers queue on SQLite's lock instead of failing half-way, and readers never wait.
PostgreSQL (several service processes on one database) serialises writers of one row with
``SELECT ... FOR UPDATE`` (see the repository) and the start-up check and the upgrade with an advisory lock,
so replicas starting together do not race to create the schema.

Every write transaction adds one to the org revision (``org_revision``) in the same transaction, just before
it commits: a reader that sees a revision sees every write up to it, in whichever process it was made, which
is what makes the service's response cache exact (:class:`Revisions`, :mod:`..answers`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, select, update
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from template_engine.service.storage.tables import (
    SCHEMA_VERSION,
    metadata,
    org_revision,
    runtime,
    schema_info,
)
from template_engine.service.url_secrets import UNESCAPED_AT, hide_secrets, unescaped_at

if TYPE_CHECKING:
    from alembic.script import ScriptDirectory

DEFAULT_DATABASE_URL = "sqlite:///template-engine.db"

#: The execution option that marks a write transaction (SQLite: ``BEGIN IMMEDIATE``).
_WRITE = "template_engine_write"

#: An arbitrary, fixed key for PostgreSQL's advisory lock around the start-up check and ``db upgrade``.
_MIGRATION_LOCK = 7_345_010_417

#: How long ``GET /ready`` waits for the database (to connect, and for its one statement), in seconds.
READY_TIMEOUT = 2.0


#: What a reader of the org revision gets: the row's epoch and its counter.
Revision = tuple[str, int]

_READ_REVISION = "SELECT epoch, revision FROM org_revision WHERE id = 1"


class SchemaError(Exception):
    """The database cannot be used by this version of the service."""


def normalise_url(url: str) -> str:
    """``postgresql://`` and ``postgres://`` mean the psycopg 3 driver, the one the service extra installs."""
    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def url_problem(url: str) -> str | None:
    """Why SQLAlchemy cannot use ``url`` (in words, naming no secret), or ``None``: not a URL at all, a port
    that is not a whole number from 0 to 65535 (``make_url`` raises a bare ``ValueError`` there), or a kind
    of database SQLAlchemy has no dialect for, or a user name or password holding an unescaped ``@`` (which
    SQLAlchemy would cut there, reading the rest of the password as the host: :func:`.unescaped_at`)."""
    if unescaped_at(url):
        return UNESCAPED_AT
    try:
        parsed = make_url(normalise_url(url))
    except ArgumentError:
        return "not a URL: it must start with DIALECT://"
    except ValueError:
        return "its port is not a whole number: HOST:PORT, an IPv6 host in brackets, [::1]:5432"
    if parsed.port is not None and not 0 <= parsed.port <= 65535:
        return f"its port {parsed.port} is not from 0 to 65535"
    try:
        parsed.get_dialect()
    except NoSuchModuleError:
        return f"SQLAlchemy knows no database {parsed.drivername!r} (use sqlite or postgresql)"
    except ImportError:  # the dialect's driver is missing: the commands say what to install
        pass
    return None


def shown_url(url: str | URL) -> str:
    """``url`` as messages and logs show it: its password and every secret query parameter (a name with
    ``password``, ``secret`` or ``token`` in it: :data:`..url_secrets.SECRET_QUERY_WORDS`) as ``***``.  A URL
    SQLAlchemy cannot read is shown as written, with the same parts hidden."""
    if isinstance(url, str):
        if unescaped_at(url):  # SQLAlchemy would read part of the password as the host
            return hide_secrets(url)
        try:
            parsed = make_url(normalise_url(url))
        except (ArgumentError, ValueError):
            return hide_secrets(url)
    else:
        parsed = url
    return hide_secrets(parsed.render_as_string(hide_password=True))


def has_secret(url: URL) -> bool:
    """Whether :func:`shown_url` hides part of ``url``."""
    return bool(url.password) or shown_url(url) != url.render_as_string(hide_password=False)


def sqlite_file_problem(url: str, must_exist: bool) -> str | None:
    """What is wrong with the SQLite file ``url`` names, or ``None`` (or not an SQLite file): a folder there;
    with ``must_exist``, no file there (``db export`` and ``db upgrade`` must not create an empty database
    from a mistyped path).  An existing file, empty (0 bytes) or not, is SQLite's to judge."""
    named = _sqlite_file(url)
    if named is None:
        return None
    database, path = named
    if path.is_dir():
        return f"the SQLite file {database!r} is a folder, not a database file"
    if must_exist and not path.exists():
        return f"the SQLite file {database!r} does not exist"
    return None


def _sqlite_file(url: str) -> tuple[str, Path] | None:
    """The file an ``sqlite:///FILE`` URL names, as written and as a path; ``None`` for any other URL, an
    unreadable one, an in-memory database or SQLite's own ``file:`` URIs."""
    try:
        parsed = make_url(normalise_url(url))
    except (ArgumentError, ValueError):
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:") or parsed.query.get("uri"):
        return None
    return database, Path(database).expanduser()


def create_db_engine(url: str) -> Engine:
    """An engine for ``url``, with SQLite's pragmas and transaction handling set up."""
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().resolve().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)
        cursor = dbapi_connection.cursor()
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA foreign_keys=ON",
            "PRAGMA busy_timeout=30000",
            "PRAGMA synchronous=NORMAL",
        ):
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        write = connection.get_execution_options().get(_WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


@contextmanager
def transaction(
    engine: Engine, write: bool, consistent: bool = False, org: bool = True, schema: bool = False
) -> Iterator[Connection]:
    """One transaction: committed when the block ends, rolled back when it raises.

    ``consistent``: every statement sees the same state of the database (PostgreSQL's REPEATABLE READ; an
    SQLite transaction always does), for a reader that must not mix two states, such as an export.
    ``org=False``: a write of the service's own runtime tables (the UI's sessions), not of the org: the org
    revision stays, so no cache of composed answers is invalidated by a sign-in.
    ``schema``: a change of the tables themselves.  SQLite rebuilds a table to change it, and its documented
    way to do so without firing the cascades of the rows that refer to it is foreign keys off for the
    transaction, checked whole (``PRAGMA foreign_key_check``) before it commits.
    """
    with engine.connect() as connection:
        options: dict[str, Any] = {_WRITE: write}
        if consistent and connection.dialect.name == "postgresql":
            options["isolation_level"] = "REPEATABLE READ"
        connection.execution_options(**options)
        rebuilds = schema and connection.dialect.name == "sqlite"
        if rebuilds:  # outside any transaction (SQLite ignores the pragma inside one)
            connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
        try:
            with connection.begin():
                yield connection
                if write and org:
                    _bump(connection)
                if rebuilds and connection.exec_driver_sql("PRAGMA foreign_key_check").first() is not None:
                    raise SchemaError(
                        "the schema change would leave rows that refer to no row: nothing changed"
                    )
        finally:
            if rebuilds:
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]


def _bump(connection: Connection) -> None:
    """One more revision, in the transaction that wrote (its row lock queues concurrent committers for the
    instant between this statement and their commit)."""
    connection.execute(
        update(org_revision).where(org_revision.c.id == 1).values(revision=org_revision.c.revision + 1)
    )


def read_revision(connection: Connection) -> Revision:
    """The org revision as ``connection`` sees it now."""
    row = connection.exec_driver_sql(_READ_REVISION).one()
    return str(row[0]), int(row[1])


class Revisions:
    """Reads the org revision with one statement and no transaction around it (one round trip on PostgreSQL).

    It has its own autocommit connection (one thread reads: :class:`..answers.RevisionFeed`), so a read never
    waits for a connection the request handlers hold; an in-memory SQLite database (one per engine) is read
    through the service's own engine.
    """

    def __init__(self, engine: Engine) -> None:
        url = engine.url
        self._own: Engine | None = None
        if engine.dialect.name == "postgresql":
            self._own = create_engine(
                url,
                isolation_level="AUTOCOMMIT",
                pool_size=1,
                max_overflow=1,
                pool_reset_on_return=None,
                connect_args={"connect_timeout": 5},
            )
        elif url.database and url.database != ":memory:" and not url.database.startswith("file:"):
            self._own = create_engine(
                url,
                isolation_level="AUTOCOMMIT",
                connect_args={"timeout": 30, "check_same_thread": False},
                pool_reset_on_return=None,
            )
        self._engine = self._own or engine

    def read(self) -> Revision:
        with self._engine.connect() as connection:
            return read_revision(connection)

    def dispose(self) -> None:
        if self._own is not None:
            self._own.dispose()


@dataclass(frozen=True, slots=True)
class NewSqliteFile:
    """An SQLite database file that does not exist yet, and the folders above it that do not either."""

    path: Path
    folders: tuple[Path, ...]

    def discard(self) -> None:
        """Remove the file (with its WAL and journal files) and those folders, if they are empty."""
        for suffix in ("", "-wal", "-shm", "-journal"):
            with suppress(FileNotFoundError):
                Path(f"{self.path}{suffix}").unlink()
        for folder in self.folders:
            with suppress(OSError):
                folder.rmdir()


def new_sqlite_file(url: str) -> NewSqliteFile | None:
    """The SQLite file ``url`` would create, when it names one that does not exist yet."""
    named = _sqlite_file(url)
    if named is None:
        return None
    path = named[1].resolve()
    if path.exists():
        return None
    folders = []
    folder = path.parent
    while not folder.exists():
        folders.append(folder)
        folder = folder.parent
    return NewSqliteFile(path, tuple(folders))


@functools.cache
def _scripts() -> ScriptDirectory:
    from alembic.script import ScriptDirectory

    from template_engine.service.storage.migrations import SCRIPT_LOCATION

    return ScriptDirectory(str(SCRIPT_LOCATION))


@functools.cache
def head_revision() -> str:
    """The newest revision of the schema this code knows (the Alembic head of :mod:`.migrations`)."""
    head = _scripts().get_current_head()
    assert head is not None
    return head


@dataclass(frozen=True, slots=True)
class SchemaState:
    """Where a database's schema stands: its Alembic ``revision``; or, for a database made before Alembic
    (no ``alembic_version`` table), its ``schema_info`` version in ``legacy``; neither for an empty one.
    ``foreign``: the tables not this service's of a database with neither a revision nor a schema version
    (another application's, or a mistyped URL): never given the schema beside them."""

    revision: str | None
    legacy: int | None = None
    foreign: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.revision is None and self.legacy is None and not self.foreign

    def describe(self) -> str:
        if self.revision is not None:
            return f"revision {self.revision}"
        if self.legacy is not None:
            return f"schema version {self.legacy} (before Alembic)"
        if self.foreign:
            more = len(self.foreign) - 5
            names = ", ".join(self.foreign[:5]) + (f" and {more} more" if more > 0 else "")
            return f"tables ({names}) but no revision in alembic_version and no version in schema_info"
        return "no schema (an empty database)"


def read_schema(connection: Connection) -> SchemaState:
    """The :class:`SchemaState` of the database ``connection`` is on."""
    tables = set(inspect(connection).get_table_names())
    if "alembic_version" in tables:
        revision = connection.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        if revision is not None:
            return SchemaState(str(revision))
    if "schema_info" in tables:
        found = connection.execute(select(schema_info.c.version).where(schema_info.c.id == 1)).scalar()
        if found is not None:
            return SchemaState(None, int(found))
    others = tables - set(metadata.tables) - set(runtime.tables) - {"alembic_version", "schema_info"}
    return SchemaState(None, foreign=tuple(sorted(others)))  # only some of its own tables: the baseline adds


def _locked(connection: Connection) -> None:
    """Replicas starting together on PostgreSQL wait for each other here instead of racing to create."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")


def _known(revision: str) -> bool:
    from alembic.util import CommandError

    try:
        return _scripts().get_revision(revision) is not None
    except CommandError:
        return False


def _unknown(state: SchemaState) -> bool:
    """Whether ``state`` is a schema this code does not know: a revision not in its chain, a pre-Alembic
    version past the baseline's, or another application's tables.  Not "newer": a revision this code has
    not got could be a later release's or one of another project's Alembic chain, and nothing in the
    database tells which (Alembic knows a revision's ancestors only from its script)."""
    if state.foreign:
        return True
    if state.revision is not None:
        return not _known(state.revision)
    return state.legacy is not None and state.legacy > SCHEMA_VERSION


def newer(state: SchemaState) -> bool:
    """Whether ``state`` is a revision of a later release of this service: this chain's revision ids are
    four-digit numbers counted up from the baseline's ``0005`` (``migrations/versions/``), so an unknown id
    of that form above the head is one a later release added.  Any other unknown id is only unknown."""
    revision, head = state.revision, head_revision()
    return (
        revision is not None
        and len(revision) == len(head)
        and revision.isdigit()
        and head.isdigit()
        and int(revision) > int(head)
    )


def known_revisions() -> str:
    """This code's revisions, oldest first (``0005``; ``0005, 0006`` once there is a later one)."""
    return ", ".join(reversed([script.revision for script in _scripts().walk_revisions()]))


def unknown_schema(state: SchemaState, who: str) -> str:
    """The words for a schema ``who`` (``this service``) does not know, naming what was found and what it
    knows."""
    if state.foreign:
        return f"the database is not this service's: it has {state.describe()}"
    if newer(state):
        return (
            f"the database schema is at {state.describe()}, newer than {who} knows "
            f"(its newest is revision {head_revision()}): a later release upgraded it"
        )
    return (
        f"the database schema is at {state.describe()}, which {who} does not know "
        f"(its revisions: {known_revisions()})"
    )


def _shown(engine: Engine) -> str:
    return shown_url(engine.url)


def ensure_schema(engine: Engine) -> SchemaState:
    """The start-up check: an empty database gets the schema (every revision, to the head); one at the head
    is used as it is; any other is refused with :class:`SchemaError` (unknown, or another application's
    tables: the message names what was found and this code's revisions; older: it says what to run).
    Returns the state found."""
    with transaction(engine, write=True, org=False, schema=True) as connection:
        _locked(connection)
        state = read_schema(connection)
        head = head_revision()
        if state.empty:
            _run_upgrade(connection)
            _bump(connection)
            return state
        if state.revision == head:
            return state
        if state.foreign:
            raise SchemaError(
                f"{unknown_schema(state, 'this service')}: give the URL of an empty database or of one this "
                "service made"
            )
        if _unknown(state):
            raise SchemaError(
                f"{unknown_schema(state, 'this service')}: check the database URL, or run the "
                "template-engine release that made it"
            )
        hidden = " (with the password in place of ***)" if has_secret(engine.url) else ""
        raise SchemaError(
            f"the database schema is at {state.describe()}, older than this service's revision {head}: "
            f"run `template-engine db upgrade --database-url {_shown(engine)}`{hidden}, then start again"
        )


@dataclass(frozen=True, slots=True)
class Upgrade:
    """What :func:`upgrade` did: the state it found and the revision it left (the head)."""

    found: SchemaState
    head: str

    @property
    def changed(self) -> bool:
        return self.found.revision != self.head


def upgrade(engine: Engine) -> Upgrade:
    """Bring the schema to the head, every row kept, in one transaction (PostgreSQL's DDL is transactional;
    SQLite's too).  A database made before Alembic is adopted first: at schema version 5 it is stamped with
    the baseline revision; at 1 to 4 the baseline brings it up.  A schema this code does not know, or a
    database of another application's tables, is refused (:class:`SchemaError`); one at the head is left
    untouched."""
    with transaction(engine, write=True, org=False, schema=True) as connection:
        _locked(connection)
        state = read_schema(connection)
        head = head_revision()
        if state.revision == head:
            return Upgrade(state, head)
        if _unknown(state):
            raise SchemaError(f"{unknown_schema(state, 'this code')}: nothing changed")
        if state.legacy == SCHEMA_VERSION:
            _stamp(connection, _BASELINE)
        _run_upgrade(connection)
        _bump(connection)
        return Upgrade(state, head)


#: The revision a database at ``schema_info`` version :data:`SCHEMA_VERSION` (5) is stamped with.
_BASELINE = "0005"


def _stamp(connection: Connection, revision: str) -> None:
    from alembic.runtime.migration import MigrationContext

    MigrationContext.configure(connection).stamp(_scripts(), revision)


def _run_upgrade(connection: Connection) -> None:
    """Alembic's ``upgrade head`` on ``connection`` (in its transaction), configured here: no ``env.py``."""
    from alembic.config import Config
    from alembic.runtime.environment import EnvironmentContext

    scripts = _scripts()

    def steps(current: Any, _context: Any) -> Any:
        return scripts._upgrade_revs("head", current)

    with EnvironmentContext(Config(), scripts, fn=steps, destination_rev="head") as environment:
        environment.configure(connection=connection)
        with environment.begin_transaction():
            environment.run_migrations()


class Readiness:
    """What ``GET /ready`` asks the database: one statement, its own connection (no pool) and short timeouts,
    so that a probe never waits for a connection the request handlers hold, nor longer than
    :data:`READY_TIMEOUT`."""

    def __init__(self, engine: Engine) -> None:
        self._own: Engine | None = None
        if engine.dialect.name == "postgresql":
            seconds = max(2, int(READY_TIMEOUT))  # libpq's connect_timeout: whole seconds, at least 2
            # No pool: each probe opens its connection and closes it, so a probe proves that a new
            # connection can be made (what a restarted database needs), and no connection outlives it,
            # even in an application whose lifespan never ran to dispose of this engine.
            self._own = create_engine(
                engine.url,
                isolation_level="AUTOCOMMIT",
                poolclass=NullPool,
                connect_args={
                    "connect_timeout": seconds,
                    "options": f"-c statement_timeout={int(READY_TIMEOUT * 1000)}",
                },
            )
        self._engine = self._own or engine

    def problem(self) -> str | None:
        """``None`` when the database answers and its schema is at the head; otherwise why not."""
        try:
            with self._engine.connect() as connection:
                state = read_schema(connection)
        except SQLAlchemyError as exc:
            # The driver's message names hosts, ports and users: it goes to the server's log, never to an
            # unauthenticated caller of ``/ready``.
            detail = (str(getattr(exc, "orig", exc)).strip().splitlines() or [type(exc).__name__])[0]
            logging.getLogger("template_engine.service").warning("/ready: database unreachable: %s", detail)
            return "database unreachable: no connection or no answer (the server's log says why)"
        head = head_revision()
        if state.revision == head:
            return None
        if _unknown(state):
            word = "ahead" if newer(state) else "unknown"
            return f"schema {word}: {unknown_schema(state, 'this service')}"
        return f"schema behind: the database is at {state.describe()}, this service needs {head}"

    def dispose(self) -> None:
        if self._own is not None:
            self._own.dispose()
