"""A database constraint that a request trips over is a 409; a broken foreign key is told apart by the
driver's error code (SQLite's extended result code, PostgreSQL's SQLSTATE), never by the message text."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import (
    Column,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    create_engine,
    delete,
    event,
)
from sqlalchemy import insert as sql_insert
from sqlalchemy.exc import IntegrityError

from template_engine.service.errors import install, violates_foreign_key

METADATA = MetaData()
PARENTS = Table(
    "parents", METADATA, Column("id", Integer, primary_key=True), Column("name", String, unique=True)
)
CHILDREN = Table(
    "children",
    METADATA,
    Column("id", Integer, primary_key=True),
    Column("parent", Integer, ForeignKey("parents.id"), nullable=False),
)


@pytest.fixture
def engine() -> Iterator[Engine]:
    engine = create_engine("sqlite://")

    @event.listens_for(engine, "connect")
    def _foreign_keys(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    METADATA.create_all(engine)
    with engine.begin() as connection:
        connection.execute(sql_insert(PARENTS).values(id=1, name="one"))
        connection.execute(sql_insert(CHILDREN).values(id=1, parent=1))
    yield engine
    engine.dispose()


def _caught(engine: Engine, statement: Any) -> IntegrityError:
    with pytest.raises(IntegrityError) as caught, engine.begin() as connection:
        connection.execute(statement)
    return caught.value


def test_sqlite_a_child_of_a_missing_parent(engine: Engine) -> None:
    error = _caught(engine, sql_insert(CHILDREN).values(id=2, parent=99))
    assert violates_foreign_key(error)


def test_sqlite_deleting_a_parent_in_use(engine: Engine) -> None:
    error = _caught(engine, delete(PARENTS).where(PARENTS.c.id == 1))
    assert violates_foreign_key(error)


def test_sqlite_a_name_given_twice_is_not_a_foreign_key(engine: Engine) -> None:
    error = _caught(engine, sql_insert(PARENTS).values(id=2, name="one"))
    assert not violates_foreign_key(error)


def test_the_message_text_is_not_read() -> None:
    # An error that says "FOREIGN KEY" but carries no such code (here: none at all) is not one.
    said = IntegrityError("DELETE ...", {}, sqlite3.IntegrityError("FOREIGN KEY constraint failed"))
    assert not violates_foreign_key(said)
    coded = sqlite3.IntegrityError("constraint failed")
    coded.sqlite_errorcode = sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
    assert violates_foreign_key(IntegrityError("DELETE ...", {}, coded))


class _PsycopgLike(Exception):
    """What psycopg raises: the SQLSTATE as ``sqlstate`` and in ``diag``."""

    def __init__(self, sqlstate: str | None, diag: str | None = None) -> None:
        super().__init__("update or delete on table violates foreign key constraint")
        self.sqlstate = sqlstate
        self.diag = SimpleNamespace(sqlstate=diag if diag is not None else sqlstate)


@pytest.mark.parametrize(
    ("error", "foreign"),
    [
        (_PsycopgLike("23503"), True),  # foreign_key_violation
        (_PsycopgLike(None, diag="23503"), True),
        (_PsycopgLike("23505"), False),  # unique_violation, whatever the message says
        (_PsycopgLike("23502"), False),  # not_null_violation
    ],
    ids=["sqlstate", "diag", "unique", "not-null"],
)
def test_postgres_by_sqlstate(error: Exception, foreign: bool) -> None:
    assert violates_foreign_key(IntegrityError("DELETE ...", {}, error)) is foreign


def _app(raise_it: Callable[[], None]) -> TestClient:
    app = FastAPI()
    install(app)

    @app.get("/probe")
    def probe() -> None:
        raise_it()

    return TestClient(app)


def test_the_answer_is_409_either_way(engine: Engine) -> None:
    in_use = _caught(engine, delete(PARENTS).where(PARENTS.c.id == 1))
    twice = _caught(engine, sql_insert(PARENTS).values(id=2, name="one"))

    def raise_(error: IntegrityError) -> Callable[[], None]:
        def go() -> None:
            raise error

        return go

    response = _app(raise_(in_use)).get("/probe")
    assert response.status_code == 409
    assert response.json() == {
        "code": 409,
        "message": "The resource is in use or refers to one that is gone.",
    }
    response = _app(raise_(twice)).get("/probe")
    assert response.status_code == 409
    assert response.json() == {"code": 409, "message": "Resource with this name already exists"}
