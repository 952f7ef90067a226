"""Score change-point detectors on performance histories: recorded runs with injected steps.

The yardstick (docs/changepoints.md#measured-on-performance-histories-the-yardstick):

- **Histories.** Every job of every recorded dataset under bench/data/comparator/ (separate
  processes of identical code), ordered by the run's `started_at`. Per benchmark, a job gives one
  point: the median of its `time` samples (all rounds pooled), as the store stores it. The
  datasets were recorded with different settings and machines, and those steps are real but not
  in the answer key, so each dataset's points are divided by that dataset's median: what remains
  is each session's own noise and drift, in time order, with the joins between sessions.
- **Series.** Windows of `LENGTH` = 160 consecutive points of each benchmark's history, starting
  at `OFFSETS`; each window is one A/A series (no change in the answer key). The default windows
  start at point 40 and 64, after the `threads2` dataset (points 0-39): there the shared machine
  switches between busy and quiet stretches of 5-9 jobs that move most of the 13 benchmarks
  together (`--jobs 0-45` prints them), real level shifts that the answer key cannot hold. The
  windows first defined, `--offsets 0,64`, are still reported (docs/changepoints.md).
- **Steps.** Each A/A series is copied `PLACEMENTS` times per step size; each copy gets one step:
  the tail from an index drawn uniformly from `EDGE`..n-`EDGE` is multiplied by 1 + size or
  1 - size (sign drawn), from one fixed seed.
- **Scoring.** Every method sees the log of the points, z-scored. F1 is TCPDBench's (margin 5)
  against the one injected index (bench/tcpd_metrics.py); on A/A series every change point is a
  false one.

Methods: `perfgate`, what the store stores: the detector with its default setting (bursts
filtered, their length from the noise's persistence), then the check against the suite's shared
movement in the window (stats/shared_movement.py); `perfgate-alone`, the detector alone;
`perfgate-10`, alone with a fixed `max_burst=10`; `perfgate-raw`, alone with `max_burst=0`
(every segment kept); ruptures' `pelt` and `binseg` with the l2 cost and penalty 3·log n (the
same per-change cost as perfgate's default), min_size 5 (perfgate's shortest segment) and jump 1
(every index a candidate); `zero`, no change point ever. Usage:

    python bench/changepoint_yardstick.py [--seed 20] [--placements 4] [--runs]
        [--datasets A,B] [--length 160] [--offsets 40,64] [--methods perfgate,pelt]
        [--jobs 0-45]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import ruptures

from perfgate.stats.changepoints import detect_change_points
from perfgate.stats.shared_movement import confirmed_changes, level_changes, shared_movement
from recordings import Recording, recordings  # bench/ is on sys.path
from tcpd_metrics import f_measure

LENGTH = 160
# After threads2's busy and quiet stretches (points 0-39), which are real machine level shifts.
OFFSETS = (40, 64)
# A benchmark "moved" in a job when its point is this far from its dataset's median.
MOVED = 0.05
SIZES = (0.05, 0.08, 0.15)
PLACEMENTS = 4
# Steps are placed at least this far from either end: a level needs some runs on each side.
EDGE = 20
SEED = 20
MARGIN = 5
# ruptures' settings that make it comparable with perfgate's detector (segments of 5 or more).
RUPTURES_MIN_SIZE = 5
RUPTURES_PENALTY = 3.0
# A fixed burst length for comparison with the default's noise-derived one: two shortest levels.
MAX_BURST = 10

# A method sees the prepared points of a case (and the case, for the suite's shared movement).
Detector = Callable[[np.ndarray, "Case"], list[int]]


@dataclass(frozen=True)
class History:
    """One benchmark's per-job medians over all datasets, each dataset divided by its median."""

    benchmark: str
    values: np.ndarray
    # The dataset each point came from (same length as `values`).
    datasets: tuple[str, ...]


@dataclass(frozen=True)
class Case:
    """One series to score: its points and the index of its injected step (None for A/A).

    `movement` is the suite's shared movement at each point (the other benchmarks' jobs, log
    scale; NaN where unknown) and `movement_changes` where it changes level, as the store
    computes them for the window (stats/shared_movement.py); the injected step is in this
    series only, so the other benchmarks do not see it.
    """

    name: str
    values: np.ndarray
    step_at: int | None
    size: float
    movement: np.ndarray | None = field(default=None, compare=False)
    movement_changes: tuple[int, ...] = ()


def job_medians(recording: Recording) -> list[tuple[datetime, dict[str, float]]]:
    """(started_at, benchmark key -> median of its time samples) for each job of a dataset."""
    out = []
    for doc in recording.jobs():
        medians = {}
        for bench in doc.benchmarks:
            metric = bench.metrics.get("time")
            if metric is not None and metric.samples:
                medians[bench.key] = float(np.median(metric.samples))
        out.append((doc.run.started_at, medians))
    return out


def histories(sets: Iterable[Recording]) -> list[History]:
    """Each benchmark's history over the datasets' jobs in time order, normalised per dataset.

    Only benchmarks every job measured are kept, so that every history has the same length.
    """
    jobs: list[tuple[datetime, str, dict[str, float]]] = []
    for rec in sets:
        jobs.extend((started, rec.name, medians) for started, medians in job_medians(rec))
    jobs.sort(key=lambda job: job[0])
    if not jobs:
        raise SystemExit("no recorded jobs found")
    keys = sorted(set.intersection(*(set(m) for _, _, m in jobs)))
    names = tuple(name for _, name, _ in jobs)
    out = []
    for key in keys:
        raw = np.array([m[key] for _, _, m in jobs], dtype=np.float64)
        values = normalise(raw, names)
        out.append(History(key, values, names))
    return out


def normalise(values: np.ndarray, datasets: Sequence[str]) -> np.ndarray:
    """Divide each dataset's points by their median (the datasets' own levels are not steps)."""
    labels = np.asarray(datasets)
    out = values.astype(np.float64).copy()
    for name in dict.fromkeys(datasets):
        where = labels == name
        out[where] /= float(np.median(values[where]))
    return out


@dataclass(frozen=True)
class JobLevel:
    """How one job's points sit against their datasets' medians, over all benchmarks."""

    index: int
    dataset: str
    median: float
    above: int
    below: int


def job_levels(items: Sequence[History], first: int, last: int) -> list[JobLevel]:
    """For each job in first..last: the median point over benchmarks, and how many benchmarks
    sit more than `MOVED` above or below their dataset's median. A machine's own level shift
    moves every benchmark of a job the same way; noise moves them independently."""
    if not items or not 0 <= first <= last < items[0].values.size:
        raise SystemExit(f"error: jobs {first}-{last} are not within the histories' points")
    points = np.array([h.values for h in items])
    return [
        JobLevel(
            j,
            items[0].datasets[j],
            float(np.median(points[:, j])),
            int(np.sum(points[:, j] > 1.0 + MOVED)),
            int(np.sum(points[:, j] < 1.0 - MOVED)),
        )
        for j in range(first, last + 1)
    ]


def windows(
    items: Sequence[History], length: int = LENGTH, offsets: Sequence[int] = OFFSETS
) -> list[Case]:
    """The A/A series: `length` consecutive points of each history from each offset, each with
    the suite's shared movement in that window."""
    cases = []
    for h in items:
        for start in offsets:
            if start + length > h.values.size:
                raise SystemExit(
                    f"{h.benchmark}: {h.values.size} points, too few for a window of {length}"
                    f" at {start}"
                )
    movements = {start: window_movement(items, start, length) for start in offsets}
    for h in items:
        for start in offsets:
            window = h.values[start : start + length]
            movement, changes = movements[start]
            cases.append(
                Case(f"{h.benchmark}@{start}", window, None, 0.0, movement[h.benchmark], changes)
            )
    return cases


def window_movement(
    items: Sequence[History], start: int, length: int
) -> tuple[dict[str, np.ndarray], tuple[int, ...]]:
    """The shared movement to take out of each benchmark in one window, and where it changes.

    Computed as the store computes it (stats/shared_movement.py), then divided out per dataset
    like the histories themselves: what the median benchmark keeps of its datasets' levels is
    the datasets' steps again, which the answer key does not hold.
    """
    stop = start + length
    labels = np.asarray(items[0].datasets[start:stop])
    found = shared_movement({h.benchmark: np.log(h.values[start:stop]) for h in items})

    def per_dataset(values: np.ndarray) -> np.ndarray:
        out = values.copy()
        for name in dict.fromkeys(labels.tolist()):
            where = (labels == name) & np.isfinite(values)
            if where.any():
                out[labels == name] -= float(np.median(values[where]))
        return out

    movement = {h.benchmark: per_dataset(found.for_series(h.benchmark)) for h in items}
    return movement, tuple(level_changes(per_dataset(found.factor)))


def inject(values: np.ndarray, at: int, factor: float) -> np.ndarray:
    """A copy of `values` with every point from index `at` on multiplied by `factor`."""
    if not 0 < at < values.size:
        raise ValueError(f"a step must start inside the series (1..{values.size - 1}), got {at}")
    out = values.astype(np.float64).copy()
    out[at:] *= factor
    return out


def stepped(
    series: Sequence[Case],
    sizes: Sequence[float] = SIZES,
    placements: int = PLACEMENTS,
    seed: int = SEED,
    edge: int = EDGE,
) -> list[Case]:
    """Each A/A series with one step of each size at `placements` drawn places and signs."""
    rng = np.random.default_rng(seed)
    out = []
    for case in series:
        n = case.values.size
        if n <= 2 * edge:
            raise ValueError(
                f"{case.name}: {n} points leave no room for a step {edge} from the ends"
            )
        for size in sizes:
            for _ in range(placements):
                at = int(rng.integers(edge, n - edge + 1))
                sign = 1.0 if rng.random() < 0.5 else -1.0
                values = inject(case.values, at, 1.0 + sign * size)
                name = f"{case.name}{sign * size:+.0%}@{at}"
                out.append(replace(case, name=name, values=values, step_at=at, size=size))
    return out


def prepared(values: np.ndarray) -> np.ndarray:
    """What every method sees: the log of the points (steps as ratios), z-scored."""
    logs = np.log(values)
    spread = float(np.std(logs, ddof=1))
    if spread == 0.0:
        return logs - float(np.mean(logs))
    return (logs - float(np.mean(logs))) / spread


def perfgate(z: np.ndarray, case: Case) -> list[int]:
    """The store's rule: the detector's change points that are not the suite's shared movement."""
    found = detect_change_points(z)
    if case.movement is None:
        return found
    return confirmed_changes(z, case.movement, found, case.movement_changes)


def perfgate_alone(z: np.ndarray, case: Case) -> list[int]:
    return detect_change_points(z)


def perfgate_fixed_bursts(z: np.ndarray, case: Case) -> list[int]:
    return detect_change_points(z, max_burst=MAX_BURST)


def perfgate_raw(z: np.ndarray, case: Case) -> list[int]:
    return detect_change_points(z, max_burst=0)


def _ruptures(algorithm: type) -> Detector:
    def detect(z: np.ndarray, case: Case) -> list[int]:
        fitted = algorithm(model="l2", min_size=RUPTURES_MIN_SIZE, jump=1).fit(z)
        ends = fitted.predict(pen=RUPTURES_PENALTY * math.log(z.size))
        return [int(e) for e in ends if e < z.size]  # ruptures ends every list with n

    return detect


def zero(z: np.ndarray, case: Case) -> list[int]:
    return []


METHODS: dict[str, Detector] = {
    "perfgate": perfgate,
    "perfgate-alone": perfgate_alone,
    "perfgate-10": perfgate_fixed_bursts,
    "perfgate-raw": perfgate_raw,
    "pelt": _ruptures(ruptures.Pelt),
    "binseg": _ruptures(ruptures.Binseg),
    "zero": zero,
}


@dataclass(frozen=True)
class Result:
    """One method's scores: mean F1 per step size and over all, false change points on A/A."""

    f1: dict[float, float]
    overall: float
    # False change points on each A/A series, in the order of the series.
    false_by_series: tuple[int, ...]
    seconds: float

    @property
    def false_points(self) -> int:
        return sum(self.false_by_series)

    @property
    def aa_series(self) -> int:
        return len(self.false_by_series)

    @property
    def false_per_series(self) -> float:
        return self.false_points / self.aa_series


def f1_of(case: Case, change_points: Sequence[int], margin: int = MARGIN) -> float:
    """TCPDBench F1 of one series against its one annotation (the injected index, if any)."""
    truth = [] if case.step_at is None else [case.step_at]
    return f_measure({"injected": truth}, list(change_points), margin=margin)


def evaluate(detect: Detector, aa: Sequence[Case], steps: Sequence[Case]) -> Result:
    start = time.perf_counter()
    false_by_series = tuple(len(detect(prepared(c.values), c)) for c in aa)
    by_size: dict[float, list[float]] = {}
    for case in steps:
        by_size.setdefault(case.size, []).append(f1_of(case, detect(prepared(case.values), case)))
    elapsed = time.perf_counter() - start
    f1 = {size: statistics.fmean(scores) for size, scores in sorted(by_size.items())}
    overall = statistics.fmean(s for scores in by_size.values() for s in scores)
    return Result(f1, overall, false_by_series, elapsed)


def table(results: dict[str, Result]) -> str:
    sizes = next(iter(results.values())).f1
    head = ["method", *(f"±{s:.0%}" for s in sizes), "all", "A/A false CPs / series"]
    lines = [" | ".join(head), " | ".join("---" for _ in head)]
    for name, r in results.items():
        cells = [name, *(f"{v:.3f}" for v in r.f1.values()), f"{r.overall:.3f}"]
        cells.append(f"{r.false_points} / {r.aa_series} = {r.false_per_series:.3f}")
        lines.append(" | ".join(cells))
    return "\n".join(f"| {line} |" for line in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=SEED, help="seed of the step places and signs")
    parser.add_argument("--placements", type=int, default=PLACEMENTS, help="steps per size")
    parser.add_argument(
        "--runs", action="store_true", help="also list the histories' datasets in time order"
    )
    parser.add_argument(
        "--datasets", help="comma-separated dataset names to build the histories from (all)"
    )
    parser.add_argument("--length", type=int, default=LENGTH, help="points per series")
    parser.add_argument(
        "--offsets",
        default=",".join(map(str, OFFSETS)),
        help="comma-separated starts of the windows in each history",
    )
    parser.add_argument(
        "--methods", default=",".join(METHODS), help="comma-separated methods to score"
    )
    parser.add_argument(
        "--jobs",
        help="FIRST-LAST: print how the benchmarks of these jobs sit against their datasets'"
        " medians, and stop",
    )
    args = parser.parse_args()
    sets = recordings()
    if args.datasets:
        wanted = args.datasets.split(",")
        known = {r.name: r for r in sets}
        missing = [name for name in wanted if name not in known]
        if missing:
            raise SystemExit(f"error: no recorded dataset {', '.join(missing)}")
        sets = [known[name] for name in wanted]
    items = histories(sets)
    if args.runs:
        labels = items[0].datasets
        for name in dict.fromkeys(labels):
            where = [i for i, label in enumerate(labels) if label == name]
            print(f"{name:22} points {where[0]:3d}..{where[-1]:3d}")
    if args.jobs:
        first, _, last = args.jobs.partition("-")
        print(
            f"job  dataset     median  >+{MOVED:.0%}  <-{MOVED:.0%}  (of {len(items)} benchmarks)"
        )
        for level in job_levels(items, int(first), int(last or first)):
            print(
                f"{level.index:3d}  {level.dataset:10} {level.median:6.3f} {level.above:5d}"
                f" {level.below:5d}"
            )
        return
    offsets = [int(o) for o in args.offsets.split(",")]
    aa = windows(items, args.length, offsets)
    steps = stepped(aa, placements=args.placements, seed=args.seed)
    print(
        f"{len(items)} benchmarks x {items[0].values.size} jobs from {len(sets)} datasets; "
        f"{len(aa)} A/A series of {args.length}, {len(steps)} stepped series (seed {args.seed})\n"
    )
    chosen = args.methods.split(",")
    unknown = [name for name in chosen if name not in METHODS]
    if unknown:
        raise SystemExit(
            f"error: unknown method {', '.join(unknown)} (known: {', '.join(METHODS)})"
        )
    results = {name: evaluate(METHODS[name], aa, steps) for name in chosen}
    print(table(results))
    print("\nA/A false change points by window start:")
    starts = [int(case.name.rsplit("@", 1)[1]) for case in aa]
    for name, r in results.items():
        counts = {
            start: (
                sum(f for f, s in zip(r.false_by_series, starts, strict=True) if s == start),
                starts.count(start),
            )
            for start in offsets
        }
        cells = ", ".join(f"@{start}: {f} / {k}" for start, (f, k) in counts.items())
        print(f"  {name:<16} {cells}  ({r.seconds:.1f} s)")


if __name__ == "__main__":
    main()
