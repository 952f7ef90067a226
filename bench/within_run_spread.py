"""Does a benchmark that spreads more inside a run also spread more between processes?

For every recorded set in bench/data/comparator/, each benchmark's spread inside a run (1.4826
MAD of the log samples of a round, the median over all rounds: what
`noise_model.within_run_spread` computes) against its spread between processes (the sd of
its round log medians after each round's machine factor), and their Spearman rank correlation
per set and pooled. docs/comparator.md cites it for the one-round widening
(`noise_model.within_run_widening`).

Run: PYTHONPATH=service .venv/bin/python bench/within_run_spread.py [--table]
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import stats

import recordings  # bench/ is on sys.path when this file is run as a script
from eval_comparator import RecordedSource, _samples
from perfgate.stats.noise_model import within_run_spread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true", help="print every benchmark's figures")
    args = parser.parse_args()
    pooled_within: list[float] = []
    pooled_between: list[float] = []
    for recording in recordings.recordings():
        source = RecordedSource(recording)
        residual = source.logs - np.median(source.logs, axis=0)
        residual -= np.median(residual, axis=1, keepdims=True)
        between = np.std(residual, axis=0)
        within = []
        for key in source.keys:
            found = within_run_spread([_samples(r, key)[0] for r in source.rounds])
            within.append(found.spread if found is not None else float("nan"))
        rho = stats.spearmanr(within, between).statistic
        print(f"{source.name:22s} {len(source.rounds):3d} rounds  Spearman {rho:+.2f}")
        if args.table:
            for key, w, b in zip(source.keys, within, between, strict=True):
                print(f"    {key:45s} inside a run {w:6.3f}  between processes {b:6.3f}")
        pooled_within += within
        pooled_between += list(between)
    pooled = stats.spearmanr(pooled_within, pooled_between).statistic
    print(f"{'pooled':22s}             Spearman {pooled:+.2f}")


if __name__ == "__main__":
    main()
