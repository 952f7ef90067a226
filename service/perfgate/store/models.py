"""SQLAlchemy 2.0 table classes: portable types only, so SQLite and PostgreSQL share one history.

Every change here ships an Alembic revision in migrations/versions/ (a test fails otherwise).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Dialect,
    Double,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

# Named constraints make migrations reviewable and let SQLite's batch mode find them again.
NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments INTEGER PRIMARY KEY; PostgreSQL gets 64-bit ids for the big tables.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored in UTC and always read back timezone-aware (SQLite drops the zone)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


class Project(Base):
    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Token(Base):
    __tablename__ = "tokens"
    __table_args__ = (CheckConstraint("scope IN ('upload', 'read')", name="scope"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(
        ForeignKey("projects.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str | None] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(16))
    # sha256 of the token; the token itself is shown once and never stored.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    last_used_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime())


class Environment(Base):
    """One row per fingerprint: the performance-relevant description of a machine."""

    __tablename__ = "environments"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(128), unique=True)
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Run(Base):
    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_project_commit", "project_id", "commit"),
        Index("ix_runs_project_branch_started", "project_id", "branch", "started_at"),
    )

    # The run's uuid from the results document, so re-uploads are recognised.
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    commit: Mapped[str] = mapped_column(String(64))
    branch: Mapped[str | None] = mapped_column(String(255))
    pr: Mapped[int | None] = mapped_column(Integer)
    base_commit: Mapped[str | None] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    environment_id: Mapped[int] = mapped_column(ForeignKey("environments.id"), index=True)
    # Fields of this run's environment that differ from the shared row (hostname, mostly),
    # so the document can be rebuilt exactly.
    environment_overrides: Mapped[dict[str, Any]] = mapped_column(JSON)
    ci: Mapped[dict[str, Any]] = mapped_column(JSON)
    content_hash: Mapped[str] = mapped_column(String(64))
    uploaded_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Benchmark(Base):
    """A benchmark instance (name + params) of a project; stored once per (project, key)."""

    __tablename__ = "benchmarks"
    __table_args__ = (UniqueConstraint("project_id", "key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(1000))
    name: Mapped[str] = mapped_column(String(255))
    params: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Instance(Base):
    """A benchmark as it ran in one run: its device, tags, error and trace path."""

    __tablename__ = "instances"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"), primary_key=True)
    # Order within the document, so the document can be rebuilt as it was sent.
    position: Mapped[int] = mapped_column(Integer)
    device: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(JSON)
    has_profile: Mapped[bool] = mapped_column(Boolean)
    trace: Mapped[str | None] = mapped_column(Text)
    # {"name", "params"} as this run sent them, where they differ as JSON from the benchmark row
    # its key shares (params 1 and "1" both give the key `k[n=1]`); NULL (or JSON null) where
    # they do not, which is almost always.
    benchmark_override: Mapped[dict[str, Any] | None] = mapped_column(JSON)


# What a series point shows besides the trend index's key (store/trends.py reads only these).
TREND_COLUMNS = ["run_id", "median", "ci_low", "ci_high", "n", "unit", "direction"]


class Measurement(Base):
    """One metric of one benchmark in one run: its summary and, when sampled, every sample."""

    __tablename__ = "measurements"
    __table_args__ = (
        UniqueConstraint("run_id", "benchmark_id", "metric"),
        CheckConstraint("direction IN ('lower', 'higher')", name="direction"),
        # The trend query (one key, metric, branch, time range) is a range scan of this index;
        # branch and started_at are copied from the (immutable) run for that reason. On
        # PostgreSQL it also carries every column a series shows, so the read is an index-only
        # scan that never touches the wide heap rows (the samples live there).
        Index(
            "ix_measurements_trend",
            "benchmark_id",
            "metric",
            "branch",
            "started_at",
            postgresql_include=TREND_COLUMNS,
        ),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"))
    metric: Mapped[str] = mapped_column(String(64))
    unit: Mapped[str] = mapped_column(String(32))
    direction: Mapped[str] = mapped_column(String(8))
    exact: Mapped[bool] = mapped_column(Boolean)
    n: Mapped[int] = mapped_column(Integer)
    median: Mapped[float] = mapped_column(Double)
    iqr: Mapped[float] = mapped_column(Double)
    min: Mapped[float] = mapped_column(Double)
    max: Mapped[float] = mapped_column(Double)
    # The 95% CI of the median (perfgate.stats.summary.median_ci; NULL under 6 samples), kept
    # so the trend query never reads samples.
    ci_low: Mapped[float | None] = mapped_column(Double)
    ci_high: Mapped[float | None] = mapped_column(Double)
    # Little-endian float64, one per sample: 8 bytes a sample on both backends.
    samples: Mapped[bytes | None] = mapped_column(LargeBinary)
    rounds: Mapped[list[int] | None] = mapped_column(JSON)
    value: Mapped[float | None] = mapped_column(Double)
    method: Mapped[str | None] = mapped_column(String(64))
    note: Mapped[str | None] = mapped_column(Text)
    branch: Mapped[str | None] = mapped_column(String(255))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())


class Op(Base):
    """Per-call profile row of one operator, for one benchmark in one run."""

    __tablename__ = "ops"
    __table_args__ = (Index("ix_ops_run_benchmark", "run_id", "benchmark_id"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"))
    op: Mapped[str] = mapped_column(Text)
    count: Mapped[float] = mapped_column(Double)
    self_cpu_us: Mapped[float] = mapped_column(Double)
    self_device_us: Mapped[float] = mapped_column(Double)
    flops: Mapped[float] = mapped_column(Double)


CHANGE_POINT_STATUSES = ("open", "acknowledged", "dismissed")


class ChangePoint(Base):
    """A detected shift in one benchmark's series on one branch, starting at `run_id`."""

    __tablename__ = "change_points"
    __table_args__ = (
        UniqueConstraint("benchmark_id", "metric", "branch", "run_id"),
        CheckConstraint("status IN ('open', 'acknowledged', 'dismissed')", name="status"),
        Index("ix_change_points_project_branch_status", "project_id", "branch", "status"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    benchmark_id: Mapped[int] = mapped_column(ForeignKey("benchmarks.id"))
    metric: Mapped[str] = mapped_column(String(64))
    branch: Mapped[str] = mapped_column(String(255))
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"))
    commit: Mapped[str] = mapped_column(String(64))
    before: Mapped[float] = mapped_column(Double)
    after: Mapped[float] = mapped_column(Double)
    ratio: Mapped[float] = mapped_column(Double)
    status: Mapped[str] = mapped_column(String(16), default="open")
    detected_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)


class Calibration(Base):
    """A calibration record: N A/A rounds of one commit on one runner class (fingerprint).

    `record` is the `perfgate/calibration@1` JSON of `perfgate.stats.calibration.Calibration`;
    the columns beside it are what records are found by.
    """

    __tablename__ = "calibrations"
    __table_args__ = (
        # The comparator's lookup: the newest record of a project's runner.
        Index("ix_calibrations_project_fingerprint", "project_id", "fingerprint", "started_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id", ondelete="CASCADE"))
    # Not a foreign key to environments: a measured calibration stores no run, so the runner
    # may have no environment row.
    fingerprint: Mapped[str] = mapped_column(String(128))
    commit: Mapped[str] = mapped_column(String(64))
    started_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow)
    rounds: Mapped[int] = mapped_column(Integer)
    record: Mapped[str] = mapped_column(Text)
