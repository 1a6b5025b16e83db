"""The repository: every query the service makes, on one connection inside one transaction.

Rows come back as small frozen records.  Updates are optimistic: they name the version they read and raise
:class:`StaleVersion` when no row has it any more.  ``lock=True`` reads take a row lock on PostgreSQL
(``FOR UPDATE``) so that concurrent writers of one row queue instead of conflicting; ``lock="share"`` takes
a shared one (``FOR SHARE``): many writers that only need the row to stay as it is (the submissions to a
project) hold it at once, and a writer that changes or deletes it waits for them, or they for it (a
project's delete).  SQLite's write transactions are already serialised (``BEGIN IMMEDIATE``).

Nothing is written that cannot be read back and answered: every value an insert or update is given is checked
first (:func:`unstorable`), and a NUL character or lone surrogate in any text, a non-finite number, or a
value JSON cannot hold in a document column raises :class:`Unstorable` before the statement runs, so the
transaction rolls back and the database is as it was.

A scope's defaults and policy documents are never deleted outright: their row stays as a tombstone (no
document, the next version), so that a scope's versions never go back and an ETag once given never names
another document.  Every read of those documents but :meth:`Repository.defaults_at` and
:meth:`Repository.policy_at` (the versions a write holds ``If-Match`` to) leaves tombstones out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar

from sqlalchemy import (
    JSON,
    ColumnElement,
    Connection,
    Row,
    Select,
    Table,
    Text,
    and_,
    cast,
    delete,
    false,
    func,
    insert,
    or_,
    select,
    update,
)

from template_engine import storable
from template_engine.paths import Path
from template_engine.service.storage import tables as t

#: The kind whose policies the ``policies`` table holds (``template_engine.kinds.DISTRIBUTED``'s name); every
#: other kind's are in ``kind_policies``, keyed by scope and kind.
DISTRIBUTED_POLICY = "distributed"


class StaleVersion(Exception):
    """Another writer changed or deleted the row since it was read."""


class Unstorable(Exception):
    """A value that no backend stores faithfully; nothing of the statement was written.

    ``column`` is the column it was meant for, ``path`` its place inside a document column (``()`` for the
    column itself), ``reason`` what is wrong with it.
    """

    def __init__(self, column: str, path: Path, reason: str) -> None:
        self.column = column
        self.path = path
        self.reason = reason
        super().__init__(f"{column} {path}: {reason}")


def unstorable(value: Any, document: bool) -> Iterator[tuple[Path, str]]:
    """The places and reasons ``value`` cannot be stored; ``document``: it goes to a JSON column."""
    return ((path, reason) for path, reason, _ in storable.unstorable(value, document))


def _check_storable(table: Table, values: Mapping[str, Any]) -> None:
    """Raise :class:`Unstorable` for the first value that cannot be stored; documents first, since a
    template's name and description columns repeat what its document holds (and the document has the path)."""
    columns = sorted(values, key=lambda column: not isinstance(table.c[column].type, JSON))
    for column in columns:
        for path, reason in unstorable(values[column], isinstance(table.c[column].type, JSON)):
            raise Unstorable(column, path, reason)


@dataclass(frozen=True, slots=True)
class Audit:
    version: int
    created_by: str
    created_at: datetime
    updated_by: str
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class ClusterUnitRow:
    """A cluster of the org (``tables.clusters``): Run:ai's ``DisplayedCluster`` fields and its settings."""

    id: int
    name: str
    uuid: str
    audit: Audit
    #: Run:ai's fields that compose nothing here (``domain``, ``version``), as given.
    runai: dict[str, Any] | None = None
    #: The cluster's settings (``clusters/C/cluster.yaml``'s document; ``None``: their defaults).
    settings: dict[str, Any] | None = None
    #: The YAML the settings were imported from, when it is not what an export writes for them.
    settings_text: str | None = None
    #: The settings' own version (their ETag), apart from the cluster's.
    settings_version: int = 0

    @property
    def description(self) -> str | None:
        return None


@dataclass(frozen=True, slots=True)
class DepartmentRow:
    id: int
    name: str
    description: str | None
    audit: Audit
    #: Run:ai's fields that compose nothing here, as given (``tables.departments.runai``).
    runai: dict[str, Any] | None = None
    #: The department's cluster (``None``: an org without clusters).
    cluster_id: int | None = None


@dataclass(frozen=True, slots=True)
class ProjectRow:
    id: int
    name: str
    description: str | None
    department_id: int
    audit: Audit
    #: Run:ai's fields that compose nothing here, as given (``tables.projects.runai``).
    runai: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class DefaultsRow:
    scope_key: str
    document: dict[str, Any]
    audit: Audit


@dataclass(frozen=True, slots=True)
class PolicyRow:
    scope_key: str
    document: dict[str, Any]
    #: The YAML the document was imported from, when it is not what an export writes for it.
    text: str | None
    audit: Audit
    #: The workload kind the policy is of (``template_engine.kinds``): ``distributed`` rows are the
    #: ``policies`` table's, every other kind's the ``kind_policies`` table's.
    kind: str = DISTRIBUTED_POLICY


@dataclass(frozen=True, slots=True)
class AssetRow:
    id: str
    kind: str
    name: str
    document: dict[str, Any]
    audit: Audit
    #: ``tenant``, ``cluster``, ``department`` or ``project`` (``tables.assets.scope_type``), with the
    #: unit's id.
    scope_type: str = "tenant"
    department_id: int | None = None
    project_id: int | None = None
    #: Run:ai's fields that compose nothing here, as given (``tables.assets.runai``).
    runai: dict[str, Any] | None = None
    cluster_id: int | None = None

    @property
    def unit_id(self) -> int | None:
        """The id of the unit whose scope the asset is of (``None``: the tenant's)."""
        return unit_of(self.scope_type, self.cluster_id, self.department_id, self.project_id)


@dataclass(frozen=True, slots=True)
class TemplateRow:
    id: str
    name: str
    scope_type: str
    scope_key: str
    department_id: int | None
    project_id: int | None
    document: dict[str, Any]
    audit: Audit
    #: A head (:meth:`Repository.template_heads`): ``document`` holds only its ``meta`` (name, description);
    #: :meth:`Repository.template` reads the whole row, :meth:`Repository.template_size` its stored size.
    head: bool = False
    #: The workload kind's name (``template_engine.kinds``; ``tables.templates.kind``): the document never
    #: says it but for a distributed file's own ``kind: distributed``, as written.
    kind: str = "distributed"
    cluster_id: int | None = None

    @property
    def unit_id(self) -> int | None:
        """The id of the unit whose scope the template is of (``None``: the system's)."""
        return unit_of(self.scope_type, self.cluster_id, self.department_id, self.project_id)


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """The org's cluster settings as stored (``cluster.yaml``'s document)."""

    document: dict[str, Any]
    #: The YAML the document was imported from, when it is not what an export writes for it.
    text: str | None
    audit: Audit


@dataclass(frozen=True, slots=True)
class WorkloadRow:
    id: str
    name: str
    requested_name: str
    project_id: int
    department_id: int | None
    cluster_id: str
    template_id: str | None
    desired_phase: str
    actual_phase: str | None
    master_same_as_worker: bool
    spec: dict[str, Any]
    master_spec: dict[str, Any] | None
    deleted_at: datetime | None
    audit: Audit
    #: The workload kind's name (``template_engine.kinds``; ``tables.workloads.kind``, schema revision 0006:
    #: every workload submitted before is distributed).
    kind: str = "distributed"


def _audit(row: Row[Any]) -> Audit:
    m = row._mapping
    return Audit(m["version"], m["created_by"], m["created_at"], m["updated_by"], m["updated_at"])


def _live(table: Table) -> ColumnElement[bool]:
    """Rows of a table of scope documents (``defaults``, ``policies``) that hold one: not a tombstone."""
    return cast(table.c.document, Text) != "null"


class _Keep:
    """The type of :data:`KEEP`."""


#: An update that leaves a unit's Run:ai fields as stored.
KEEP = _Keep()


def _runai(fields: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A unit's Run:ai fields for the ``runai`` column: ``None`` when none are given."""
    return dict(fields) if fields else None


def scope_key(scope_type: str, scope_id: int | None) -> str:
    return "system" if scope_type in ("system", "tenant") else f"{scope_type}:{scope_id}"


#: The column of a scoped row that names its unit, per named level.
UNIT_COLUMNS: dict[str, str] = {
    "cluster": "cluster_id",
    "department": "department_id",
    "project": "project_id",
}


def scope_columns(scope_type: str, unit_id: int | None) -> dict[str, int | None]:
    """The unit columns of a row scoped to ``scope_type``/``unit_id``: its own level's set, the others
    ``None`` (the system's, or Run:ai's ``tenant``: all ``None``)."""
    return {column: unit_id if level == scope_type else None for level, column in UNIT_COLUMNS.items()}


def unit_of(
    scope_type: str, cluster_id: int | None, department_id: int | None, project_id: int | None
) -> int | None:
    """The unit id of a scoped row, from its columns."""
    return {"cluster": cluster_id, "department": department_id, "project": project_id}.get(scope_type)


_U = TypeVar("_U", ClusterUnitRow, DepartmentRow, ProjectRow)


@dataclass(frozen=True, slots=True)
class UnitTable(Generic[_U]):
    """The table of one level of org units (departments, projects): the level's name, its table, the column
    naming its parent unit (``None``: its parent is the top scope) and how a row reads.  A level of units is a
    row here and a table, not a set of methods."""

    type: str
    table: Table
    parent: str | None
    row: Callable[[Row[Any]], _U]


CLUSTERS: UnitTable[ClusterUnitRow] = UnitTable(
    "cluster",
    t.clusters,
    None,
    lambda r: ClusterUnitRow(
        r.id, r.name, r.uuid, _audit(r), r.runai, r.settings, r.settings_text, r.settings_version
    ),
)
DEPARTMENTS: UnitTable[DepartmentRow] = UnitTable(
    "department",
    t.departments,
    "cluster_id",
    lambda r: DepartmentRow(r.id, r.name, r.description, _audit(r), r.runai, r.cluster_id),
)
PROJECTS: UnitTable[ProjectRow] = UnitTable(
    "project",
    t.projects,
    "department_id",
    lambda r: ProjectRow(r.id, r.name, r.description, r.department_id, _audit(r), r.runai),
)
#: The unit tables by level.
UNIT_TABLES: dict[str, UnitTable[Any]] = {unit.type: unit for unit in (CLUSTERS, DEPARTMENTS, PROJECTS)}


#: A read's row lock on PostgreSQL: none, ``FOR UPDATE`` (``True``) or ``FOR SHARE`` (``"share"``).
Lock = bool | Literal["share"]


class Repository:
    """Queries on ``connection``; the caller owns the transaction."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    # -- helpers --------------------------------------------------------------------------------------------

    def _one(self, query: Select[Any], lock: Lock) -> Row[Any] | None:
        if lock:
            query = query.with_for_update(read=lock == "share")
        return self.connection.execute(query).first()

    def _insert(self, table: Table, subject: str, values: Mapping[str, Any]) -> Any:
        _check_storable(table, values)
        stamp = t.now()
        audit = {"version": 1, "created_by": subject, "created_at": stamp}
        audit |= {"updated_by": subject, "updated_at": stamp}
        result = self.connection.execute(insert(table).values(**values, **audit))
        return result.inserted_primary_key[0] if result.inserted_primary_key else None

    def _update(self, table: Table, key: Any, version: int, subject: str, values: Mapping[str, Any]) -> int:
        _check_storable(table, values)
        pk = next(iter(table.primary_key.columns))
        result = self.connection.execute(
            update(table)
            .where(pk == key, table.c.version == version)
            .values(**values, version=version + 1, updated_by=subject, updated_at=t.now())
        )
        if result.rowcount != 1:
            raise StaleVersion(f"{table.name} {key} changed since version {version} was read")
        return version + 1

    def _delete(self, table: Table, key: Any, version: int) -> None:
        pk = next(iter(table.primary_key.columns))
        result = self.connection.execute(delete(table).where(pk == key, table.c.version == version))
        if result.rowcount != 1:
            raise StaleVersion(f"{table.name} {key} changed since version {version} was read")

    # -- departments and projects: one set of methods over the unit tables ---------------------------------

    def units(self, unit: UnitTable[_U], parent_id: int | None = None) -> list[_U]:
        """Every unit of a level, by id; ``parent_id``: only those under that parent unit."""
        query = select(unit.table).order_by(unit.table.c.id)
        if parent_id is not None and unit.parent is not None:
            query = query.where(unit.table.c[unit.parent] == parent_id)
        return [unit.row(r) for r in self.connection.execute(query)]

    def unit(self, unit: UnitTable[_U], unit_id: int, lock: Lock = False) -> _U | None:
        row = self._one(select(unit.table).where(unit.table.c.id == unit_id), lock)
        return unit.row(row) if row is not None else None

    def unit_named(self, unit: UnitTable[_U], name: str) -> _U | None:
        row = self._one(select(unit.table).where(unit.table.c.name == name), False)
        return unit.row(row) if row is not None else None

    def add_unit(
        self,
        unit: UnitTable[Any],
        name: str,
        description: str | None,
        subject: str,
        runai: Mapping[str, Any] | None = None,
        parent_id: int | None = None,
    ) -> int:
        """A new unit (of its parent unit ``parent_id``, for a level that has one); ``runai``: its Run:ai
        fields as given (``None``: none given)."""
        values: dict[str, Any] = {"name": name, "runai": _runai(runai)}
        if "description" in unit.table.c:
            values["description"] = description
        if unit.parent is not None:
            values[unit.parent] = parent_id
        return int(self._insert(unit.table, subject, values))

    def update_unit(
        self,
        unit: UnitTable[Any],
        unit_id: int,
        version: int,
        name: str,
        description: str | None,
        subject: str,
        runai: Mapping[str, Any] | _Keep | None = KEEP,
        parent_id: int | None = None,
    ) -> int:
        """Rename, describe or move a unit (``parent_id``: its new parent unit, ``None``: it stays); ``runai``
        replaces its Run:ai fields (``KEEP``: unchanged)."""
        values: dict[str, Any] = {"name": name}
        if "description" in unit.table.c:
            values["description"] = description
        if not isinstance(runai, _Keep):
            values["runai"] = _runai(runai)
        if parent_id is not None and unit.parent is not None:
            values[unit.parent] = parent_id
        return self._update(unit.table, unit_id, version, subject, values)

    # -- clusters -------------------------------------------------------------------------------------------

    def cluster_by_uuid(self, uuid: str, lock: Lock = False) -> ClusterUnitRow | None:
        row = self._one(select(t.clusters).where(t.clusters.c.uuid == uuid), lock)
        return CLUSTERS.row(row) if row is not None else None

    def add_cluster(self, uuid: str, name: str, runai: Mapping[str, Any] | None, subject: str) -> int:
        """A new cluster (its settings their defaults until written)."""
        values = {"uuid": uuid, "name": name, "runai": _runai(runai), "settings_version": 0}
        return int(self._insert(t.clusters, subject, values))

    def put_cluster_unit_settings(
        self, cluster_id: int, document: dict[str, Any], text: str | None, version: int, subject: str
    ) -> int:
        """Replace a cluster's settings (``version``: the settings' version read); returns the new one."""
        values = {"settings": document, "settings_text": text}
        _check_storable(t.clusters, values)
        result = self.connection.execute(
            update(t.clusters)
            .where(t.clusters.c.id == cluster_id, t.clusters.c.settings_version == version)
            .values(**values, settings_version=version + 1, updated_by=subject, updated_at=t.now())
        )
        if result.rowcount != 1:
            raise StaleVersion(f"clusters {cluster_id} settings changed since version {version} was read")
        return version + 1

    def adopt_departments(self, cluster_id: int) -> int:
        """Put every department without a cluster in ``cluster_id`` (the first cluster of an org of one);
        returns how many."""
        query = (
            update(t.departments).where(t.departments.c.cluster_id.is_(None)).values(cluster_id=cluster_id)
        )
        return int(self.connection.execute(query).rowcount)

    def department_names_in(self, cluster_id: int) -> list[str]:
        """The names of the cluster's departments."""
        query = select(t.departments.c.name).where(t.departments.c.cluster_id == cluster_id)
        return [str(name) for name in self.connection.execute(query.order_by(t.departments.c.name)).scalars()]

    def delete_unit(self, unit: UnitTable[Any], unit_id: int, version: int) -> None:
        self._delete(unit.table, unit_id, version)

    def departments(self) -> list[DepartmentRow]:
        return self.units(DEPARTMENTS)

    def projects(self, department_id: int | None = None) -> list[ProjectRow]:
        return self.units(PROJECTS, department_id)

    # -- defaults -------------------------------------------------------------------------------------------

    def _scope_rows(
        self, table: Table, keys: Sequence[str], lock: bool, where: ColumnElement[bool] | None = None
    ) -> list[Row[Any]]:
        """The rows of ``keys`` in a table of scope documents (those ``where`` picks), deleted ones
        (tombstones) included."""
        query = select(table).where(table.c.scope_key.in_(list(keys)))
        if where is not None:
            query = query.where(where)
        if lock:
            query = query.with_for_update()
        return list(self.connection.execute(query))

    def _all_scope_rows(self, table: Table, where: ColumnElement[bool] | None = None) -> list[Row[Any]]:
        query = select(table).where(_live(table)).order_by(table.c.scope_key)
        return list(self.connection.execute(query if where is None else query.where(where)))

    def _tombstone(
        self,
        table: Table,
        key: str,
        version: int,
        subject: str,
        values: Mapping[str, Any],
        where: ColumnElement[bool] | None = None,
    ) -> int:
        """Delete the document of a scope (the row ``where`` picks): its row stays, with no document and the
        next version."""
        picked = [table.c.scope_key == key, table.c.version == version, _live(table)]
        result = self.connection.execute(
            update(table)
            .where(*picked, *([] if where is None else [where]))
            .values(**values, document=JSON.NULL, version=version + 1, updated_by=subject, updated_at=t.now())
        )
        if result.rowcount != 1:
            raise StaleVersion(f"{table.name} {key} changed since version {version} was read")
        return version + 1

    # -- defaults -------------------------------------------------------------------------------------------

    @staticmethod
    def _defaults(row: Row[Any]) -> DefaultsRow:
        return DefaultsRow(row.scope_key, row.document, _audit(row))

    def defaults(self, keys: Sequence[str], lock: bool = False) -> dict[str, DefaultsRow]:
        """The defaults documents of the scopes of ``keys`` that have one (deleted ones are none)."""
        rows = self._scope_rows(t.defaults, keys, lock)
        return {r.scope_key: self._defaults(r) for r in rows if r.document is not None}

    def defaults_at(self, key: str, lock: bool = False) -> tuple[DefaultsRow | None, int]:
        """A scope's defaults (``None``: it has none) and the version they are at: their row's, a deleted
        document's (its tombstone keeps counting), 0 when the scope never had any."""
        rows = self._scope_rows(t.defaults, [key], lock)
        if not rows:
            return None, 0
        return (self._defaults(rows[0]) if rows[0].document is not None else None), int(rows[0].version)

    def all_defaults(self) -> list[DefaultsRow]:
        return [self._defaults(r) for r in self._all_scope_rows(t.defaults)]

    def put_defaults(
        self,
        key: str,
        document: dict[str, Any],
        version: int | None,
        subject: str,
        department_id: int | None = None,
        project_id: int | None = None,
        cluster_id: int | None = None,
    ) -> int:
        """Insert (``version`` None or 0: the scope has no row) or replace the layer document of one scope
        (``version``: the one :meth:`defaults_at` read, a deleted document's included); returns the new
        version."""
        if not version:
            values = {"scope_key": key, "document": document}
            units = {"department_id": department_id, "project_id": project_id, "cluster_id": cluster_id}
            self._insert(t.defaults, subject, values | units)
            return 1
        return self._update(t.defaults, key, version, subject, {"document": document})

    def delete_defaults(self, key: str, version: int, subject: str) -> int:
        """Delete a scope's defaults document (a tombstone keeps its row); returns the version it is at."""
        return self._tombstone(t.defaults, key, version, subject, {})

    # -- policies -------------------------------------------------------------------------------------------

    @staticmethod
    def _policy(row: Row[Any]) -> PolicyRow:
        kind = row._mapping.get("kind", DISTRIBUTED_POLICY)
        return PolicyRow(row.scope_key, row.document, row.text, _audit(row), kind)

    @staticmethod
    def _policy_table(kind: str) -> tuple[Table, ColumnElement[bool] | None]:
        """The table of the policies of ``kind`` and the condition that picks them there."""
        if kind == DISTRIBUTED_POLICY:
            return t.policies, None
        return t.kind_policies, t.kind_policies.c.kind == kind

    def policies(
        self, keys: Sequence[str], lock: bool = False, kind: str = DISTRIBUTED_POLICY
    ) -> dict[str, PolicyRow]:
        """The policy documents of ``kind`` of the scopes of ``keys`` that have one (deleted ones are
        none)."""
        table, where = self._policy_table(kind)
        rows = self._scope_rows(table, keys, lock, where)
        return {r.scope_key: self._policy(r) for r in rows if r.document is not None}

    def policy_at(
        self, key: str, lock: bool = False, kind: str = DISTRIBUTED_POLICY
    ) -> tuple[PolicyRow | None, int]:
        """A scope's policy document of ``kind`` (``None``: it has none) and the version it is at, as
        :meth:`defaults_at`."""
        table, where = self._policy_table(kind)
        rows = self._scope_rows(table, [key], lock, where)
        if not rows:
            return None, 0
        return (self._policy(rows[0]) if rows[0].document is not None else None), int(rows[0].version)

    def all_policies(self, kind: str = DISTRIBUTED_POLICY) -> list[PolicyRow]:
        """Every policy document of ``kind``, by scope key."""
        table, where = self._policy_table(kind)
        return [self._policy(r) for r in self._all_scope_rows(table, where)]

    def every_policy(self, keys: Sequence[str] | None = None) -> list[PolicyRow]:
        """The policy documents of every kind (of the scopes of ``keys``, or of all), distributed first, then
        by scope key and kind."""
        out = list(self.policies(keys).values()) if keys is not None else self.all_policies()
        c = t.kind_policies.c
        query = select(t.kind_policies).where(_live(t.kind_policies)).order_by(c.scope_key, c.kind)
        if keys is not None:
            query = query.where(c.scope_key.in_(list(keys)))
        return out + [self._policy(r) for r in self.connection.execute(query)]

    def put_policy(
        self,
        key: str,
        document: dict[str, Any],
        text: str | None,
        version: int | None,
        subject: str,
        department_id: int | None = None,
        project_id: int | None = None,
        kind: str = DISTRIBUTED_POLICY,
        cluster_id: int | None = None,
    ) -> int:
        """Insert (``version`` None or 0) or replace the policy of ``kind`` of one scope, as
        :meth:`put_defaults`; returns the new version."""
        table, where = self._policy_table(kind)
        if not version:
            values: dict[str, Any] = {"scope_key": key, "document": document, "text": text}
            values |= {"department_id": department_id, "project_id": project_id, "cluster_id": cluster_id}
            self._insert(table, subject, values if where is None else values | {"kind": kind})
            return 1
        if where is None:
            return self._update(table, key, version, subject, {"document": document, "text": text})
        values = {"document": document, "text": text}
        _check_storable(table, values)
        result = self.connection.execute(
            update(table)
            .where(table.c.scope_key == key, where, table.c.version == version)
            .values(**values, version=version + 1, updated_by=subject, updated_at=t.now())
        )
        if result.rowcount != 1:
            raise StaleVersion(f"{table.name} {key} {kind} changed since version {version} was read")
        return version + 1

    def delete_policy(self, key: str, version: int, subject: str, kind: str = DISTRIBUTED_POLICY) -> int:
        """Delete a scope's policy document of ``kind`` (a tombstone keeps its row); returns the version it
        is at."""
        table, where = self._policy_table(kind)
        return self._tombstone(table, key, version, subject, {"text": None}, where)

    # -- assets ---------------------------------------------------------------------------------------------

    @staticmethod
    def _asset(row: Row[Any]) -> AssetRow:
        return AssetRow(
            row.id,
            row.kind,
            row.name,
            row.document,
            _audit(row),
            row.scope_type,
            row.department_id,
            row.project_id,
            row.runai,
            row.cluster_id,
        )

    def assets(
        self,
        kind: str | None = None,
        *,
        name: str | None = None,
        scopes: Iterable[tuple[str, int | None]] | None = None,
        ids: Iterable[str] | None = None,
    ) -> list[AssetRow]:
        """The assets of ``kind`` (all kinds without), by kind and name; only the one ``name``, only those
        whose scope is among ``scopes`` (``("tenant", None)``, ``("department", 2)``, ``("project", 5)``),
        only those of ``ids``, when given."""
        query = select(t.assets).order_by(t.assets.c.kind, t.assets.c.name)
        if kind is not None:
            query = query.where(t.assets.c.kind == kind)
        if name is not None:
            query = query.where(t.assets.c.name == name)
        if ids is not None:
            query = query.where(t.assets.c.id.in_(sorted(set(ids))))
        if scopes is not None:
            query = query.where(or_(false(), *(self._scope_is(s, i) for s, i in scopes)))
        return [self._asset(r) for r in self.connection.execute(query)]

    @staticmethod
    def _scope_is(scope_type: str, unit: int | None) -> ColumnElement[bool]:
        column = t.assets.c.get(UNIT_COLUMNS.get(scope_type, ""))
        if column is None or unit is None:
            return t.assets.c.scope_type == scope_type
        return and_(t.assets.c.scope_type == scope_type, column == unit)

    def asset(self, asset_id: str, lock: bool = False) -> AssetRow | None:
        row = self._one(select(t.assets).where(t.assets.c.id == asset_id), lock)
        return self._asset(row) if row is not None else None

    def assets_named(self, wanted: Iterable[tuple[str, str]]) -> dict[tuple[str, str], AssetRow]:
        """The assets among ``(kind, name)`` pairs that exist."""
        pairs = set(wanted)
        if not pairs:
            return {}
        names = {name for _, name in pairs}
        rows = self.connection.execute(select(t.assets).where(t.assets.c.name.in_(names)))
        found = (self._asset(r) for r in rows)
        return {(a.kind, a.name): a for a in found if (a.kind, a.name) in pairs}

    def scope_usage(self, scope_type: str, unit: int | None, skip: str | None = None) -> tuple[int, int, int]:
        """What one scope stores: its templates, its assets and the characters of their stored JSON, the row
        ``skip`` (one being replaced) left out.  ``scope_type``: ``system`` (or ``tenant``, the same scope
        for assets), ``department`` or ``project``, with ``unit`` its id."""
        own = "system" if scope_type in ("system", "tenant") else scope_type
        out = [0, 0, 0]
        for index, (table, where) in enumerate(
            (
                (t.templates, t.templates.c.scope_key == scope_key(own, unit)),
                (t.assets, self._scope_is("tenant" if own == "system" else own, unit)),
            )
        ):
            size = func.coalesce(func.sum(func.length(cast(table.c.document, Text))), 0)
            query = select(func.count(), size).select_from(table).where(where)
            if skip is not None:
                query = query.where(table.c.id != skip)
            count, chars = self.connection.execute(query).one()
            out[index] = int(count)
            out[2] += int(chars)
        return out[0], out[1], out[2]

    def add_asset(
        self,
        asset_id: str,
        kind: str,
        name: str,
        document: dict[str, Any],
        subject: str,
        scope: tuple[str, int | None] = ("tenant", None),
        runai: dict[str, Any] | None = None,
    ) -> None:
        """A new asset; ``scope`` is ``(scope_type, unit_id)`` (``tables.assets``), ``runai`` Run:ai's meta
        fields that compose nothing here, as given."""
        description = (document.get("meta") or {}).get("description")
        scope_type, unit_id = scope
        values = {
            "id": asset_id,
            "kind": kind,
            "name": name,
            "description": description,
            "document": document,
            "scope_type": scope_type,
            **scope_columns(scope_type, unit_id),
            "runai": runai or None,
        }
        self._insert(t.assets, subject, values)

    def update_asset(
        self, asset_id: str, version: int, name: str, document: dict[str, Any], subject: str
    ) -> int:
        description = (document.get("meta") or {}).get("description")
        values = {"name": name, "description": description, "document": document}
        return self._update(t.assets, asset_id, version, subject, values)

    def set_asset_scope(self, asset_id: str, scope_type: str, unit_id: int | None) -> None:
        """Place an asset in its scope (``tenant``, or a level with its unit's id): the columns only, its
        version and audit as they are (``db import`` writes a file's placement)."""
        values = {"scope_type": scope_type, **scope_columns(scope_type, unit_id)}
        self.connection.execute(update(t.assets).where(t.assets.c.id == asset_id).values(**values))

    def assets_of_unit(self, kind: str, unit_id: int) -> list[AssetRow]:
        """The assets scoped to the department or project ``unit_id`` (``kind``: ``department``,
        ``project``), by kind and name."""
        column = t.assets.c[UNIT_COLUMNS[kind]]
        query = select(t.assets).where(column == unit_id).order_by(t.assets.c.kind, t.assets.c.name)
        return [self._asset(r) for r in self.connection.execute(query)]

    def delete_asset(self, asset_id: str, version: int) -> None:
        self._delete(t.assets, asset_id, version)

    def templates_using(self, asset_id: str) -> list[TemplateRow]:
        query = (
            select(t.templates)
            .join(t.template_assets, t.template_assets.c.template_id == t.templates.c.id)
            .where(t.template_assets.c.asset_id == asset_id)
            .order_by(t.templates.c.name, t.templates.c.id)
        )
        return [self._template(r) for r in self.connection.execute(query)]

    # -- templates ------------------------------------------------------------------------------------------

    @staticmethod
    def _template(row: Row[Any]) -> TemplateRow:
        return TemplateRow(
            row.id,
            row.name,
            row.scope_type,
            row.scope_key,
            row.department_id,
            row.project_id,
            row.document,
            _audit(row),
            kind=row.kind,
            cluster_id=row.cluster_id,
        )

    def templates(self, scope_keys: Sequence[str] | None = None) -> list[TemplateRow]:
        query = select(t.templates).order_by(t.templates.c.name, t.templates.c.id)
        if scope_keys is not None:
            query = query.where(t.templates.c.scope_key.in_(list(scope_keys)))
        return [self._template(r) for r in self.connection.execute(query)]

    def stored_chars(self) -> int:
        """The characters of every stored document's JSON: templates, assets, defaults and policies (of every
        kind)."""
        total = 0
        for table in (t.templates, t.assets, t.defaults, t.policies, t.kind_policies):
            size = func.coalesce(func.sum(func.length(cast(table.c.document, Text))), 0)
            total += int(self.connection.execute(select(size)).scalar_one())
        return total

    def template_heads(self) -> list[TemplateRow]:
        """Every template without its document (a list reads it only for the entries it shows): ``meta``'s
        name and description, by name."""
        c = t.templates.c
        columns = [column for column in t.templates.columns if column.name != "document"]
        query = select(*columns).order_by(c.name, c.id)
        out = []
        rows: Iterable[Row[Any]] = self.connection.execute(query)
        for row in rows:
            meta: dict[str, Any] = {"name": row.name}
            if row.description is not None:
                meta["description"] = row.description
            head = TemplateRow(
                row.id,
                row.name,
                row.scope_type,
                row.scope_key,
                row.department_id,
                row.project_id,
                {"meta": meta},
                _audit(row),
                head=True,
                kind=row.kind,
                cluster_id=row.cluster_id,
            )
            out.append(head)
        return out

    def template_size(self, template_id: str) -> int:
        """The characters of one template's stored JSON (0: no such template)."""
        size = func.length(cast(t.templates.c.document, Text))
        found = self.connection.execute(select(size).where(t.templates.c.id == template_id)).scalar()
        return int(found or 0)

    def template(self, template_id: str, lock: bool = False) -> TemplateRow | None:
        row = self._one(select(t.templates).where(t.templates.c.id == template_id), lock)
        return self._template(row) if row is not None else None

    def template_named(self, key: str, name: str) -> TemplateRow | None:
        query = select(t.templates).where(t.templates.c.scope_key == key, t.templates.c.name == name)
        row = self._one(query, False)
        return self._template(row) if row is not None else None

    def add_template(
        self,
        template_id: str,
        scope_type: str,
        scope_id: int | None,
        document: dict[str, Any],
        subject: str,
        kind: str = "distributed",
    ) -> None:
        """Add a template of ``kind`` (its document without ``kind``: the column says it)."""
        meta = document["meta"]
        values = {
            "id": template_id,
            "kind": kind,
            "name": meta["name"],
            "description": meta.get("description"),
            "scope_type": scope_type,
            "scope_key": scope_key(scope_type, scope_id),
            **scope_columns(scope_type, scope_id),
            "document": document,
        }
        self._insert(t.templates, subject, values)

    def update_template(
        self,
        template_id: str,
        version: int,
        document: dict[str, Any],
        subject: str,
        kind: str | None = None,
    ) -> int:
        """Replace a template's document (and its kind, when ``kind`` is given: ``db import`` of a file whose
        ``kind:`` changed; the API never changes a template's kind)."""
        meta = document["meta"]
        values = {"name": meta["name"], "description": meta.get("description"), "document": document}
        if kind is not None:
            values["kind"] = kind
        return self._update(t.templates, template_id, version, subject, values)

    def delete_template(self, template_id: str, version: int) -> None:
        self._delete(t.templates, template_id, version)

    def set_template_assets(self, template_id: str, asset_ids: Iterable[str]) -> None:
        self.connection.execute(
            delete(t.template_assets).where(t.template_assets.c.template_id == template_id)
        )
        rows = [{"template_id": template_id, "asset_id": a} for a in sorted(set(asset_ids))]
        if rows:
            self.connection.execute(insert(t.template_assets), rows)

    # -- cluster settings -----------------------------------------------------------------------------------

    def cluster_settings(self, lock: bool = False) -> ClusterRow | None:
        """The org's cluster settings; ``None``: none are stored (the defaults apply)."""
        row = self._one(select(t.cluster_settings).where(t.cluster_settings.c.id == 1), lock)
        return ClusterRow(row.document, row.text, _audit(row)) if row is not None else None

    def put_cluster_settings(
        self, document: dict[str, Any], text: str | None, version: int | None, subject: str
    ) -> int:
        """Insert (``version`` None or 0: none are stored) or replace the cluster settings (``version``: the
        one :meth:`cluster_settings` read); returns the new version."""
        if not version:
            self._insert(t.cluster_settings, subject, {"id": 1, "document": document, "text": text})
            return 1
        return self._update(t.cluster_settings, 1, version, subject, {"document": document, "text": text})

    # -- workloads ------------------------------------------------------------------------------------------

    @staticmethod
    def _workload(row: Row[Any]) -> WorkloadRow:
        return WorkloadRow(
            row.id,
            row.name,
            row.requested_name,
            row.project_id,
            row.department_id,
            row.cluster_id,
            row.template_id,
            row.desired_phase,
            row.actual_phase,
            row.master_same_as_worker,
            row.spec,
            row.master_spec,
            row.deleted_at,
            _audit(row),
            kind=row.kind,
        )

    def workload(self, workload_id: str, lock: bool = False) -> WorkloadRow | None:
        row = self._one(select(t.workloads).where(t.workloads.c.id == workload_id), lock)
        return self._workload(row) if row is not None else None

    def workloads(self, deleted: bool = False) -> list[WorkloadRow]:
        """The live workloads, or with ``deleted`` the deleted ones, oldest first."""
        column = t.workloads.c.deleted_at
        query = select(t.workloads).where(column.is_not(None) if deleted else column.is_(None))
        rows = self.connection.execute(query.order_by(t.workloads.c.created_at, t.workloads.c.id))
        return [self._workload(row) for row in rows]

    def live_workload_named(self, project_id: int, name: str) -> WorkloadRow | None:
        query = select(t.workloads).where(
            t.workloads.c.project_id == project_id,
            t.workloads.c.name == name,
            t.workloads.c.deleted_at.is_(None),
        )
        row = self._one(query, False)
        return self._workload(row) if row is not None else None

    def live_workloads_of(self, project_id: int) -> int:
        query = select(func.count()).select_from(t.workloads)
        query = query.where(t.workloads.c.project_id == project_id, t.workloads.c.deleted_at.is_(None))
        return int(self.connection.execute(query).scalar_one())

    def add_workload(self, values: Mapping[str, Any], subject: str) -> None:
        self._insert(t.workloads, subject, values)

    def update_workload(self, workload_id: str, version: int, values: Mapping[str, Any], subject: str) -> int:
        return self._update(t.workloads, workload_id, version, subject, values)

    # -- whole database -------------------------------------------------------------------------------------

    def is_empty(self) -> bool:
        scoped = (t.defaults, t.policies, t.kind_policies)
        for table in (t.clusters, t.departments, *scoped, t.assets, t.templates, t.cluster_settings):
            query = select(func.count()).select_from(table)
            if any(table is one for one in scoped):
                query = query.where(_live(table))
            if self.connection.execute(query).scalar_one():
                return False
        return True
