"""The database schema: SQLAlchemy Core tables.

Every mutable row carries a ``version`` (optimistic concurrency: an update names the version it read and
matches no row when another writer got there first).  Documents (template, defaults and asset bodies) are
stored as JSON exactly as written, so an export gives back what was imported.  Departments and projects have
integer ids (shown as strings, as Run:ai does); templates, assets and workloads have UUIDs.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect

#: The last schema version of the releases before Alembic (``schema_info``), which Alembic's baseline
#: revision ``0005`` is (:mod:`.migrations`).  The revisions after it set ``schema_info.version`` past it, so
#: that such a release refuses the database; a change to the tables below comes with a revision there.
SCHEMA_VERSION = 5


class UtcDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime on every backend (SQLite keeps no zone: it is stored and read back as UTC)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


metadata = MetaData()


def _audit() -> list[Column[Any]]:
    return [
        Column("version", Integer, nullable=False, default=1),
        Column("created_by", String(253), nullable=False),
        Column("created_at", UtcDateTime(), nullable=False),
        Column("updated_by", String(253), nullable=False),
        Column("updated_at", UtcDateTime(), nullable=False),
    ]


schema_info = Table(
    "schema_info",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("version", Integer, nullable=False),
)

#: The clusters of the org (revision 0007): Run:ai's ``DisplayedCluster`` (``uuid``, ``name``, ``domain``,
#: ``version``) and the cluster's settings (the document a ``clusters/C/cluster.yaml`` holds; ``None``: their
#: defaults), versioned apart from the cluster's own fields so that renaming a cluster does not change its
#: settings' ETag.  A database without rows here is an org of one cluster, whose settings are the one row of
#: ``cluster_settings``, as before; the first cluster made adopts them and every department.
clusters = Table(
    "clusters",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("uuid", String(36), nullable=False, unique=True),
    Column("name", String(253), nullable=False, unique=True),
    Column("runai", JSON),
    Column("settings", JSON),
    Column("settings_text", Text),
    Column("settings_version", Integer, nullable=False, default=1),
    *_audit(),
    sqlite_autoincrement=True,
)

departments = Table(
    "departments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(253), nullable=False, unique=True),
    Column("description", String(250)),
    #: The department's cluster (revision 0007); ``None`` in an org that has no cluster rows.
    Column("cluster_id", Integer, ForeignKey("clusters.id", ondelete="RESTRICT")),
    #: Run:ai's fields of the department that compose nothing here (``resources`` per node pool,
    #: ``schedulingRules``, ``defaultNodePools``, ``nodeTypes``...), stored as given and returned as stored;
    #: ``None`` when none was given (version 5).
    Column("runai", JSON),
    *_audit(),
    sqlite_autoincrement=True,
)

projects = Table(
    "projects",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(253), nullable=False, unique=True),
    Column("description", String(250)),
    Column("department_id", Integer, ForeignKey("departments.id", ondelete="RESTRICT"), nullable=False),
    #: Run:ai's fields of the project that compose nothing here, as for ``departments.runai`` (version 5).
    Column("runai", JSON),
    *_audit(),
    sqlite_autoincrement=True,
)

#: One layer document per scope; ``scope_key`` is ``system``, ``cluster:<id>``, ``department:<id>`` or
#: ``project:<id>``.  A
#: row whose ``document`` is JSON ``null`` is a tombstone: the scope's document was deleted, and its version
#: goes on from there at the next write, so that a version (an ETag) never names two documents.  Tombstones
#: read as no document (:mod:`.repository`); the row goes with its department or project.
defaults = Table(
    "defaults",
    metadata,
    Column("scope_key", String(64), primary_key=True),
    Column("cluster_id", Integer, ForeignKey("clusters.id", ondelete="CASCADE")),
    Column("department_id", Integer, ForeignKey("departments.id", ondelete="CASCADE")),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE")),
    Column("document", JSON, nullable=False),
    *_audit(),
)

#: One policy document per scope (``rules``, ``imposedAssets`` by data source name: a ``policy.yaml``), keyed
#: like ``defaults``.  ``text`` is the YAML the document was imported from (comments, order and lines kept)
#: when it differs from what an export would write for it; ``None`` otherwise (and after a change over
#: HTTP).  A deleted policy leaves a tombstone, as a deleted ``defaults`` document does.
policies = Table(
    "policies",
    metadata,
    Column("scope_key", String(64), primary_key=True),
    Column("cluster_id", Integer, ForeignKey("clusters.id", ondelete="CASCADE")),
    Column("department_id", Integer, ForeignKey("departments.id", ondelete="CASCADE")),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE")),
    Column("document", JSON, nullable=False),
    Column("text", Text),
    *_audit(),
)

#: The policy of each workload kind but distributed (``training``, ``workspace``, ``inference``,
#: ``distributed-inference``: ``template_engine.kinds``) per scope, keyed like ``policies`` and the kind;
#: ``document`` and ``text`` as there, tombstones as there (schema revision 0006, issue 32).
kind_policies = Table(
    "kind_policies",
    metadata,
    Column("scope_key", String(64), primary_key=True),
    Column("kind", String(24), primary_key=True),
    Column("cluster_id", Integer, ForeignKey("clusters.id", ondelete="CASCADE")),
    Column("department_id", Integer, ForeignKey("departments.id", ondelete="CASCADE")),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="CASCADE")),
    Column("document", JSON, nullable=False),
    Column("text", Text),
    *_audit(),
)

assets = Table(
    "assets",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("kind", String(16), nullable=False),
    Column("name", String(253), nullable=False),
    Column("description", String(250)),
    Column("document", JSON, nullable=False),
    #: Run:ai's asset scope (version 5): ``tenant`` (the whole org, every asset before version 5),
    #: ``department`` (with ``department_id``) or ``project`` (with ``project_id``).
    Column("scope_type", String(16), nullable=False, server_default="tenant"),
    Column("cluster_id", Integer, ForeignKey("clusters.id", ondelete="RESTRICT")),
    Column("department_id", Integer, ForeignKey("departments.id", ondelete="RESTRICT")),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="RESTRICT")),
    #: Run:ai's asset fields that compose nothing here (``meta.workloadSupportedTypes``, ``autoDelete``...),
    #: stored as given; ``None`` when none was given (version 5).
    Column("runai", JSON),
    *_audit(),
    UniqueConstraint("kind", "name", name="uq_assets_kind_name"),
)

templates = Table(
    "templates",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(253), nullable=False),
    Column("description", String(250)),
    Column("scope_type", String(16), nullable=False),
    Column("scope_key", String(64), nullable=False),
    Column("cluster_id", Integer, ForeignKey("clusters.id", ondelete="RESTRICT")),
    Column("department_id", Integer, ForeignKey("departments.id", ondelete="RESTRICT")),
    Column("project_id", Integer, ForeignKey("projects.id", ondelete="RESTRICT")),
    #: The workload kind's name (``template_engine.kinds``; schema revision 0006: every earlier template is
    #: distributed).  A name is unique in its scope across kinds, as Run:ai's name availability answers.
    Column("kind", String(24), nullable=False, server_default="distributed"),
    #: The template document as written, ``meta`` (name, description) included, scope excluded.
    Column("document", JSON, nullable=False),
    *_audit(),
    UniqueConstraint("scope_key", "name", name="uq_templates_scope_name"),
)

#: Which assets a template refers to; the foreign key refuses to delete an asset still in use.
template_assets = Table(
    "template_assets",
    metadata,
    Column("template_id", String(36), ForeignKey("templates.id", ondelete="CASCADE"), primary_key=True),
    Column("asset_id", String(36), ForeignKey("assets.id", ondelete="RESTRICT"), primary_key=True),
)

workloads = Table(
    "workloads",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("name", String(253), nullable=False),
    Column("requested_name", String(253), nullable=False),
    #: No foreign key: a workload's record outlives its project.
    Column("project_id", Integer, nullable=False),
    Column("department_id", Integer),
    Column("cluster_id", String(36), nullable=False),
    Column("template_id", String(36)),
    #: The workload kind's name (schema revision 0006: every earlier workload is distributed).
    Column("kind", String(24), nullable=False, server_default="distributed"),
    Column("desired_phase", String(16), nullable=False),
    Column("actual_phase", String(16)),
    Column("master_same_as_worker", Boolean, nullable=False),
    Column("spec", JSON, nullable=False),
    Column("master_spec", JSON),
    Column("deleted_at", UtcDateTime()),
    *_audit(),
)

#: One row (``id`` 1) or none: the org's cluster settings, the document a ``cluster.yaml`` holds
#: (:class:`template_engine.cluster.settings.ClusterSettings`).  No row means the defaults (a database made
#: before version 4 has none).  ``text`` is the YAML it was imported from when that differs from what an
#: export would write, as for ``policies``; ``None`` otherwise (and after a change over HTTP).
cluster_settings = Table(
    "cluster_settings",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("document", JSON, nullable=False),
    Column("text", Text),
    *_audit(),
)

# A name is taken by the live workloads of a project only.
Index(
    "uq_workloads_live_name",
    workloads.c.project_id,
    workloads.c.name,
    unique=True,
    sqlite_where=workloads.c.deleted_at.is_(None),
    postgresql_where=workloads.c.deleted_at.is_(None),
)
Index("ix_templates_department", templates.c.department_id)
Index("ix_templates_project", templates.c.project_id)
Index("ix_template_assets_asset", template_assets.c.asset_id)


#: The tables of the running service, not of the org: kept apart from :data:`metadata` so that an export,
#: an import and a comparison of two databases never see them, and dropping the org's tables keeps them.
runtime = MetaData()

#: One row (``id`` 1): the revision of everything stored.  Every write transaction adds one to ``revision``
#: before it commits (:func:`..database.transaction`), so a process that reads the row knows whether anything
#: changed since it last composed an answer (its response cache is keyed by it).  ``epoch`` is drawn when the
#: row is created: a database re-created from scratch never repeats an ``(epoch, revision)`` pair.
org_revision = Table(
    "org_revision",
    runtime,
    Column("id", Integer, primary_key=True),
    Column("epoch", String(36), nullable=False),
    Column("revision", BigInteger, nullable=False),
)

#: The UI's sign-in sessions (:mod:`..ui.session`), shared by every process on the database.  The cookie
#: holds a random id; a row holds only its SHA-256 (``id_hash``), so the table gives no one a session.
#: ``credential`` names what the session was opened with (a digest naming an auth-file token or an
#: application, never the token: :meth:`..auth.Authenticator.sign_in`); the principal is the one it signed
#: in.  Sign-out deletes the row; a row past ``expires_at`` is no session, and is deleted when the next
#: session opens.  Created by the baseline revision (releases before Alembic made it at start-up).
ui_sessions = Table(
    "ui_sessions",
    runtime,
    Column("id_hash", String(64), primary_key=True),
    Column("subject", String(253), nullable=False),
    Column("role", String(32), nullable=False),
    Column("department", String(253)),
    Column("project", String(253)),
    Column("credential", String(64), nullable=False),
    Column("created_at", UtcDateTime(), nullable=False),
    Column("expires_at", UtcDateTime(), nullable=False),
)
Index("ix_ui_sessions_expires", ui_sessions.c.expires_at)


def now() -> datetime:
    return datetime.now(UTC)
