"""A/A for cold compiles: do two sides of separate processes give the same compile_time?

Runs `perfgate run -k mlp_compiled` (examples/benchmarks) in 2N fresh processes, alternating
between side A and side B (A B B A ...), each process one cold compile (a private inductor
cache, one compile thread). Prints per side and pooled: the mean, sd (% of the mean) and
largest/smallest ratio of compile_time (user CPU seconds, the compared figure) and of the
informational compile_wall_time; the distinct values of the exact graph_breaks, recompiles and
compiled_kernels; and the verdict of `perfgate compare A B` (each side a folder of its N
results files) for compile_time.

Run: nice -n 10 .venv/bin/python bench/compile_agreement.py [--processes 10] [--max-time 0.2]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from exact_memory_aa import run_once

KEY = "mlp_compiled[dim=128,tokens=256]"
EXACT = ("graph_breaks", "recompiles", "compiled_kernels")


def metrics_of(path: Path) -> dict[str, dict[str, object]]:
    document = json.loads(path.read_text())
    (bench,) = [b for b in document["benchmarks"] if b["key"] == KEY]
    metrics: dict[str, dict[str, object]] = bench["metrics"]
    return metrics


def figure(metric: dict[str, object]) -> float:
    samples = metric.get("samples")
    if isinstance(samples, list):
        (value,) = samples
        return float(value)
    return float(metric["value"])  # type: ignore[arg-type]


def spread(values: list[float]) -> str:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return (
        f"mean {mean:.3f} s, sd {sd / mean:.1%}, max/min {max(values) / min(values):.3f} "
        f"({', '.join(f'{v:.2f}' for v in values)})"
    )


def paired(base: list[float], head: list[float]) -> str:
    """The sides' difference from neighbouring processes (B_i against A_i, run one after the
    other): what the comparison would show if the machine's slow drift, which reaches both
    sides alike, were taken out. A diagnostic; the comparator treats the processes as
    independent."""
    from scipy import stats

    diffs = [math.log(h / b) for b, h in zip(base, head, strict=True)]
    mean = statistics.fmean(diffs)
    half = float(stats.t.ppf(0.975, len(diffs) - 1)) * statistics.stdev(diffs) / len(diffs) ** 0.5
    return (
        f"{math.expm1(mean):+.1%} (95% CI {math.expm1(mean - half):+.1%} to "
        f"{math.expm1(mean + half):+.1%}), sd of a pair's difference "
        f"{statistics.stdev(diffs):.1%}"
    )


def compare(base: Path, head: Path) -> dict[str, object]:
    command = [sys.executable, "-m", "perfgate", "compare", str(base), str(head)]
    done = subprocess.run(
        [*command, "--format", "json"], check=True, capture_output=True, text=True
    )
    comparison = json.loads(done.stdout)
    (result,) = [
        r for r in comparison["results"] if r["key"] == KEY and r["metric"] == "compile_time"
    ]
    found: dict[str, object] = result
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=10, help="processes per side")
    parser.add_argument("--max-time", type=float, default=0.2)
    parser.add_argument("--keep", type=Path, help="keep the results files in this folder")
    args = parser.parse_args()
    if args.processes < 2:
        parser.error("--processes: at least 2 a side (a spread needs two)")
    root = args.keep or Path(tempfile.mkdtemp(prefix="perfgate-compile-aa-"))
    sides = {"A": root / "A", "B": root / "B"}
    for folder in sides.values():
        folder.mkdir(parents=True, exist_ok=True)
    values: dict[str, dict[str, list[float]]] = {s: {"cpu": [], "wall": []} for s in sides}
    exact: dict[str, set[float]] = {name: set() for name in EXACT}
    for index in range(args.processes):
        # Alternating sides (A B B A ...), so that the machine's slow drift and whatever one
        # process leaves for the next reach both alike.
        order = ["A", "B"] if index % 2 == 0 else ["B", "A"]
        for side in order:
            folder = sides[side]
            out = folder / f"{index:02d}.json"
            run_once(out, max_time=args.max_time, filter_expr="mlp_compiled")
            metrics = metrics_of(out)
            values[side]["cpu"].append(figure(metrics["compile_time"]))
            values[side]["wall"].append(figure(metrics["compile_wall_time"]))
            for name in EXACT:
                if name in metrics:
                    exact[name].add(figure(metrics[name]))
            print(
                f"{side} {index + 1}/{args.processes}: compile_time "
                f"{values[side]['cpu'][-1]:.2f} s, wall {values[side]['wall'][-1]:.2f} s",
                flush=True,
            )
    for side in sides:
        print(f"side {side} compile_time (user CPU): {spread(values[side]['cpu'])}")
        print(f"side {side} compile_wall_time:       {spread(values[side]['wall'])}")
    pooled_cpu = values["A"]["cpu"] + values["B"]["cpu"]
    pooled_wall = values["A"]["wall"] + values["B"]["wall"]
    print(f"pooled compile_time (user CPU): {spread(pooled_cpu)}")
    print(f"pooled compile_wall_time:       {spread(pooled_wall)}")
    print(f"paired B vs A (diagnostic): {paired(values['A']['cpu'], values['B']['cpu'])}")
    for name, seen in exact.items():
        print(f"{name}: {sorted(seen)} over {2 * args.processes} processes")
    result = compare(sides["A"], sides["B"])
    ci = result.get("ci") or [None, None]
    print(
        f"perfgate compare A B, compile_time: {result['verdict']} "
        f"(ratio {result['ratio']}, 95% CI {ci}, threshold {result['threshold']}): "
        f"{result['reason']}"
    )
    print(f"results files: {root}")


if __name__ == "__main__":
    main()
