"""perfgate's timing against torch.utils.benchmark: agreement of medians and precision per second.

For a matmul and an SDPA workload (CPU, or the GPU when there is one):
  * perfgate's median vs `Timer.blocked_autorange()` (they should agree within 10%), from three
    interleaved pairs of runs, so slow drift of the machine's speed hits both tools alike;
  * precision: the 95% CI half-width of the median (same order-statistic CI for both tools, as a
    fraction of the median), the wall seconds each tool spent, and their ratio, for perfgate's
    adaptive sampling vs `Timer.adaptive_autorange()`. Since the half-width shrinks like
    1/sqrt(seconds), `efficiency` = 1 / (half-width^2 x seconds) compares the two fairly whatever
    each chose to spend (higher is better).

Run: .venv/bin/python bench/harness_precision.py [--threads N]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time

import torch
import torch.utils.benchmark as tbench

from perfgate.harness.sampling import SamplingConfig, relative_ci, sample
from perfgate.harness.timing import make_synchronize, make_timer


def workloads(device: torch.device):
    n = 2048 if device.type == "cuda" else 256
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    seq = 1024 if device.type == "cuda" else 256
    q, k, v = (torch.randn(2, 8, seq, 64, device=device) for _ in range(3))

    def sdpa():
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

    return {f"matmul n={n}": lambda: a @ b, f"sdpa seq={seq}": sdpa}


def perfgate_run(fn, device):
    start = time.perf_counter()
    result = sample(fn, make_timer(device), SamplingConfig())
    spent = time.perf_counter() - start
    return (
        "perfgate (adaptive)",
        result.median,
        relative_ci(sorted(result.samples)),
        len(result.samples),
        spent,
    )


def make_torch_timer(fn, device, threads):
    sync = make_synchronize(device)

    def call():
        fn()
        sync()

    return tbench.Timer("call()", globals={"call": call}, num_threads=threads)


def timed(label, run):
    start = time.perf_counter()
    measured = run()
    spent = time.perf_counter() - start
    return (label, measured.median, relative_ci(sorted(measured.times)), len(measured.times), spent)


def print_row(name, row):
    tool, median, ci, n, spent = row
    ci_text = "-" if ci is None else f"{100 * ci:.2f}%"
    per_s = "-" if ci is None else f"{100 * ci / spent:.3f}%"
    eff = "-" if not ci else f"{1 / (ci * ci * spent):.3g}"
    print(
        f"{name:<16} {tool:<31} {median * 1e6:>9.1f}us {ci_text:>7} {n:>5} {spent:>8.2f} "
        f"{per_s:>8} {eff:>11}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    threads = torch.get_num_threads()
    print(f"device={device} torch={torch.__version__} threads={threads}")
    print("±CI: 95% CI half-width of the median / median ('-': under 6 samples, no 95% CI)")
    header = (
        f"{'workload':<16} {'tool':<31} {'median':>11} {'±CI':>7} {'n':>5} {'seconds':>8} "
        f"{'CI/s':>8} {'efficiency':>11}"
    )
    failures = 0
    for name, fn in workloads(device).items():
        fn()
        timer = make_torch_timer(fn, device, threads)
        pairs = []
        for _ in range(3):
            pairs.append(
                (
                    perfgate_run(fn, device),
                    timed("Timer.blocked_autorange", timer.blocked_autorange),
                )
            )
        rows = list(pairs[0])
        for threshold in (0.1, 0.01):  # the default, and perfgate's 1% target
            rows.append(
                timed(
                    f"Timer.adaptive_autorange({threshold})",
                    functools.partial(timer.adaptive_autorange, threshold=threshold),
                )
            )
        print()
        print(header)
        for row in rows:
            print_row(name, row)
        ours = statistics.median(p[0][1] for p in pairs)
        theirs = statistics.median(p[1][1] for p in pairs)
        ratio = ours / theirs
        ok = abs(ratio - 1) <= 0.10
        failures += not ok
        print(
            f"{name:<16} perfgate / blocked_autorange, median of 3 interleaved pairs: "
            f"{ours * 1e6:.1f} / {theirs * 1e6:.1f} us = {ratio:.3f} "
            f"-> {'PASS' if ok else 'FAIL'} (within 10%)"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
