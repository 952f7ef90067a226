"""A/A over separate processes: exact memory metrics must repeat, cold compile times should agree.

Runs `perfgate run` on the example benchmarks N times (default 10), each a fresh process as a CI
job would be, and prints per benchmark:

  * allocated_bytes and peak_allocated_bytes: the distinct values seen over the N runs (one each
    when they are exact, as they must be), with the ops the note names;
  * compile_time (cold, a private inductor cache per process): every run's value, the spread and
    the largest ratio between two runs, against the comparator's default threshold.

Run: .venv/bin/python bench/exact_memory_aa.py [--runs 10] [--max-time 0.1] [-k EXPR]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from perfgate.stats.two_sample import CompareSettings

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "benchmarks"
EXACT = ("allocated_bytes", "peak_allocated_bytes")


def run_once(out: Path, *, max_time: float, filter_expr: str | None) -> float:
    command = [
        sys.executable,
        "-m",
        "perfgate",
        "run",
        str(EXAMPLES),
        "--device",
        "cpu",
        "--threads",
        "1",
        "--max-time",
        str(max_time),
        "--no-profile",
        "--no-store",
        "--commit",
        "0" * 40,
        "--out",
        str(out),
    ]
    if filter_expr:
        command += ["-k", filter_expr]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--max-time", type=float, default=0.1)
    parser.add_argument("-k", dest="filter_expr", default=None)
    args = parser.parse_args()
    documents = []
    with tempfile.TemporaryDirectory() as folder:
        for index in range(args.runs):
            out = Path(folder) / f"run-{index}.json"
            took = run_once(out, max_time=args.max_time, filter_expr=args.filter_expr)
            print(f"run {index + 1}/{args.runs}: {took:.1f} s", flush=True)
            documents.append(json.loads(out.read_text()))
    exact_ok = True
    keys = [b["key"] for b in documents[0]["benchmarks"]]
    print(f"\n{'benchmark':40} {'allocated_bytes':>16} {'peak_alloc_bytes':>16}  distinct")
    for key in keys:
        entries = [next(b for b in d["benchmarks"] if b["key"] == key) for d in documents]
        values = {
            name: {e["metrics"][name]["value"] for e in entries if name in e["metrics"]}
            for name in EXACT
        }
        notes = {e["metrics"].get("allocated_bytes", {}).get("note") for e in entries}
        distinct = max(len(v) for v in values.values()) + (len(notes) > 1)
        exact_ok &= distinct == 1
        shown = [f"{min(v):.0f}" if v else "-" for v in values.values()]
        print(f"{key:40} {shown[0]!s:>16} {shown[1]!s:>16}  {distinct}")
    print(f"exact memory metrics identical over {args.runs} runs: {'yes' if exact_ok else 'NO'}")
    threshold = CompareSettings().threshold
    for key in keys:
        times = [
            sample
            for d in documents
            for b in d["benchmarks"]
            if b["key"] == key and "compile_time" in b["metrics"]
            for sample in b["metrics"]["compile_time"]["samples"]
        ]
        if not times:
            continue
        worst = max(a / b for a, b in itertools.permutations(times, 2)) - 1 if len(times) > 1 else 0
        print(
            f"\n{key} cold compile_time over {len(times)} processes: "
            + ", ".join(f"{t:.2f}" for t in times)
            + f" s\n  median {statistics.median(times):.2f} s, "
            f"sd {statistics.pstdev(times) / statistics.mean(times):.1%} of the mean, "
            f"largest ratio between two runs +{worst:.1%} "
            f"(comparator threshold ±{threshold:.0%})"
        )
    return 0 if exact_ok else 1


if __name__ == "__main__":
    sys.exit(main())
