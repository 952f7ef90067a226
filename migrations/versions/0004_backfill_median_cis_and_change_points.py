"""Reads never compute or write: the trend index covers a series, and old rows are filled once.

- `ix_measurements_trend` includes every column a series point shows (PostgreSQL only; SQLite
  has no INCLUDE), so a series read is an index-only scan that never reads the samples;
- `measurements.ci_low`/`ci_high` of rows stored before 0002 (NULL, with 6 or more samples),
  from their samples, with the same order statistics as at upload;
- `change_points` of every series, as if its runs had arrived in order (`backfill_changes`):
  from this revision on they are detected when a run is stored, and no read detects.

Downgrading restores the plain index and leaves the filled values in place (they are what a newer
upload stores anyway). Unlike the schema revisions this one runs perfgate's own
statistics, so the values are those of the perfgate that upgrades.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03 17:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Rows per round trip: a batch of samples stays a few MB.
_BATCH = 5000

_TREND_KEY = ["benchmark_id", "metric", "branch", "started_at"]
_TREND_COLUMNS = ["run_id", "median", "ci_low", "ci_high", "n", "unit", "direction"]

_measurements = sa.table(
    "measurements",
    sa.column("id", sa.BigInteger()),
    sa.column("n", sa.Integer()),
    sa.column("samples", sa.LargeBinary()),
    sa.column("ci_low", sa.Double()),
    sa.column("ci_high", sa.Double()),
)


def _backfill_cis(connection: sa.Connection) -> None:
    from perfgate.stats.median_ci import MIN_SAMPLES, median_cis

    m = _measurements.c
    after = 0
    while True:
        rows = connection.execute(
            sa.select(m.id, m.samples, m.n)
            .where(
                m.id > after,
                m.ci_low.is_(None),
                m.n >= MIN_SAMPLES,
                m.samples.is_not(None),
            )
            .order_by(m.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        after = rows[-1][0]
        cis = median_cis([(samples, n) for _, samples, n in rows])
        updates = [
            {"row_id": row_id, "low": ci[0], "high": ci[1]}
            for (row_id, _, _), ci in zip(rows, cis, strict=True)
            if ci is not None
        ]
        if updates:
            connection.execute(
                _measurements.update()
                .where(m.id == sa.bindparam("row_id"))
                .values(ci_low=sa.bindparam("low"), ci_high=sa.bindparam("high")),
                updates,
            )


def upgrade() -> None:
    from perfgate.store.change_points import backfill_changes

    with op.batch_alter_table("measurements") as batch:
        batch.drop_index("ix_measurements_trend")
        batch.create_index("ix_measurements_trend", _TREND_KEY, postgresql_include=_TREND_COLUMNS)
    connection = op.get_bind()
    _backfill_cis(connection)
    # In the migration's own transaction, which the session neither commits nor ends.
    session = Session(bind=connection, join_transaction_mode="rollback_only")
    try:
        backfill_changes(session)
    finally:
        session.close()


def downgrade() -> None:
    with op.batch_alter_table("measurements") as batch:
        batch.drop_index("ix_measurements_trend")
        batch.create_index("ix_measurements_trend", _TREND_KEY)
