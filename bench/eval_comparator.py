"""False-alarm rate and power of `perfgate compare` on separate-process runs recorded here.

    python bench/eval_comparator.py record --runs 40        # ~20 s a job: perfgate run, 1 round
    python bench/eval_comparator.py eval                      # prints the tables
    python bench/eval_comparator.py bound                     # best power any cutoff could reach
    python bench/eval_comparator.py record --runs 12 --rounds 3 --out bench/data/comparator/rounds3
    python bench/eval_comparator.py eval --data bench/data/comparator/rounds3 --jobs 1

`record` runs the example benchmarks N times, each `perfgate run` job a separate process (no
profile, `--threads 1`), one after another, all for the same commit: identical code. `eval` builds

- A/A pairs: two different jobs a side, or two disjoint groups of 3 consecutive jobs pooled as
  rounds, or 6 consecutive jobs dealt out alternately to the sides (as `perfgate demo` does):
  the comparator should find nothing;
- injected slowdowns: the same pairs with one benchmark's head samples multiplied by 1.10 or 1.25
  (real noise, known effect), each benchmark in turn — the comparator should find that
  benchmark, and only it;
- the same with history: the 8 runs before the base side in the store as the base branch's past.

Rates count the `time` metric of every benchmark instance (throughput is derived from time).
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from perfgate.results import ResultsDocument, load_document
from perfgate.stats.compare import CompareSettings, side_median
from perfgate.stats.comparison import compare_documents

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data" / "comparator" / "threads1"
COMMIT = "e" * 40


def record(
    runs: int, max_time: float, threads: int, rounds: int, out: Path, *, system_malloc: bool = False
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    start = len(list(out.glob("run-*.json")))
    for i in range(start, start + runs):
        began = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "perfgate",
                "run",
                str(ROOT / "examples" / "benchmarks"),
                "--device",
                "cpu",
                "--no-profile",
                "--no-store",
                "--max-time",
                str(max_time),
                "--threads",
                str(threads),
                "--rounds",
                str(rounds),
                "--commit",
                COMMIT,
                "--branch",
                "main",
                "--project",
                "perfgate/examples",
                "--out",
                str(out / f"run-{i:03d}.json"),
                *(["--system-malloc"] if system_malloc else []),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "CI": "1"},
        )
        print(f"run {i}: {time.perf_counter() - began:.1f} s", flush=True)


def _scaled(document: ResultsDocument, key: str, factor: float) -> ResultsDocument:
    """A copy where `key` is `factor` times slower: time × factor, throughput ÷ factor."""
    copy = document.model_copy(deep=True)
    for bench in copy.benchmarks:
        if bench.key != key:
            continue
        for name, metric in bench.metrics.items():
            if metric.samples is None:
                continue
            scale = factor if metric.direction == "lower" else 1 / factor
            if name in ("time", "throughput"):
                metric.samples = [s * scale for s in metric.samples]
    return copy


def _history(runs: Sequence[ResultsDocument]) -> list[dict[tuple[str, str], float]]:
    out = []
    for run in runs:
        medians = {}
        for bench in run.benchmarks:
            for name, metric in bench.metrics.items():
                if metric.samples:
                    medians[(bench.key, name)] = float(np.median(metric.samples))
        out.append(medians)
    return out


def _pairs(
    n: int, rounds: int, limit: int, *, interleave: bool = False
) -> list[tuple[list[int], list[int]]]:
    """Disjoint groups of `rounds` consecutive runs, each paired with a later group.

    With `interleave`, each pair is instead 2 × `rounds` consecutive jobs dealt out alternately
    (base, head, base, ...), as `perfgate demo` measures its sides.
    """
    if interleave:
        width = 2 * rounds
        blocks = [list(range(i, i + width)) for i in range(n - width + 1)]
        return [(b[0::2], b[1::2]) for b in blocks][:limit]
    groups = [list(range(i, i + rounds)) for i in range(0, n - rounds + 1, rounds)]
    pairs = [(a, b) for a, b in itertools.combinations(groups, 2)]
    step = max(1, len(pairs) // limit)
    return pairs[::step][:limit]


def evaluate(
    runs: list[ResultsDocument],
    *,
    rounds: int,
    history: bool,
    limit: int,
    settings: CompareSettings,
    interleave: bool = False,
) -> dict[str, float]:
    keys = [b.key for b in runs[0].benchmarks if "time" in b.metrics]
    alarms = comparisons = pairs_with_alarm = 0
    found = {1.10: 0, 1.25: 0}
    tried = {1.10: 0, 1.25: 0}
    collateral = 0
    pairs = _pairs(len(runs), rounds, limit, interleave=interleave)
    if history:
        pairs = [(a, b) for a, b in pairs if a[0] >= 8]
    for base_ids, head_ids in pairs:
        base = [runs[i] for i in base_ids]
        head = [runs[i] for i in head_ids]
        past = _history(runs[base_ids[0] - 8 : base_ids[0]]) if history else []
        result = compare_documents(base, head, settings=settings, history=past)
        flagged = [
            r
            for r in result.results
            if r.metric == "time" and r.verdict in ("regression", "improvement")
        ]
        comparisons += sum(1 for r in result.results if r.metric == "time")
        alarms += len(flagged)
        pairs_with_alarm += bool(flagged)
        for factor in found:
            for key in keys:
                slowed = [_scaled(h, key, factor) for h in head]
                out = compare_documents(base, slowed, settings=settings, history=past)
                verdicts = {r.key: r.verdict for r in out.results if r.metric == "time"}
                tried[factor] += 1
                found[factor] += verdicts.get(key) == "regression"
                collateral += sum(
                    1
                    for k, v in verdicts.items()
                    if k != key and v in ("regression", "improvement")
                )
    return {
        "pairs": len(pairs),
        "false_alarm_rate": alarms / max(comparisons, 1),
        "pairs_with_any_alarm": pairs_with_alarm / max(len(pairs), 1),
        "power_10": found[1.10] / max(tried[1.10], 1),
        "power_25": found[1.25] / max(tried[1.25], 1),
        "collateral_alarms": collateral,
    }


def run_to_run_spread(runs: list[ResultsDocument]) -> None:
    """How much each benchmark's median moves between separate runs (for the record)."""
    print("\nrun-to-run movement of each benchmark's median (separate processes):")
    keys = [b.key for b in runs[0].benchmarks if "time" in b.metrics]
    logs = np.array(
        [
            [
                math.log(
                    np.median(
                        next(b for b in r.benchmarks if b.key == k).metrics["time"].samples or [1]
                    )
                )
                for k in keys
            ]
            for r in runs
        ]
    )
    common = np.median(logs - np.median(logs, axis=0), axis=1)
    for j, key in enumerate(keys):
        column = logs[:, j] - np.median(logs[:, j])
        worst = np.max(np.abs(column))
        print(f"  {key:45s} sd {np.std(column):6.1%}  worst {math.expm1(worst):+7.1%}")
    print(f"  {'(common factor of the run)':45s} sd {np.std(common):6.1%}")


def _aa_deviations(
    runs: list[ResultsDocument], keys: list[str], rounds: int, *, interleave: bool
) -> np.ndarray:
    """Drift-adjusted log ratios of the sides' medians (as the comparator takes them), one row
    per A/A pair, one column per key."""
    rows = []
    for base_ids, head_ids in _pairs(len(runs), rounds, 10_000, interleave=interleave):
        logs = []
        for ids in (base_ids, head_ids):
            benches = [{b.key: b for b in runs[i].benchmarks} for i in ids]
            logs.append(
                [
                    math.log(
                        side_median(
                            [np.asarray(b[k].metrics["time"].samples or [1]) for b in benches]
                        )
                    )
                    for k in keys
                ]
            )
        row = np.asarray(logs[1]) - np.asarray(logs[0])
        rows.append(row - np.median(row))
    return np.asarray(rows)


def bound(runs: list[ResultsDocument]) -> None:
    """The best power any cutoff on the ratio of medians could reach at the targets' false alarms.

    An oracle that knows the A/A distribution of this data picks the cutoff that spends exactly
    the allowed false-alarm rate, either one for all benchmarks or one per benchmark (what perfect
    history would give), and is scored on the same pairs with the slowdown added. No comparator
    that decides from the medians can beat it on this data.
    """
    keys = [b.key for b in runs[0].benchmarks if "time" in b.metrics]
    print("\nupper bound on power (oracle cutoffs on the A/A deviations of this data):")
    cases = [(1, False, 0.03, 0.25), (3, False, 0.01, 0.10), (3, True, 0.01, 0.10)]
    for rounds, interleave, false_alarms, slowdown in cases:
        d = _aa_deviations(runs, keys, rounds, interleave=interleave)
        effect = math.log1p(slowdown)
        cutoff = float(np.quantile(np.abs(d), 1 - false_alarms))
        shared = float(np.mean(d + effect > cutoff))
        per_key = [np.quantile(np.abs(d[:, j]), 1 - false_alarms) for j in range(len(keys))]
        own = float(np.mean([np.mean(d[:, j] + effect > c) for j, c in enumerate(per_key)]))
        label = f"{rounds} job{'s' if rounds > 1 else ''}" + (", alternating" if interleave else "")
        print(
            f"  {label:18s} {len(d):4d} pairs  false alarms {false_alarms:.0%}: "
            f"+{slowdown:.0%} found at most {shared:.1%} (one cutoff), "
            f"{own:.1%} (one per benchmark)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--runs", type=int, default=40)
    rec.add_argument("--threads", type=int, default=1)
    rec.add_argument("--rounds", type=int, default=1, help="rounds per job (perfgate run --rounds)")
    rec.add_argument("--max-time", type=float, default=0.5)
    rec.add_argument("--out", type=Path, default=DATA)
    rec.add_argument(
        "--system-malloc", action="store_true", help="leave glibc's malloc thresholds dynamic"
    )
    sub.add_parser("bound").add_argument("--data", type=Path, default=DATA)
    ev = sub.add_parser("eval")
    ev.add_argument("--data", type=Path, default=DATA)
    ev.add_argument("--pairs", type=int, default=60, help="pairs per setting (at most)")
    ev.add_argument("--threshold", type=float, default=0.03)
    ev.add_argument(
        "--jobs",
        type=int,
        nargs="+",
        default=[1, 3],
        help="jobs pooled per side (each job holds the rounds it was recorded with)",
    )
    args = parser.parse_args()
    if args.command == "record":
        record(
            args.runs,
            args.max_time,
            args.threads,
            args.rounds,
            args.out,
            system_malloc=args.system_malloc,
        )
        return
    paths = sorted(args.data.glob("run-*.json"))
    runs = [load_document(p, max_bytes=1 << 30) for p in paths]
    print(f"{len(runs)} runs of {len(runs[0].benchmarks)} benchmarks from {args.data}")
    if args.command == "bound":
        bound(runs)
        return
    run_to_run_spread(runs)
    settings = CompareSettings(threshold=args.threshold)
    print(
        f"\n{'setting':36s} {'pairs':>5s} {'false alarms':>12s} {'pairs w/ alarm':>14s} "
        f"{'power +10%':>10s} {'power +25%':>10s} {'collateral':>10s}"
    )
    table = {}
    per_job = len(runs[0].benchmarks[0].metrics["time"].rounds or [1])
    settings_list = [
        (history, jobs, False) for history, jobs in itertools.product((False, True), args.jobs)
    ]
    settings_list += [(False, jobs, True) for jobs in args.jobs if jobs > 1]
    for history, jobs, interleave in settings_list:
        began = time.perf_counter()
        stats = evaluate(
            runs,
            rounds=jobs,
            history=history,
            limit=args.pairs,
            settings=settings,
            interleave=interleave,
        )
        label = f"{jobs} job{'s' if jobs > 1 else ''} x {per_job} round/side"
        label += " + history" if history else ""
        label += ", alternating" if interleave else ""
        table[label] = stats
        print(
            f"{label:36s} {stats['pairs']:5.0f} {stats['false_alarm_rate']:12.1%} "
            f"{stats['pairs_with_any_alarm']:14.1%} {stats['power_10']:10.1%} "
            f"{stats['power_25']:10.1%} {stats['collateral_alarms']:10.0f}"
            f"   ({time.perf_counter() - began:.0f} s)"
        )
    (args.data / "eval.json").write_text(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
