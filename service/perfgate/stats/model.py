"""The comparison as data: verdict words, per-metric results, and the whole comparison."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

Verdict = Literal[
    "regression", "improvement", "unchanged", "inconclusive", "missing", "new", "error"
]
VERDICTS: tuple[Verdict, ...] = (
    "regression",
    "improvement",
    "unchanged",
    "inconclusive",
    "missing",
    "new",
    "error",
)
COMPARISON_SCHEMA = "perfgate/comparison@1"

Flag = Literal["possible_regression"]
#: A change whose point estimate is far beyond the threshold while its CI still reaches below it
#: (docs/comparator.md, "A big change is never green"): the verdict stays `inconclusive`, and the
#: headline, status and check run treat it as needing a look, never as a pass.
POSSIBLE_REGRESSION: Flag = "possible_regression"


@dataclass(frozen=True)
class SideSummary:
    n: int
    median: float
    iqr: float
    rounds: int = 1


@dataclass(frozen=True)
class OpDelta:
    """How one operator's per-call self time and count moved between base and head."""

    op: str
    base_us: float
    head_us: float
    delta_us: float
    base_count: float
    head_count: float


@dataclass(frozen=True)
class OpBytesDelta:
    """How many bytes one operator allocated per call on each side (exact, from the
    `allocated_bytes` notes), with its calls per call from the profiles (None without both)."""

    op: str
    base_bytes: int
    head_bytes: int
    delta_bytes: int
    base_count: float | None = None
    head_count: float | None = None


@dataclass(frozen=True)
class MetricResult:
    key: str
    benchmark: str
    params: dict[str, Any]
    metric: str
    unit: str
    direction: str
    exact: bool
    base: SideSummary | None
    head: SideSummary | None
    ratio: float | None
    ci: tuple[float, float] | None
    p_value: float | None
    q_value: float | None
    threshold: float
    verdict: Verdict
    reason: str
    noise: str | None = None
    attribution: list[OpDelta] = field(default_factory=list)
    # Medians of earlier base-branch runs, oldest first (the comment's trend sparkline).
    history: list[float] = field(default_factory=list)
    flag: Flag | None = None
    # Known speed levels of a benchmark whose processes land in one of several (process modes),
    # as ratios to its fastest level, e.g. (1.0, 1.31); empty when it has one level.
    levels: tuple[float, ...] = ()
    # History runs pooled with the base side into the baseline the ratio is against (0: the base
    # side alone).
    baseline_runs: int = 0
    # A memory metric's allocating ops whose bytes moved, largest move first (the ops behind an
    # `allocated_bytes` or `peak_allocated_bytes` change); empty without per-op bytes.
    allocation_attribution: list[OpBytesDelta] = field(default_factory=list)
    # A metric its documents declare informational (a `note` starting "informational"; peak RSS,
    # a compile's wall seconds): shown in full results, never a verdict a reader must act on.
    informational: bool = False

    @property
    def delta(self) -> float | None:
        """Relative change of the raw value, head vs base (+0.12 = 12% larger)."""
        if self.base is None or self.head is None or self.base.median == 0:
            return None
        return self.head.median / self.base.median - 1.0


@dataclass(frozen=True)
class SideInfo:
    commit: str | None
    runs: list[str]
    branch: str | None = None
    label: str | None = None  # e.g. "merge-base" or "nearest earlier run of main"


@dataclass(frozen=True)
class CommonFinding:
    """What the suite shared: the head side's typical speed relative to the base side's.

    Never subtracted from the benchmarks: it is a finding of the comparison, whose `affected`
    benchmarks (the keys that moved with it) are listed when it is a regression or improvement.
    """

    ratio: float
    ci: tuple[float, float]
    benchmarks: int
    verdict: Verdict
    reason: str
    noise: str
    affected: tuple[str, ...] = ()


@dataclass(frozen=True)
class Comparison:
    base: SideInfo
    head: SideInfo
    alpha: float
    threshold: float
    warnings: list[str]
    results: list[MetricResult]
    common_factor: CommonFinding | None = None

    def summary(self) -> dict[str, int]:
        counts = Counter(r.verdict for r in self.results)
        return {verdict: counts.get(verdict, 0) for verdict in VERDICTS}

    def regressions(self) -> list[MetricResult]:
        return [r for r in self.results if r.verdict == "regression"]

    def possible_regressions(self) -> list[MetricResult]:
        """Inconclusive results flagged as possible regressions (never reported as a pass)."""
        return [r for r in self.results if r.flag == POSSIBLE_REGRESSION]

    def has_regression(self) -> bool:
        """A benchmark regressed, or everything got slower together."""
        common = self.common_factor is not None and self.common_factor.verdict == "regression"
        return bool(self.regressions()) or common
