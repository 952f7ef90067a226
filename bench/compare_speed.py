"""How long `compare_documents` takes on 500-benchmark documents (40 samples each): one a side,
and three sequential rounds a side (which adds the drift allowance: `noise.excess_variance` and
`noise.excess_variances_without_each`, also timed alone, on benchmarks of unequal noise); and
how long reading what 30 runs of history say about the noise (`noise.history_noise`) takes for
them."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

import numpy as np

from perfgate.results import parse_document
from perfgate.stats import noise
from perfgate.stats.compare_documents import compare_documents
from synthetic import synthetic_document

BENCHMARKS = 500
HISTORY_RUNS = 30


def _seconds(work: Callable[[], object], repeats: int = 3) -> list[float]:
    seconds = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - start)
    return seconds


def _history(seed: int = 0) -> list[noise.PastRun]:
    """Runs whose benchmarks move 2% each and follow a 2% machine at 0.3x to 2x (seeded)."""
    rng = np.random.default_rng(seed)
    machine = rng.normal(0.0, 0.02, HISTORY_RUNS)
    follows = rng.uniform(0.3, 2.0, BENCHMARKS)
    logs = rng.normal(0.0, 0.02, (HISTORY_RUNS, BENCHMARKS)) + np.outer(machine, follows)
    return [
        noise.PastRun(
            commit=f"{i + 1:040x}",
            medians={(f"b{j}", "time"): math.exp(logs[i, j]) for j in range(BENCHMARKS)},
        )
        for i in range(HISTORY_RUNS)
    ]


def main() -> None:
    base = parse_document(synthetic_document(benchmarks=BENCHMARKS, samples=40, seed=1))
    head = parse_document(synthetic_document(benchmarks=BENCHMARKS, samples=40, seed=2))
    comparison = compare_documents([base], [head])
    seconds = _seconds(lambda: compare_documents([base], [head]))
    print(
        f"compare 2 x {BENCHMARKS} benchmarks x 40 samples ({len(comparison.results)} results): "
        f"median {statistics.median(seconds):.2f} s, best {min(seconds):.2f} s (target < 5 s)"
    )
    # One hour apart each, base first: the sides ran one after the other.
    rounds = [
        parse_document(synthetic_document(benchmarks=BENCHMARKS, samples=40, seed=s))
        for s in range(3, 9)
    ]
    base_rounds, head_rounds = rounds[:3], rounds[3:]
    seconds = _seconds(lambda: compare_documents(base_rounds, head_rounds))
    print(
        f"compare 3 sequential rounds a side x {BENCHMARKS} benchmarks: "
        f"median {statistics.median(seconds):.2f} s, best {min(seconds):.2f} s"
    )
    rng = np.random.default_rng(0)
    variances = rng.uniform(0.01, 0.05, BENCHMARKS) ** 2
    values = rng.normal(0.0, np.sqrt(variances + 0.02**2))

    def drift() -> object:
        excess = noise.excess_variance(values, variances)
        return noise.excess_variances_without_each(values, variances, excess)

    seconds = _seconds(drift, repeats=10)
    print(
        f"the drift allowance of {BENCHMARKS} benchmarks, each left out in turn: "
        f"median {1000 * statistics.median(seconds):.0f} ms"
    )
    history = _history()
    seconds = _seconds(lambda: noise.history_noise(history))
    print(
        f"history_noise, {HISTORY_RUNS} runs x {BENCHMARKS} benchmarks: "
        f"median {statistics.median(seconds):.2f} s, best {min(seconds):.2f} s"
    )


if __name__ == "__main__":
    main()
