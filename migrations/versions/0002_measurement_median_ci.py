"""Measurements keep the 95% CI of their median, so trend queries never read samples.

Existing rows keep NULL and are filled from their samples when read (store/trends.py).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02 15:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.add_column(sa.Column("ci_low", sa.Double(), nullable=True))
        batch.add_column(sa.Column("ci_high", sa.Double(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_column("ci_high")
        batch.drop_column("ci_low")
