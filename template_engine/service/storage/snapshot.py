"""Whole-database reads and exact writes, for ``db export`` and ``db import``.

The repository stamps every row it writes (version 1, the writer, the time) and lets the database choose
integer ids; a restore needs the opposite: rows written with the ids, versions and audit fields they had, and
the id counters (the high-water marks of ``departments``, ``projects`` and ``clusters``) set back, so that an
id given before a delete is never given again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Table, func, insert, select, text, update

from template_engine.service.storage import tables as t

#: The audit columns of every row, in order.
AUDIT_COLUMNS = ("version", "created_by", "created_at", "updated_by", "updated_at")
#: The tables whose integer ids come from a counter.
COUNTED = (t.departments, t.projects)


def is_blank(connection: Connection) -> bool:
    """Nothing in any table (workloads included): a restore cannot collide with anything."""
    tables = (t.departments, t.projects, t.defaults, t.policies, t.assets, t.templates, t.workloads)
    for table in (*tables, t.kind_policies, t.cluster_settings, t.clusters):
        if connection.execute(select(func.count()).select_from(table)).scalar_one():
            return False
    return True


def workload_rows(connection: Connection) -> list[Mapping[str, Any]]:
    """Every workload (deleted ones included), by id."""
    rows = connection.execute(select(t.workloads).order_by(t.workloads.c.id))
    return [dict(row._mapping) for row in rows]


def high_water(connection: Connection, table: Table) -> int:
    """The highest id ``table``'s counter has given (0 when none), or the highest id present if larger."""
    present = int(connection.execute(select(func.coalesce(func.max(table.c.id), 0))).scalar_one())
    name = connection.dialect.name
    if name == "sqlite":
        query = text("SELECT seq FROM sqlite_sequence WHERE name = :table")
        counter = connection.execute(query, {"table": table.name}).scalar()
        return max(present, int(counter or 0))
    if name == "postgresql":
        sequence = _sequence(connection, table)
        last, called = connection.execute(text(f"SELECT last_value, is_called FROM {sequence}")).one()
        return max(present, int(last) if called else int(last) - 1)
    return present  # pragma: no cover - only SQLite and PostgreSQL are supported


def raise_high_water(connection: Connection, table: Table, value: int) -> None:
    """Make ``table``'s next id larger than ``value`` and than every id present (never lowers the counter)."""
    target = max(value, high_water(connection, table))
    if target <= 0:
        return
    name = connection.dialect.name
    if name == "sqlite":
        params = {"table": table.name, "seq": target}
        found = connection.execute(text("SELECT 1 FROM sqlite_sequence WHERE name = :table"), params).first()
        statement = (
            "UPDATE sqlite_sequence SET seq = :seq WHERE name = :table"
            if found is not None
            else "INSERT INTO sqlite_sequence (name, seq) VALUES (:table, :seq)"
        )
        connection.execute(text(statement), params)
    elif name == "postgresql":
        sequence = _sequence(connection, table)
        connection.execute(
            text("SELECT setval(CAST(:sequence AS regclass), :seq, true)"),
            {
                "sequence": sequence,
                "seq": target,
            },
        )


def _sequence(connection: Connection, table: Table) -> str:
    query = text("SELECT pg_get_serial_sequence(:table, 'id')")
    return str(connection.execute(query, {"table": table.name}).scalar_one())


def insert_rows(connection: Connection, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` exactly as given (ids and audit columns included)."""
    if rows:
        connection.execute(insert(table), [dict(row) for row in rows])


def set_audit(connection: Connection, table: Table, key: Any, audit: Mapping[str, Any]) -> None:
    """Give the row of primary key ``key`` (a tuple for a key of several columns) these audit columns (it was
    just written with a fresh stamp)."""
    columns = list(table.primary_key.columns)
    keys = key if isinstance(key, tuple) else (key,)
    where = [column == value for column, value in zip(columns, keys, strict=True)]
    connection.execute(update(table).where(*where).values(**{c: audit[c] for c in AUDIT_COLUMNS}))
