"""Baseline: the schema of schema version 5, the last one before Alembic.

On an empty database it creates every table.  On a database at schema versions 1 to 4 (made by a release
before Alembic) it creates what those versions lacked, as their own migrations did: ``policies`` (version
2), ``org_revision`` and its row (3), ``ui_sessions`` (made at start-up by releases from version 3 on),
``cluster_settings`` (4), and the columns of version 5: Run:ai's ``runai`` fields of departments, projects
and assets (``NULL`` for every existing row) and the asset scope (``tenant`` for every existing asset: before
version 5 every asset was org-wide).  A table or column already there is left as it is.

The tables are written out here, not taken from :mod:`...tables`: this revision stays what it is when the
tables change in a later one.

Revision ID: 0005
Revises: (none)
"""

from __future__ import annotations

import uuid
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

_frozen = sa.MetaData()
_when = sa.DateTime(timezone=True)


def _audit() -> list[sa.Column[Any]]:
    return [
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("created_by", sa.String(253), nullable=False),
        sa.Column("created_at", _when, nullable=False),
        sa.Column("updated_by", sa.String(253), nullable=False),
        sa.Column("updated_at", _when, nullable=False),
    ]


def _scope_keys(on_delete: str) -> list[sa.Column[Any]]:
    return [
        sa.Column("department_id", sa.Integer(), sa.ForeignKey("departments.id", ondelete=on_delete)),
        sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete=on_delete)),
    ]


_TABLES = [
    sa.Table(
        "schema_info",
        _frozen,
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("version", sa.Integer(), nullable=False),
    ),
    sa.Table(
        "departments",
        _frozen,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(253), nullable=False, unique=True),
        sa.Column("description", sa.String(250)),
        sa.Column("runai", sa.JSON()),
        *_audit(),
        sqlite_autoincrement=True,
    ),
    sa.Table(
        "projects",
        _frozen,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(253), nullable=False, unique=True),
        sa.Column("description", sa.String(250)),
        sa.Column(
            "department_id",
            sa.Integer(),
            sa.ForeignKey("departments.id", ondelete="RESTRICT"),
            nullable=False,
        ),
        sa.Column("runai", sa.JSON()),
        *_audit(),
        sqlite_autoincrement=True,
    ),
    sa.Table(
        "defaults",
        _frozen,
        sa.Column("scope_key", sa.String(64), primary_key=True),
        *_scope_keys("CASCADE"),
        sa.Column("document", sa.JSON(), nullable=False),
        *_audit(),
    ),
    sa.Table(
        "policies",
        _frozen,
        sa.Column("scope_key", sa.String(64), primary_key=True),
        *_scope_keys("CASCADE"),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("text", sa.Text()),
        *_audit(),
    ),
    sa.Table(
        "assets",
        _frozen,
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("description", sa.String(250)),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("scope_type", sa.String(16), nullable=False, server_default="tenant"),
        *_scope_keys("RESTRICT"),
        sa.Column("runai", sa.JSON()),
        *_audit(),
        sa.UniqueConstraint("kind", "name", name="uq_assets_kind_name"),
    ),
    sa.Table(
        "templates",
        _frozen,
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("description", sa.String(250)),
        sa.Column("scope_type", sa.String(16), nullable=False),
        sa.Column("scope_key", sa.String(64), nullable=False),
        *_scope_keys("RESTRICT"),
        sa.Column("document", sa.JSON(), nullable=False),
        *_audit(),
        sa.UniqueConstraint("scope_key", "name", name="uq_templates_scope_name"),
        sa.Index("ix_templates_department", "department_id"),
        sa.Index("ix_templates_project", "project_id"),
    ),
    sa.Table(
        "template_assets",
        _frozen,
        sa.Column(
            "template_id",
            sa.String(36),
            sa.ForeignKey("templates.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "asset_id", sa.String(36), sa.ForeignKey("assets.id", ondelete="RESTRICT"), primary_key=True
        ),
        sa.Index("ix_template_assets_asset", "asset_id"),
    ),
    sa.Table(
        "workloads",
        _frozen,
        sa.Column("id", sa.String(36), primary_key=True),
        sa.Column("name", sa.String(253), nullable=False),
        sa.Column("requested_name", sa.String(253), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("department_id", sa.Integer()),
        sa.Column("cluster_id", sa.String(36), nullable=False),
        sa.Column("template_id", sa.String(36)),
        sa.Column("desired_phase", sa.String(16), nullable=False),
        sa.Column("actual_phase", sa.String(16)),
        sa.Column("master_same_as_worker", sa.Boolean(), nullable=False),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("master_spec", sa.JSON()),
        sa.Column("deleted_at", _when),
        *_audit(),
        sa.Index(
            "uq_workloads_live_name",
            "project_id",
            "name",
            unique=True,
            sqlite_where=sa.text("deleted_at IS NULL"),
            postgresql_where=sa.text("deleted_at IS NULL"),
        ),
    ),
    sa.Table(
        "cluster_settings",
        _frozen,
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("text", sa.Text()),
        *_audit(),
    ),
    sa.Table(
        "org_revision",
        _frozen,
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("epoch", sa.String(36), nullable=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
    ),
    sa.Table(
        "ui_sessions",
        _frozen,
        sa.Column("id_hash", sa.String(64), primary_key=True),
        sa.Column("subject", sa.String(253), nullable=False),
        sa.Column("role", sa.String(32), nullable=False),
        sa.Column("department", sa.String(253)),
        sa.Column("project", sa.String(253)),
        sa.Column("credential", sa.String(64), nullable=False),
        sa.Column("created_at", _when, nullable=False),
        sa.Column("expires_at", _when, nullable=False),
        sa.Index("ix_ui_sessions_expires", "expires_at"),
    ),
]

#: The columns version 5 added to tables that versions 1 to 4 had (SQLite's ``ALTER TABLE ... ADD COLUMN``
#: takes each of these, a foreign key included, so no batch rebuild of the table is needed).
_VERSION_5_COLUMNS = {
    "departments": ["runai JSON"],
    "projects": ["runai JSON"],
    "assets": [
        "runai JSON",
        "scope_type VARCHAR(16) NOT NULL DEFAULT 'tenant'",
        "department_id INTEGER REFERENCES departments (id)",
        "project_id INTEGER REFERENCES projects (id)",
    ],
}


def upgrade() -> None:
    bind = op.get_bind()
    present = set(sa.inspect(bind).get_table_names())
    for table in _TABLES:
        if table.name not in present:
            table.create(bind)
    inspector = sa.inspect(bind)
    for name, columns in _VERSION_5_COLUMNS.items():
        if name not in present:
            continue
        have = {column["name"] for column in inspector.get_columns(name)}
        for column in columns:
            if column.split()[0] not in have:
                op.execute(f"ALTER TABLE {name} ADD COLUMN {column}")
    org_revision, schema_info = _frozen.tables["org_revision"], _frozen.tables["schema_info"]
    if bind.execute(sa.select(org_revision.c.id).where(org_revision.c.id == 1)).first() is None:
        bind.execute(sa.insert(org_revision).values(id=1, epoch=str(uuid.uuid4()), revision=0))
    if bind.execute(sa.select(schema_info.c.id).where(schema_info.c.id == 1)).first() is None:
        bind.execute(sa.insert(schema_info).values(id=1, version=5))
    else:
        bind.execute(sa.update(schema_info).where(schema_info.c.id == 1).values(version=5))


def downgrade() -> None:
    raise NotImplementedError("the baseline is not undone: restore a backup taken before the upgrade")
