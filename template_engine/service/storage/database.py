"""The SQLAlchemy engine for a database URL, transactions, and the schema created or migrated at start-up.

SQLite (the default, one file) runs in WAL mode with foreign keys on; a write transaction starts with
``BEGIN IMMEDIATE`` so writers queue on SQLite's lock instead of failing half-way, and readers never wait.
PostgreSQL (several service processes on one database) serialises writers of one row with
``SELECT ... FOR UPDATE`` (see the repository) and the start-up migration with an advisory lock, so replicas
starting together do not race to create the schema.

Every write transaction adds one to the org revision (``org_revision``) in the same transaction, just before
it commits: a reader that sees a revision sees every write up to it, in whichever process it was made, which
is what makes the service's response cache exact (:class:`Revisions`, :mod:`..answers`).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, insert, inspect, select, update
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from template_engine.service.storage.tables import (
    SCHEMA_VERSION,
    metadata,
    org_revision,
    runtime,
    schema_info,
)

DEFAULT_DATABASE_URL = "sqlite:///template-engine.db"

#: The execution option that marks a write transaction (SQLite: ``BEGIN IMMEDIATE``).
_WRITE = "template_engine_write"

#: An arbitrary, fixed key for PostgreSQL's advisory lock around the start-up migration.
_MIGRATION_LOCK = 7_345_010_417


def _policies(_connection: Connection) -> None:
    """Version 2 adds the ``policies`` table, which ``create_all`` (run first) has just created."""


def _revision(_connection: Connection) -> None:
    """Version 3 adds ``org_revision``, which :func:`_ensure_revision` (run first) has just created.  The
    version goes up with it so that an older service, which would write without moving the revision (and so
    leave the caches of newer replicas stale), refuses the database instead of sharing it."""


def _cluster_settings(_connection: Connection) -> None:
    """Version 4 adds ``cluster_settings``, which ``create_all`` (run first) has just created, empty: the org
    then composes with the defaults, as before.  The version goes up so that an older service, which would
    compose without the stored settings, refuses the database instead of answering differently."""


def _runai_fields(connection: Connection) -> None:
    """Version 5 adds Run:ai's fields of departments, projects and assets that compose nothing here
    (``runai``, JSON, ``NULL`` for every existing row) and the asset scope (``scope_type``, ``tenant`` for
    every existing asset: before version 5 every asset was org-wide, and composes as before).  A column
    already there (``create_all`` made a table this version did not have) is left as it is."""
    added = {
        "departments": ["runai JSON"],
        "projects": ["runai JSON"],
        "assets": [
            "runai JSON",
            "scope_type VARCHAR(16) NOT NULL DEFAULT 'tenant'",
            "department_id INTEGER REFERENCES departments (id)",
            "project_id INTEGER REFERENCES projects (id)",
        ],
    }
    inspector = inspect(connection)
    for table, columns in added.items():
        present = {column["name"] for column in inspector.get_columns(table)}
        for column in columns:
            if column.split()[0] not in present:
                connection.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column}")


#: ``MIGRATIONS[n]`` takes a database at schema version ``n`` to ``n + 1`` (after ``create_all`` has added
#: the tables that version ``n`` did not have).
MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    1: _policies,
    2: _revision,
    3: _cluster_settings,
    4: _runai_fields,
}

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
    engine: Engine, write: bool, consistent: bool = False, org: bool = True
) -> Iterator[Connection]:
    """One transaction: committed when the block ends, rolled back when it raises.

    ``consistent``: every statement sees the same state of the database (PostgreSQL's REPEATABLE READ; an
    SQLite transaction always does), for a reader that must not mix two states, such as an export.
    ``org=False``: a write of the service's own runtime tables (the UI's sessions), not of the org: the org
    revision stays, so no cache of composed answers is invalidated by a sign-in.
    """
    with engine.connect() as connection:
        options: dict[str, Any] = {_WRITE: write}
        if consistent and connection.dialect.name == "postgresql":
            options["isolation_level"] = "REPEATABLE READ"
        connection.execution_options(**options)
        with connection.begin():
            yield connection
            if write and org:
                _bump(connection)


def _bump(connection: Connection) -> None:
    """One more revision, in the transaction that wrote (its row lock queues concurrent committers for the
    instant between this statement and their commit)."""
    connection.execute(
        update(org_revision).where(org_revision.c.id == 1).values(revision=org_revision.c.revision + 1)
    )


def _ensure_revision(connection: Connection) -> None:
    runtime.create_all(connection, checkfirst=True)
    if connection.execute(select(org_revision.c.id).where(org_revision.c.id == 1)).first() is None:
        connection.execute(insert(org_revision).values(id=1, epoch=str(uuid.uuid4()), revision=0))


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
    try:
        parsed = make_url(normalise_url(url))
    except ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:") or parsed.query.get("uri"):
        return None
    path = Path(database).expanduser().resolve()
    if path.exists():
        return None
    folders = []
    folder = path.parent
    while not folder.exists():
        folders.append(folder)
        folder = folder.parent
    return NewSqliteFile(path, tuple(folders))


def migrate(engine: Engine) -> int:
    """Create the schema, or migrate it up to :data:`SCHEMA_VERSION`; returns the version found."""
    with transaction(engine, write=True) as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql(f"SELECT pg_advisory_xact_lock({_MIGRATION_LOCK})")
        _ensure_revision(connection)
        metadata.create_all(connection, checkfirst=True)
        found = connection.execute(select(schema_info.c.version).where(schema_info.c.id == 1)).scalar()
        if found is None:
            connection.execute(insert(schema_info).values(id=1, version=SCHEMA_VERSION))
            return 0
        if found > SCHEMA_VERSION:
            raise SchemaError(
                f"the database has schema version {found}, newer than this service's {SCHEMA_VERSION}: "
                "upgrade template-engine"
            )
        for version in range(found, SCHEMA_VERSION):
            MIGRATIONS[version](connection)
        if found != SCHEMA_VERSION:
            connection.execute(
                update(schema_info).where(schema_info.c.id == 1).values(version=SCHEMA_VERSION)
            )
        return int(found)
