"""The harness's own cost: per timed call on a trivial callable, and the fixed cost per instance.

  * per call: perfgate's median for `lambda: None` is the floor it can measure (the loop plus one
    Python call); compared with a bare `for` loop around the same call and with timeit;
  * per instance: the wall time of measuring a trivial benchmark end to end (timing with its
    warm-up, memory, flops, op count, profile), i.e. what each benchmark costs beyond its own work;
  * the exact allocation pass (allocated_bytes, peak_allocated_bytes: a few calls under the
    profiler's memory events) on every example benchmark, against the default 1 s timing budget
    (the target: at most 10% of it).

Run: .venv/bin/python bench/harness_overhead.py [--skip-compiled] [--threads 1]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import timeit
from pathlib import Path

import torch

from perfgate.harness.allocations import measure_cpu_allocations, profiled_calls
from perfgate.harness.api import BenchmarkInstance, BenchmarkSpec
from perfgate.harness.compile_cache import PrivateCompileCache
from perfgate.harness.discovery import discover
from perfgate.harness.measure import MeasureSettings, measure_instance
from perfgate.harness.progress import NullReporter
from perfgate.harness.sampling import SamplingConfig, sample
from perfgate.harness.timing import CpuTimer


def noop() -> None:
    return None


def bare_loop_ns(k: int = 1_000_000, repeats: int = 7) -> float:
    results = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(k):
            noop()
        results.append((time.perf_counter_ns() - start) / k)
    return statistics.median(results)


def instance_cost(profile: bool, max_time: float) -> float:
    spec = BenchmarkSpec(name="noop", setup=lambda: noop, params={})
    instance = BenchmarkInstance(spec=spec, params={}, key="noop")
    settings = MeasureSettings(max_time=max_time, profile=profile)
    start = time.perf_counter()
    result = measure_instance(
        instance, device=torch.device("cpu"), settings=settings, reporter=NullReporter()
    )
    assert result.error is None, result.error
    return time.perf_counter() - start


EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "benchmarks"
#: The default per-instance timing budget (SamplingConfig.max_time) the pass is measured against.
BUDGET_S = SamplingConfig().max_time


def allocation_pass_costs(
    skip_compiled: bool, repeats: int = 7
) -> list[tuple[str, float, int, float]]:
    """(key, seconds of one call, profiled calls, seconds of the allocation pass) per example.

    Each is the fastest of `repeats`: on a shared machine the least disturbed repetition is the
    closest to what the pass costs by itself.
    """
    rows = []
    cache = PrivateCompileCache()
    try:
        for item in discover([EXAMPLES]).items:
            if not isinstance(item, BenchmarkInstance):
                continue
            if skip_compiled and "compile" in item.spec.tags:
                continue
            cache.fresh()
            torch.manual_seed(0)
            fn = item.call_setup(torch.device("cpu"))
            fn()
            calls = []
            for _ in range(repeats):
                start = time.perf_counter()
                fn()
                calls.append(time.perf_counter() - start)
            per_call = min(calls)
            profiled = profiled_calls(per_call)
            passes = []
            for _ in range(repeats):
                start = time.perf_counter()
                measure_cpu_allocations(fn, calls=profiled)
                passes.append(time.perf_counter() - start)
            rows.append((item.key, per_call, profiled, min(passes)))
            del fn
    finally:
        cache.close()
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip-compiled", action="store_true", help="leave out mlp_compiled")
    # One thread, as `perfgate demo` runs: OpenMP's spinning threads on a shared machine turn
    # preemption into millisecond stalls that would swamp what is measured here.
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch={torch.__version__} threads={torch.get_num_threads()}")
    result = sample(noop, CpuTimer(), SamplingConfig())
    median_ns = result.median * 1e9
    spread = statistics.quantiles([s * 1e9 for s in result.samples], n=4)
    print(
        f"perfgate per-call median, def noop():      {median_ns:6.1f} ns "
        f"(IQR {spread[0]:.1f}-{spread[2]:.1f} ns, {len(result.samples)} blocks "
        f"of {result.calls_per_block} calls)"
    )
    lam = sample(lambda: None, CpuTimer(), SamplingConfig())
    print(f"perfgate per-call median, lambda: None:     {lam.median * 1e9:6.1f} ns")
    bare = bare_loop_ns()
    print(f"bare for-loop + call:                       {bare:6.1f} ns")
    number = 1_000_000
    best = min(timeit.repeat(noop, number=number, repeat=7)) / number * 1e9
    print(f"timeit (min of 7 x 1e6):                    {best:6.1f} ns")
    print(f"harness cost per timed call vs bare loop:   {median_ns - bare:+6.1f} ns")
    for profile in (False, True):
        costs = [instance_cost(profile, max_time=0.2) for _ in range(3)]
        label = "with profile" if profile else "no profile  "
        print(
            f"fixed cost per instance, max_time=0.2s, {label}: "
            f"{statistics.median(costs):.3f} s (timing budget included)"
        )
    print(f"\nallocation pass per example (fastest of 7), against a {BUDGET_S:g} s budget:")
    print(f"{'benchmark':40} {'call ms':>9} {'calls':>5} {'pass ms':>9} {'of budget':>10}")
    worst = 0.0
    for key, per_call, profiled, cost in allocation_pass_costs(args.skip_compiled):
        worst = max(worst, cost / BUDGET_S)
        print(
            f"{key:40} {per_call * 1e3:9.2f} {profiled:5} {cost * 1e3:9.1f} {cost / BUDGET_S:10.1%}"
        )
    print(f"largest share of the budget: {worst:.1%} (target: at most 10%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
