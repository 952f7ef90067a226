"""How long `compare_documents` takes on two 500-benchmark documents (40 samples each)."""

from __future__ import annotations

import statistics
import time

from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from synthetic import synthetic_document


def main() -> None:
    base = parse_document(synthetic_document(benchmarks=500, samples=40, seed=1))
    head = parse_document(synthetic_document(benchmarks=500, samples=40, seed=2))
    seconds = []
    for _ in range(3):
        start = time.perf_counter()
        comparison = compare_documents([base], [head])
        seconds.append(time.perf_counter() - start)
    print(
        f"compare 2 x 500 benchmarks x 40 samples ({len(comparison.results)} results): "
        f"median {statistics.median(seconds):.2f} s, best {min(seconds):.2f} s (target < 5 s)"
    )


if __name__ == "__main__":
    main()
