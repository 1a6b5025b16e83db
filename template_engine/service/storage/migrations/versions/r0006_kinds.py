"""Workload kinds (issue 32): a template's and a workload's kind, and the policies of the other kinds.

- ``templates.kind`` and ``workloads.kind``: the kind's name (``template_engine.kinds``); every row made
  before is ``distributed``, which is what it was.
- ``kind_policies``: the policy of each kind but distributed per scope (``training-policy.yaml``...), keyed
  like ``policies`` and the kind.  The distributed policies stay in ``policies``, untouched.

Every row is kept: the migration adds, it never rewrites.  The table is written out here, not taken from
:mod:`...tables`, so this revision stays what it is when the tables change in a later one.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision: str | None = "0005"
branch_labels: str | None = None
depends_on: str | None = None

_when = sa.DateTime(timezone=True)


def upgrade() -> None:
    inspector = sa.inspect(op.get_bind())
    for table in ("templates", "workloads"):
        if "kind" not in {column["name"] for column in inspector.get_columns(table)}:
            op.add_column(
                table, sa.Column("kind", sa.String(24), nullable=False, server_default="distributed")
            )
    if not inspector.has_table("kind_policies"):
        op.create_table(
            "kind_policies",
            sa.Column("scope_key", sa.String(64), primary_key=True),
            sa.Column("kind", sa.String(24), primary_key=True),
            sa.Column("department_id", sa.Integer(), sa.ForeignKey("departments.id", ondelete="CASCADE")),
            sa.Column("project_id", sa.Integer(), sa.ForeignKey("projects.id", ondelete="CASCADE")),
            sa.Column("document", sa.JSON(), nullable=False),
            sa.Column("text", sa.Text()),
            sa.Column("version", sa.Integer(), nullable=False),
            sa.Column("created_by", sa.String(253), nullable=False),
            sa.Column("created_at", _when, nullable=False),
            sa.Column("updated_by", sa.String(253), nullable=False),
            sa.Column("updated_at", _when, nullable=False),
        )


def downgrade() -> None:
    op.drop_table("kind_policies")
    with op.batch_alter_table("workloads") as batch:
        batch.drop_column("kind")
    with op.batch_alter_table("templates") as batch:
        batch.drop_column("kind")
