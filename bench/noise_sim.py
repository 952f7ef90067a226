"""Simulated benchmark suites: named shapes of process-to-process noise, seeded and deterministic.

A suite is M benchmarks (default 13) with fixed per-benchmark traits (speed level, which of them
have process modes, their own spread). A simulation is a time-ordered sequence of processes
("rounds"); every round gives each benchmark a median on a log scale that follows the shape, and
20-40 lognormal samples with 0.5% within-run spread around exactly that median, which is what a
clean-looking round of an interleaved harness gives. Drifting shapes (AR(1)) make "one side after
the other" differ from "alternating". Pure numpy; `bench/eval_comparator.py eval` turns rounds into
results documents. Used as a library; `python bench/noise_sim.py [SHAPE ...]` prints each shape's
per-benchmark run-to-run spread (a quick look at what a shape does).

Shapes (per-process log noise of each benchmark; % means log-scale sd):

- `gauss-0.5` ... `gauss-10`: Gaussian, that % sd.
- `t3-3`: Student-t with 3 df scaled to 3% sd.
- `modes-p{P}-{F}x`: 2% Gaussian; ~30% of the benchmarks (fixed per suite) land in a level F times
  slower with probability P in each process.
- `ar1-drift`: AR(1) drift across consecutive processes (phi 0.8, stationary sd 3%) + 1% fresh.
- `bursts`: 2% Gaussian; with probability 0.05 a process is hit by a burst that slows 1-4 random
  benchmarks by 10-50% each.
- `common-{X}`: 3% total sd of which X% of the variance is a machine factor shared by all
  benchmarks of a process, drifting AR(1) in time (phi 0.8); the rest fresh per benchmark.
- `gpu-0.3`: 0.3% Gaussian; with probability 0.02 a clock dip slows every benchmark of the
  process by 5-15%.
- `mixed`: a realistic suite: per-benchmark Gaussian sds drawn log-uniformly in 0.7-6%, plus a
  machine factor of 2% sd drifting AR(1) (phi 0.8) shared by all benchmarks of a process.
"""

from __future__ import annotations

import math
import sys
import zlib
from dataclasses import dataclass

import numpy as np

SHAPES: tuple[str, ...] = (
    "gauss-0.5",
    "gauss-1",
    "gauss-3",
    "gauss-5",
    "gauss-10",
    "t3-3",
    "modes-p0.1-1.3x",
    "modes-p0.3-1.3x",
    "modes-p0.1-2x",
    "modes-p0.3-2x",
    "ar1-drift",
    "bursts",
    "common-0",
    "common-30",
    "common-60",
    "gpu-0.3",
    "mixed",
)
WITHIN_RUN_SD = 0.005
SAMPLES_PER_ROUND = (20, 40)
MODAL_FRACTION = 0.3
DRIFT_PHI = 0.8


@dataclass(frozen=True)
class Suite:
    """M benchmarks with their fixed traits under one shape."""

    shape: str
    keys: tuple[str, ...]
    #: Log of each benchmark's typical time in seconds.
    log_levels: np.ndarray
    #: Which benchmarks have a slow process mode (modes-* shapes; all False otherwise).
    modal: np.ndarray
    #: Each benchmark's own Gaussian sd (log); used by `mixed`.
    sds: np.ndarray

    @property
    def size(self) -> int:
        return len(self.keys)

    def steady(self) -> np.ndarray:
        """Benchmarks without modes, bursts of their own or an sd above 3% (for the +50% check)."""
        if self.shape.startswith("gauss-"):
            return np.ones(self.size, dtype=bool)
        if self.shape == "mixed":
            return np.asarray(self.sds <= 0.03)
        return np.zeros(self.size, dtype=bool)


def stable_seed(*parts: object) -> int:
    """A seed from names and numbers that is the same in every process (unlike `hash`)."""
    return zlib.crc32("/".join(str(p) for p in parts).encode())


def make_suite(shape: str, m: int = 13, seed: int = 0) -> Suite:
    """The suite of `m` benchmarks for `shape` (its traits fixed by `seed`)."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; known: {', '.join(SHAPES)}")
    rng = np.random.default_rng([seed, stable_seed("suite", shape, m)])
    log_levels = rng.uniform(math.log(20e-6), math.log(20e-3), size=m)
    modal = np.zeros(m, dtype=bool)
    if shape.startswith("modes-"):
        count = max(1, round(MODAL_FRACTION * m))
        modal[rng.choice(m, size=count, replace=False)] = True
    sds = np.exp(rng.uniform(math.log(0.007), math.log(0.06), size=m))
    keys = tuple(f"sim_{j:02d}" for j in range(m))
    return Suite(shape=shape, keys=keys, log_levels=log_levels, modal=modal, sds=sds)


def _ar1(rng: np.random.Generator, size: tuple[int, int, int], sd: float) -> np.ndarray:
    """AR(1) along axis 1 (time), stationary from the first step, with stationary sd `sd`."""
    out = np.empty(size)
    innovation = sd * math.sqrt(1.0 - DRIFT_PHI**2)
    out[:, 0] = rng.normal(0.0, sd, size=(size[0], size[2]))
    for t in range(1, size[1]):
        out[:, t] = DRIFT_PHI * out[:, t - 1] + rng.normal(0.0, innovation, (size[0], size[2]))
    return out


def log_noise(suite: Suite, rng: np.random.Generator, n_seq: int, length: int) -> np.ndarray:
    """Per-process log deviations from each benchmark's level: shape (n_seq, length, M).

    Each of the `n_seq` sequences is `length` consecutive processes, independent of the others.
    """
    shape, m = suite.shape, suite.size
    size = (n_seq, length, m)
    if shape.startswith("gauss-"):
        return float(shape.split("-")[1]) / 100 * rng.standard_normal(size)
    if shape == "t3-3":
        return 0.03 / math.sqrt(3.0) * rng.standard_t(3, size=size)
    if shape.startswith("modes-"):
        _, p, factor = shape.split("-")
        slow = (rng.random(size) < float(p[1:])) & suite.modal
        noise: np.ndarray = 0.02 * rng.standard_normal(size) + slow * math.log(float(factor[:-1]))
        return noise
    if shape == "ar1-drift":
        return _ar1(rng, size, 0.03) + 0.01 * rng.standard_normal(size)
    if shape == "bursts":
        noise = 0.02 * rng.standard_normal(size)
        for seq, t in np.argwhere(rng.random((n_seq, length)) < 0.05):
            hit = rng.choice(m, size=min(m, int(rng.integers(1, 5))), replace=False)
            noise[seq, t, hit] += np.log1p(rng.uniform(0.10, 0.50, size=hit.size))
        return noise
    if shape.startswith("common-"):
        share = float(shape.split("-")[1]) / 100
        machine = _ar1(rng, (n_seq, length, 1), 0.03 * math.sqrt(share))
        return machine + 0.03 * math.sqrt(1.0 - share) * rng.standard_normal(size)
    if shape == "gpu-0.3":
        dips = (rng.random((n_seq, length, 1)) < 0.02) * np.log1p(
            rng.uniform(0.05, 0.15, size=(n_seq, length, 1))
        )
        return 0.003 * rng.standard_normal(size) + dips
    if shape == "mixed":
        return _ar1(rng, (n_seq, length, 1), 0.02) + suite.sds * rng.standard_normal(size)
    raise ValueError(f"unknown shape {shape!r}")


def log_medians(suite: Suite, rng: np.random.Generator, n_seq: int, length: int) -> np.ndarray:
    """Each process's log median of each benchmark: levels plus `log_noise`, (n_seq, length, M)."""
    logs: np.ndarray = suite.log_levels + log_noise(suite, rng, n_seq, length)
    return logs


def round_samples(rng: np.random.Generator, medians_log: np.ndarray) -> list[np.ndarray]:
    """20-40 lognormal samples per benchmark with 0.5% spread whose median is the round's median."""
    out = []
    low, high = SAMPLES_PER_ROUND
    for level in medians_log:
        z = rng.standard_normal(int(rng.integers(low, high + 1)))
        out.append(np.exp(level + WITHIN_RUN_SD * (z - np.median(z))))
    return out


def main(argv: list[str]) -> None:
    rng = np.random.default_rng(0)
    for shape in argv or SHAPES:
        suite = make_suite(shape)
        noise = log_noise(suite, rng, 200, 30).reshape(-1, suite.size)
        spread = np.std(noise, axis=0)
        print(
            f"{shape:16s} per-benchmark sd {np.min(spread):6.2%} - {np.max(spread):6.2%} "
            f"(median {np.median(spread):6.2%}), worst {np.expm1(np.max(np.abs(noise))):+.0%}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
