"""Clusters (issue 33): the org's clusters, a department's cluster, and documents at cluster scope.

- ``clusters``: Run:ai's ``DisplayedCluster`` fields and each cluster's settings
  (``clusters/C/cluster.yaml``).
- ``departments.cluster_id``: the cluster a department belongs to (``NULL``: an org without clusters).
- ``cluster_id`` on ``defaults``, ``policies``, ``kind_policies`` (``scope_key`` ``cluster:<id>``),
  ``templates`` and ``assets`` (``scope_type`` ``cluster``).

Every row is kept: a database without clusters is an org of one cluster, whose settings stay the one row of
``cluster_settings``, and composes as before.  The table is written out here, not taken from :mod:`...tables`,
so this revision stays what it is when the tables change in a later one.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision: str | None = "0006"
branch_labels: str | None = None
depends_on: str | None = None

_when = sa.DateTime(timezone=True)
#: The tables that take a cluster id, and what deleting the cluster does to their rows.
_SCOPED = {
    "departments": "RESTRICT",
    "defaults": "CASCADE",
    "policies": "CASCADE",
    "kind_policies": "CASCADE",
    "templates": "RESTRICT",
    "assets": "RESTRICT",
}


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    if not inspector.has_table("clusters"):
        op.create_table(
            "clusters",
            sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
            sa.Column("uuid", sa.String(36), nullable=False, unique=True),
            sa.Column("name", sa.String(253), nullable=False, unique=True),
            sa.Column("runai", sa.JSON()),
            sa.Column("settings", sa.JSON()),
            sa.Column("settings_text", sa.Text()),
            sa.Column("settings_version", sa.Integer(), nullable=False),
            sa.Column("version", sa.Integer(), nullable=False),
            sa.Column("created_by", sa.String(253), nullable=False),
            sa.Column("created_at", _when, nullable=False),
            sa.Column("updated_by", sa.String(253), nullable=False),
            sa.Column("updated_at", _when, nullable=False),
            sqlite_autoincrement=True,
        )
    for table, on_delete in _SCOPED.items():
        if "cluster_id" in {column["name"] for column in inspector.get_columns(table)}:
            continue
        # SQLite rebuilds the table to add a foreign key (with foreign keys off: ``database.upgrade``), so the
        # rebuilt departments must say again that their ids never come back (AUTOINCREMENT).
        kept = {"sqlite_autoincrement": True} if table == "departments" else {}
        with op.batch_alter_table(table, table_kwargs=kept) as batch:
            batch.add_column(sa.Column("cluster_id", sa.Integer()))
            batch.create_foreign_key(
                f"fk_{table}_cluster", "clusters", ["cluster_id"], ["id"], ondelete=on_delete
            )


def downgrade() -> None:
    for table in _SCOPED:
        kept = {"sqlite_autoincrement": True} if table == "departments" else {}
        with op.batch_alter_table(table, table_kwargs=kept) as batch:
            batch.drop_constraint(f"fk_{table}_cluster", type_="foreignkey")
            batch.drop_column("cluster_id")
    op.drop_table("clusters")
