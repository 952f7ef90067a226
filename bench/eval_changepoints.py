"""Score `detect_change_points` on the TCPD series with the TCPDBench metrics (F1, covering).

Runs the detector with its one default setting on every series (z-scored, as TCPDBench does),
prints a per-series table and the means next to the published default-setting scores, then a
held-out check: the penalty tuned on one half of the series, scored on the other half. Usage:

    python bench/eval_changepoints.py [--data ../shared/data/tcpd] [--sensitivity]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.stats.changepoints import detect_change_points
from tcpd_metrics import covering, f_measure  # bench/ is on sys.path

REPO = Path(__file__).resolve().parents[1]
PUBLISHED = {"binseg": (0.690, 0.655), "pelt": (0.684, 0.656), "zero": (0.647, 0.557)}
PENALTY_GRID = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0)
VARIATIONS: dict[str, tuple[float, ...]] = {
    "penalty": (2.0, 2.5, 3.5, 4.0),
    "slope_penalty": (0.5, 1.5, 2.0),
    "min_size": (3, 8),
    "max_rho": (0.8, 0.95),
    # Every segment kept, and a fixed burst length instead of the noise-derived default.
    "max_burst": (0, 10),
}

Detector = Callable[[np.ndarray], list[int]]


@dataclass(frozen=True)
class Series:
    name: str
    values: np.ndarray
    annotations: dict[str, list[int]]


@dataclass(frozen=True)
class Score:
    name: str
    n: int
    f1: float
    cover: float
    change_points: list[int]


def load(data: Path) -> list[Series]:
    annotations = json.loads((data / "annotations.json").read_text())
    out = []
    for path in sorted((data / "series").glob("*.json")):
        doc = json.loads(path.read_text())
        raw = np.asarray(doc["series"][0]["raw"], dtype=np.float64)
        # TCPDBench standardises every series (sample standard deviation) before any method runs.
        z = (raw - raw.mean()) / raw.std(ddof=1)
        out.append(Series(path.stem, z, annotations[path.stem]))
    if not out:
        raise SystemExit(f"no series found under {data / 'series'}")
    return out


def score(series: list[Series], detect: Detector) -> list[Score]:
    out = []
    for s in series:
        cps = detect(s.values)
        out.append(
            Score(
                s.name,
                s.values.size,
                f_measure(s.annotations, cps),
                covering(s.annotations, cps, s.values.size),
                cps,
            )
        )
    return out


def means(scores: list[Score]) -> tuple[float, float]:
    return statistics.fmean(s.f1 for s in scores), statistics.fmean(s.cover for s in scores)


def with_penalty(penalty: float) -> Detector:
    return lambda values: detect_change_points(values, penalty=penalty)


def varied(name: str, value: float) -> Detector:
    kwargs: dict[str, Any] = {name: int(value) if name in ("min_size", "max_burst") else value}
    return lambda values: detect_change_points(values, **kwargs)


def sensitivity(series: list[Series]) -> None:
    """Scores with one argument moved away from its default at a time."""
    print("\nSensitivity (one argument changed, the others at their defaults)")
    for name, values in VARIATIONS.items():
        for value in values:
            f1, cover = means(score(series, varied(name, value)))
            print(f"{name + ' = ' + str(value):<28} {f1:6.3f} {cover:6.3f}")


def held_out(series: list[Series]) -> None:
    """Tune the penalty on alternate series (sorted by name) and score it on the others."""
    halves = {"A": series[0::2], "B": series[1::2]}
    print("\nHeld-out check (penalty tuned on one half by mean of F1 and cover, other half scored)")
    header = ("tune on", "penalty", "tuned F1", "cover", "default F1", "cover")
    print(" ".join(f"{h:>{w}}" for h, w in zip(header, (8, 8, 9, 6, 11, 6), strict=True)))
    for tune, test in (("A", "B"), ("B", "A")):
        results = {p: means(score(halves[tune], with_penalty(p))) for p in PENALTY_GRID}
        best = max(PENALTY_GRID, key=lambda p: sum(results[p]))
        tuned = means(score(halves[test], with_penalty(best)))
        default = means(score(halves[test], detect_change_points))
        print(
            f"{tune + '->' + test:>8} {best:8.1f} {tuned[0]:9.3f} {tuned[1]:6.3f}"
            f" {default[0]:11.3f} {default[1]:6.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=REPO.parent / "shared" / "data" / "tcpd",
        help="the TCPD folder (annotations.json and series/)",
    )
    parser.add_argument("--sensitivity", action="store_true", help="also vary each argument")
    args = parser.parse_args()
    series = load(args.data)

    start = time.perf_counter()
    scores = score(series, detect_change_points)
    elapsed = time.perf_counter() - start

    print(f"{'series':<20} {'n':>5} {'F1':>6} {'cover':>6}  change points")
    for s in scores:
        print(f"{s.name:<20} {s.n:5d} {s.f1:6.3f} {s.cover:6.3f}  {s.change_points}")
    f1, cover = means(scores)
    print(f"\n{'method':<28} {'F1':>6} {'cover':>6}")
    print(f"{'perfgate (default setting)':<28} {f1:6.3f} {cover:6.3f}")
    for method, (pf1, pcover) in PUBLISHED.items():
        print(f"{method + ' (published default)':<28} {pf1:6.3f} {pcover:6.3f}")
    total = sum(s.n for s in scores)
    print(f"\nruntime: {elapsed:.2f} s for {len(scores)} series ({total} points)")
    held_out(series)
    if args.sensitivity:
        sensitivity(series)


if __name__ == "__main__":
    main()
