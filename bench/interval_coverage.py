"""How often a false-alarm rate's 95% intervals cover the true rate, on recorded-like sets.

`eval_comparator.py` gives each row's false alarms two intervals: the exact binomial one, which
takes every result for independent, and `clustered_interval`, clustered by base and head job.
A recorded set is one sequence of rounds: its 40 pairs overlap, and a round that disturbed a
few benchmarks is an alarm in every pair whose head took it. This simulates such sets (80
rounds, 40 pairs placed as the evaluation places one round a side: the head 1-9 rounds after
the base, 13 benchmarks a pair), where each round is disturbed with probability q and a head
that took a disturbed round has k alarms, on top of independent alarms of probability p0 per
result; the true rate is ((1 - q) E[B] + q E[max(B, k)]) / 13, with B ~ Binomial(13, p0) a
pair's own alarms. Per scenario it prints how often each interval covers it, and how often no
pair's head took a disturbed round at all (then the set's own alarms cannot show the rate, and
no interval from them covers it):

    python bench/interval_coverage.py                 # four scenarios, 2,000 sets each, seconds
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

import eval_comparator as ec  # bench/ is on sys.path when this file is run as a script

ROUNDS, PAIRS, BENCHMARKS, MAX_GAP = 80, 40, 13, 8


@dataclass(frozen=True)
class Scenario:
    name: str
    disturbed: float  # q: a round's probability of being disturbed
    alarms: int  # k: alarms of a pair whose head took a disturbed round
    independent: float  # p0: every result's own false-alarm probability

    @property
    def true_rate(self) -> float:
        """Expected alarms a result: a disturbed head's pair has max(its own, k) alarms."""
        own = binom(BENCHMARKS, self.independent)
        counts = np.arange(BENCHMARKS + 1)
        disturbed = float(np.sum(np.maximum(counts, self.alarms) * own.pmf(counts)))
        return ((1 - self.disturbed) * own.mean() + self.disturbed * disturbed) / BENCHMARKS


SCENARIOS = (
    Scenario("independent alarms", 0.0, 0, 0.01),
    Scenario("one disturbed benchmark in 20% of rounds", 0.2, 1, 0.002),
    Scenario("two disturbed benchmarks in 10% of rounds", 0.1, 2, 0.002),
    Scenario("four disturbed benchmarks in 3% of rounds", 0.03, 4, 0.002),
)


@dataclass(frozen=True)
class Coverage:
    exact: float
    clustered: float
    no_disturbed_head: float


def coverage(scenario: Scenario, sets: int, seed: int = 0) -> Coverage:
    """Over `sets` simulated sets, how often each interval covers the true rate."""
    rng = np.random.default_rng(seed)
    exact = clustered = blind = 0
    truth = scenario.true_rate
    for _ in range(sets):
        disturbed = rng.random(ROUNDS) < scenario.disturbed
        bases = rng.integers(0, ROUNDS - MAX_GAP - 1, size=PAIRS)
        heads = bases + 1 + rng.integers(0, MAX_GAP + 1, size=PAIRS)
        own = rng.binomial(BENCHMARKS, scenario.independent, size=PAIRS)
        alarms = np.where(disturbed[heads], np.maximum(own, scenario.alarms), own)
        outcomes = [
            {"aa_alarms": int(a), "aa_results": BENCHMARKS, "base_job": int(b), "head_job": int(h)}
            for a, b, h in zip(alarms, bases, heads, strict=True)
        ]
        hits, results = int(alarms.sum()), PAIRS * BENCHMARKS
        low, high = ec.rate_interval(hits, results)
        exact += low <= truth <= high
        sums = ec.job_cluster_sums(outcomes)
        low, high = ec.clustered_interval(hits, results, [sums])
        clustered += low <= truth <= high
        blind += not bool(disturbed[heads].any())
    return Coverage(exact / sets, clustered / sets, blind / sets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print("| scenario | true rate | exact covers | clustered covers | no disturbed head |")
    print("|---|---|---|---|---|")
    for scenario in SCENARIOS:
        found = coverage(scenario, args.sets, args.seed)
        print(
            f"| {scenario.name} | {scenario.true_rate:.2%} | {found.exact:.0%} | "
            f"{found.clustered:.0%} | {found.no_disturbed_head:.0%} |"
        )


if __name__ == "__main__":
    main()
