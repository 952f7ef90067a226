"""How well the runner's wander (`noise.wander`) predicts how far a later run sits off history.

A baseline that pools a segment of history carries the wander: how much further a run, `lead`
runs after history's last, sits from the mean of history's runs than their spread predicts.
This simulates histories of 24 runs of 13 benchmarks whose log medians wander AR(1) (coefficient
phi, stationary sd 3%) with 1% of fresh noise a run, and the runs that follow them; per phi and
lead it prints the wander `noise.wander` reads off each history (mean over histories) and the
true excess, the mean over histories and benchmarks of (x_h - mean)² - s² (1 + 1/n). Units are
1e-4 of log variance (a run's variance is 10 at phi 0):

    python bench/wander_calibration.py                # 1,000 histories each, about a minute
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from perfgate.stats import noise

BENCHMARKS, RUNS, DRIFT_SD, FRESH_SD = 13, 24, 0.03, 0.01
LEADS = (1, 2, 5, 9)


def histories(rng: np.random.Generator, phi: float, count: int) -> np.ndarray:
    """`count` sequences of RUNS + max(LEADS) runs x BENCHMARKS log medians."""
    length = RUNS + max(LEADS)
    level = rng.normal(0.0, DRIFT_SD, (count, BENCHMARKS))
    out = np.empty((count, length, BENCHMARKS))
    for t in range(length):
        shock = rng.normal(0.0, DRIFT_SD, (count, BENCHMARKS))
        level = phi * level + math.sqrt(1.0 - phi**2) * shock
        out[:, t] = level + rng.normal(0.0, FRESH_SD, (count, BENCHMARKS))
    return out


def calibration(phi: float, count: int, seed: int) -> dict[int, tuple[float, float]]:
    """Per lead: (the mean wander read off each history, the mean true excess)."""
    sequences = histories(np.random.default_rng([seed, round(phi * 100)]), phi, count)
    read: dict[int, list[float]] = {lead: [] for lead in LEADS}
    true: dict[int, list[float]] = {lead: [] for lead in LEADS}
    for sequence in sequences:
        past = sequence[:RUNS]
        groups = {(f"b{j}", "time"): [past[:, j]] for j in range(BENCHMARKS)}
        spread = past.var(axis=0, ddof=1) * (1.0 + 1.0 / RUNS)
        for lead in LEADS:
            found = noise.wander(groups, lead=lead)
            read[lead].append(found.var if found is not None else 0.0)
            gap = sequence[RUNS - 1 + lead] - past.mean(axis=0)
            true[lead].append(float(np.mean(gap**2 - spread)))
    return {lead: (float(np.mean(read[lead])), float(np.mean(true[lead]))) for lead in LEADS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print("| phi | " + " | ".join(f"lead {lead}: read / true" for lead in LEADS) + " |")
    print("|---|" + "---|" * len(LEADS))
    for phi in (0.0, 0.5, 0.8, 0.95):
        found = calibration(phi, args.histories, args.seed)
        cells = [f"{found[lead][0] * 1e4:.2f} / {found[lead][1] * 1e4:.2f}" for lead in LEADS]
        print(f"| {phi} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
