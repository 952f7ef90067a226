"""The API's own shapes (pydantic), converted at the border from the store's dataclasses."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from perfgate.store.catalog import BenchmarkSummary, ProjectSummary, RunSummary
from perfgate.store.trends import ChangePointView, Series


def _in_utc(value: datetime | None) -> datetime | None:
    # A time near year 1 or 9999 with an offset has no UTC equivalent: bad input, not a crash.
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError("out of range: a time must fall within the years 1-9999 in UTC") from None


# A time parameter (`since`, `until`, `before`), converted to UTC as it is validated; one that
# cannot be is a 422 naming the parameter.
UtcTime = Annotated[datetime | None, AfterValidator(_in_utc)]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(_Out):
    code: str = Field(description="Stable machine-readable code, e.g. `invalid_document`.")
    message: str = Field(description="One line for a person; names the field when it can.")


class ErrorResponse(_Out):
    error: ErrorDetail


class RunCreated(_Out):
    id: str = Field(description="The run's id (the document's run.id).")


class Health(_Out):
    status: Literal["ok"]


class Ready(_Out):
    status: Literal["ok"]
    revision: str = Field(description="The database's schema revision (the migrations' head).")


class ProjectOut(_Out):
    name: str
    created_at: datetime
    runs: int
    latest_run_at: datetime | None

    @classmethod
    def of(cls, p: ProjectSummary) -> ProjectOut:
        return cls(name=p.name, created_at=p.created_at, runs=p.runs, latest_run_at=p.latest_run_at)


class ProjectsOut(_Out):
    projects: list[ProjectOut]


class BenchmarkOut(_Out):
    key: str
    name: str
    params: dict[str, Any]

    @classmethod
    def of(cls, b: BenchmarkSummary) -> BenchmarkOut:
        return cls(key=b.key, name=b.name, params=b.params)


class BenchmarksOut(_Out):
    project: str
    benchmarks: list[BenchmarkOut]


class RunOut(_Out):
    id: str
    project: str
    commit: str
    branch: str | None
    pr: int | None
    base_commit: str | None
    started_at: datetime
    finished_at: datetime | None
    uploaded_at: datetime
    fingerprint: str = Field(description="The environment's fingerprint.")

    @classmethod
    def of(cls, r: RunSummary) -> RunOut:
        return cls(
            id=r.id,
            project=r.project,
            commit=r.commit,
            branch=r.branch,
            pr=r.pr,
            base_commit=r.base_commit,
            started_at=r.started_at,
            finished_at=r.finished_at,
            uploaded_at=r.uploaded_at,
            fingerprint=r.fingerprint,
        )


class RunsOut(_Out):
    runs: list[RunOut] = Field(description="Newest first.")


class SeriesPointOut(_Out):
    run: str
    commit: str
    time: datetime
    median: float
    ci: tuple[float, float] | None = Field(
        description="95% CI of the median; null below 6 samples."
    )
    n: int


ChangeStatus = Literal["open", "acknowledged", "dismissed"]


class ChangePointOut(_Out):
    id: int | None
    key: str
    metric: str
    branch: str
    run: str = Field(description="The first run of the new level.")
    commit: str
    time: datetime
    before: float = Field(description="Level (median) before the change.")
    after: float = Field(description="Level after the change.")
    ratio: float = Field(description="after / before.")
    status: ChangeStatus

    @classmethod
    def of(cls, c: ChangePointView) -> ChangePointOut:
        return cls(
            id=c.id,
            key=c.key,
            metric=c.metric,
            branch=c.branch,
            run=c.run,
            commit=c.commit,
            time=c.time,
            before=c.before,
            after=c.after,
            ratio=c.ratio,
            status=c.status,
        )


class SeriesOut(_Out):
    key: str
    metric: str
    unit: str
    direction: str
    branch: str
    points: list[SeriesPointOut] = Field(description="Oldest first.")
    change_points: list[ChangePointOut]

    @classmethod
    def of(cls, s: Series) -> SeriesOut:
        # Plain data validated in one call: thousands of points, one pass in pydantic-core.
        return cls.model_validate(
            {
                "key": s.key,
                "metric": s.metric,
                "unit": s.unit,
                "direction": s.direction,
                "branch": s.branch,
                "points": [
                    {
                        "run": p.run,
                        "commit": p.commit,
                        "time": p.time,
                        "median": p.median,
                        "ci": p.ci,
                        "n": p.n,
                    }
                    for p in s.points
                ],
                "change_points": [ChangePointOut.of(c) for c in s.change_points],
            }
        )


class ChangesOut(_Out):
    change_points: list[ChangePointOut]


class ChangeUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    status: ChangeStatus


class ComparisonOut(BaseModel):
    """The `perfgate/comparison@1` document, exactly as `perfgate compare --format json` writes it.

    Non-finite numbers (a ratio against a zero base) are sent as null: JSON has no infinity.
    """

    model_config = ConfigDict(extra="allow")

    schema_: Literal["perfgate/comparison@1"] = Field(alias="schema")
    base: dict[str, Any]
    head: dict[str, Any]
    settings: dict[str, Any]
    warnings: list[str]
    summary: dict[str, int]
    results: list[dict[str, Any]]
