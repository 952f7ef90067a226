"""Instances keep the name and params their run sent where these differ, as JSON, from the
benchmark row their key shares (params `1` and `"1"` both give the key `k[n=1]`).

Existing rows keep NULL: a run stored before this revision with such a difference lost it at
upload (it reads back with the shared row's params), and nothing stored can restore it.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03 20:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.add_column(sa.Column("benchmark_override", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("instances") as batch:
        batch.drop_column("benchmark_override")
