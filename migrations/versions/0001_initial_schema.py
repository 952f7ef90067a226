"""Initial schema: projects, tokens, environments, runs, benchmarks, instances, measurements,
ops and change points.

Revision ID: 0001
Revises:
Create Date: 2026-12-02 10:27:46.144277
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "environments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=128), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_environments")),
        sa.UniqueConstraint("fingerprint", name=op.f("uq_environments_fingerprint")),
    )
    op.create_table(
        "projects",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_projects")),
        sa.UniqueConstraint("name", name=op.f("uq_projects_name")),
    )
    op.create_table(
        "benchmarks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=1000), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_benchmarks_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_benchmarks")),
        sa.UniqueConstraint("project_id", "key", name=op.f("uq_benchmarks_project_id_key")),
    )
    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("commit", sa.String(length=64), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("pr", sa.Integer(), nullable=True),
        sa.Column("base_commit", sa.String(length=64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("environment_overrides", sa.JSON(), nullable=False),
        sa.Column("ci", sa.JSON(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("uploaded_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["environment_id"],
            ["environments.id"],
            name=op.f("fk_runs_environment_id_environments"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_runs_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_runs")),
    )
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_runs_environment_id"), ["environment_id"], unique=False
        )
        batch_op.create_index(
            "ix_runs_project_branch_started", ["project_id", "branch", "started_at"], unique=False
        )
        batch_op.create_index("ix_runs_project_commit", ["project_id", "commit"], unique=False)

    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("scope IN ('upload', 'read')", name=op.f("ck_tokens_scope")),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_tokens_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tokens")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_tokens_token_hash")),
    )
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_tokens_project_id"), ["project_id"], unique=False)

    op.create_table(
        "change_points",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=64), nullable=False),
        sa.Column("branch", sa.String(length=255), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("commit", sa.String(length=64), nullable=False),
        sa.Column("before", sa.Double(), nullable=False),
        sa.Column("after", sa.Double(), nullable=False),
        sa.Column("ratio", sa.Double(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("detected_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('open', 'acknowledged', 'dismissed')", name=op.f("ck_change_points_status")
        ),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmarks.id"],
            name=op.f("fk_change_points_benchmark_id_benchmarks"),
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_change_points_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_change_points_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_points")),
        sa.UniqueConstraint(
            "benchmark_id",
            "metric",
            "branch",
            "run_id",
            name=op.f("uq_change_points_benchmark_id_metric_branch_run_id"),
        ),
    )
    with op.batch_alter_table("change_points", schema=None) as batch_op:
        batch_op.create_index(
            "ix_change_points_project_branch_status",
            ["project_id", "branch", "status"],
            unique=False,
        )

    op.create_table(
        "instances",
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("device", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("has_profile", sa.Boolean(), nullable=False),
        sa.Column("trace", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["benchmark_id"], ["benchmarks.id"], name=op.f("fk_instances_benchmark_id_benchmarks")
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_instances_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("run_id", "benchmark_id", name=op.f("pk_instances")),
    )
    op.create_table(
        "measurements",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("metric", sa.String(length=64), nullable=False),
        sa.Column("unit", sa.String(length=32), nullable=False),
        sa.Column("direction", sa.String(length=8), nullable=False),
        sa.Column("exact", sa.Boolean(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("median", sa.Double(), nullable=False),
        sa.Column("iqr", sa.Double(), nullable=False),
        sa.Column("min", sa.Double(), nullable=False),
        sa.Column("max", sa.Double(), nullable=False),
        sa.Column("samples", sa.LargeBinary(), nullable=True),
        sa.Column("rounds", sa.JSON(), nullable=True),
        sa.Column("value", sa.Double(), nullable=True),
        sa.Column("method", sa.String(length=64), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("branch", sa.String(length=255), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "direction IN ('lower', 'higher')", name=op.f("ck_measurements_direction")
        ),
        sa.ForeignKeyConstraint(
            ["benchmark_id"],
            ["benchmarks.id"],
            name=op.f("fk_measurements_benchmark_id_benchmarks"),
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_measurements_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_measurements")),
        sa.UniqueConstraint(
            "run_id",
            "benchmark_id",
            "metric",
            name=op.f("uq_measurements_run_id_benchmark_id_metric"),
        ),
    )
    with op.batch_alter_table("measurements", schema=None) as batch_op:
        batch_op.create_index(
            "ix_measurements_trend",
            ["benchmark_id", "metric", "branch", "started_at"],
            unique=False,
        )

    op.create_table(
        "ops",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("run_id", sa.String(length=36), nullable=False),
        sa.Column("benchmark_id", sa.Integer(), nullable=False),
        sa.Column("op", sa.Text(), nullable=False),
        sa.Column("count", sa.Double(), nullable=False),
        sa.Column("self_cpu_us", sa.Double(), nullable=False),
        sa.Column("self_device_us", sa.Double(), nullable=False),
        sa.Column("flops", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["benchmark_id"], ["benchmarks.id"], name=op.f("fk_ops_benchmark_id_benchmarks")
        ),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name=op.f("fk_ops_run_id_runs"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_ops")),
    )
    with op.batch_alter_table("ops", schema=None) as batch_op:
        batch_op.create_index("ix_ops_run_benchmark", ["run_id", "benchmark_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("ops", schema=None) as batch_op:
        batch_op.drop_index("ix_ops_run_benchmark")

    op.drop_table("ops")
    with op.batch_alter_table("measurements", schema=None) as batch_op:
        batch_op.drop_index("ix_measurements_trend")

    op.drop_table("measurements")
    op.drop_table("instances")
    with op.batch_alter_table("change_points", schema=None) as batch_op:
        batch_op.drop_index("ix_change_points_project_branch_status")

    op.drop_table("change_points")
    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_tokens_project_id"))

    op.drop_table("tokens")
    with op.batch_alter_table("runs", schema=None) as batch_op:
        batch_op.drop_index("ix_runs_project_commit")
        batch_op.drop_index("ix_runs_project_branch_started")
        batch_op.drop_index(batch_op.f("ix_runs_environment_id"))

    op.drop_table("runs")
    op.drop_table("benchmarks")
    op.drop_table("projects")
    op.drop_table("environments")
