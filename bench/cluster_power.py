"""How the comparator does when several benchmarks of a suite slow down together.

`eval_comparator.py` slows one benchmark at a time, or 60% of the suite (where the suite's
shared change decides the gate). Between the two lies a cluster of a few benchmarks moving
together: too few to move the suite's median, enough to widen the cross-section that one round
a side takes its noise scale from (Qn's order statistic then falls among the distances inside
the two groups). Per setting and cluster size, on a `noise_sim` shape, it prints how often each
slowed benchmark is a `regression`, how often it is flagged `possible_regression` instead, how
often the comparison fails `--fail-on-regression`, and Qn of the A/A cross-section with and
without the cluster (how much the cluster widens it):

    python bench/cluster_power.py                      # gauss-3, +25%, 30 pairs, about a minute
    python bench/cluster_power.py --shape gauss-1 --effect 0.1
"""

from __future__ import annotations

import argparse

import numpy as np

import eval_comparator as ec  # bench/ is on sys.path when this file is run as a script
from perfgate.stats import noise


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="gauss-3")
    parser.add_argument("--effect", type=float, default=0.25)
    parser.add_argument("--sizes", default="1,2,4,6")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--settings", default="1,3seq,3alt")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    source = ec.SimSource(args.shape, m=13, seed=args.seed, max_gap=8)
    keys = list(source.keys)
    print(f"{args.shape}, +{args.effect:.0%} in the first k of {len(keys)}, {args.pairs} pairs")
    print("setting  k  found  flagged  gate fails  Qn with / without the cluster")
    for short in args.settings.split(","):
        setting = next(s for s in ec.SETTINGS if s.short == short)
        for k in (int(v) for v in args.sizes.split(",")):
            slowed = dict.fromkeys(keys[:k], 1 + args.effect)
            found = flagged = fails = 0
            widening = []
            for index in range(args.pairs):
                pair = source.pair(setting, index, pairs=args.pairs, seed=args.seed)
                head = [ec._slowed(d, slowed) for d in pair.head]
                comparison = ec._compare(pair, head)
                results = ec._time_verdicts(comparison)
                found += sum(results[key].verdict == "regression" for key in keys[:k])
                flagged += sum(results[key].flag == "possible_regression" for key in keys[:k])
                fails += comparison.has_regression()
                aa = ec._time_verdicts(ec._compare(pair, pair.head))
                unmoved = np.log([aa[key].ratio for key in keys])
                moved = unmoved + np.log1p(args.effect) * (np.arange(len(keys)) < k)
                widening.append(noise.qn_scale(moved) / noise.qn_scale(unmoved))
            total = args.pairs * k
            print(
                f"{short:7} {k:2} {found / total:6.0%} {flagged / total:8.0%} "
                f"{fails / args.pairs:11.0%}  x{np.median(widening):.2f}"
            )


if __name__ == "__main__":
    main()
