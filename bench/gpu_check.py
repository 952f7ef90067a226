"""GPU acceptance checks for the harness (needs CUDA; elsewhere it says it skipped and exits 0).

  1. CUDA-event timing agrees with synchronized wall-clock time within 5% (large kernels, where
     launch overhead is negligible);
  2. peak memory of a known allocation (torch.empty of 256 MiB) is exactly what the allocator
     reserved for it;
  3. kernel launch counts are identical across repeated runs (and 200 tiny adds launch 200);
  4. profiles carry device times (aten::mm has self_device_us > 0);
  5. the example suite runs on CUDA through run_benchmarks with no errors, with kernel_launches.

Prints PASS/FAIL per check; exits 1 if any failed.
Run: .venv/bin/python bench/gpu_check.py [--examples examples/benchmarks]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from perfgate.config import GitHubContext
from perfgate.harness.counters import count_kernel_launches
from perfgate.harness.memory import measure_cuda_peak
from perfgate.harness.profiling import profile_callable
from perfgate.harness.runner import run_benchmarks
from perfgate.harness.sampling import SamplingConfig, sample
from perfgate.harness.timing import make_synchronize, make_timer

MIB = 1 << 20
results: list[tuple[str, bool, str]] = []


def check(name: str, ok: bool, detail: str) -> None:
    results.append((name, ok, detail))
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}", flush=True)


def wall_per_call(fn, sync, calls: int) -> float:
    fn()
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls


def timing_checks(device: torch.device) -> None:
    sync = make_synchronize(device)
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    q, k, v = (torch.randn(8, 16, 4096, 128, device=device, dtype=torch.bfloat16) for _ in range(3))
    cases = {
        "matmul 8192 bf16": lambda: a @ a,
        "sdpa 8x16x4096x128": lambda: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=True
        ),
    }
    for name, fn in cases.items():
        events = sample(fn, make_timer(device), SamplingConfig(max_time=2.0)).median
        wall = wall_per_call(fn, sync, calls=max(10, int(1.0 / max(events, 1e-6))))
        ratio = events / wall
        check(
            f"event timing vs wall clock, {name}",
            abs(ratio - 1) <= 0.05,
            f"events {events * 1e3:.3f} ms, wall {wall * 1e3:.3f} ms, ratio {ratio:.3f}",
        )


def memory_check(device: torch.device) -> None:
    size = 256 * MIB
    peak = measure_cuda_peak(lambda: torch.empty(size, dtype=torch.uint8, device=device), device)
    ok = peak.value is not None and size <= peak.value <= size + 2 * MIB
    check("peak memory of torch.empty(256 MiB)", ok, f"{peak.value} B via {peak.method}")


def kernel_checks(device: torch.device) -> None:
    sync = make_synchronize(device)
    a = torch.randn(1024, 1024, device=device)
    x = torch.ones(16, device=device)

    def tiny():
        y = x
        for _ in range(200):
            y = y + 1
        return y

    for name, fn in {"matmul 1024": lambda: a @ a, "200 tiny adds": tiny}.items():
        counts = [count_kernel_launches(fn, sync) for _ in range(3)]
        values = {c for c, _ in counts}
        ok = len(values) == 1 and all(consistent for _, consistent in counts)
        if name == "200 tiny adds":
            ok = ok and values == {200}
        check(f"kernel launches stable, {name}", ok, f"counts per run {[c for c, _ in counts]}")


def profile_check(device: torch.device) -> None:
    a = torch.randn(2048, 2048, device=device)
    result = profile_callable(
        lambda: a @ a, on_device=True, synchronize=make_synchronize(device), active=3
    )
    rows = {row["op"]: row for row in result.ops}
    mm = rows.get("aten::mm", {})
    total = sum(row["self_device_us"] for row in result.ops)
    check(
        "profile carries device times",
        mm.get("self_device_us", 0) > 0,
        f"aten::mm self_device_us={mm.get('self_device_us', 0):.1f}, total {total:.1f} us",
    )


def examples_check(paths: list[str]) -> None:
    start = time.perf_counter()
    doc = run_benchmarks(
        paths=paths,
        device="cuda",
        max_time=0.5,
        commit="0" * 40,
        github=GitHubContext(),
        project="perfgate/gpu-check",
    )
    errors = [f"{b.key}: {b.error}" for b in doc.benchmarks if b.error]
    missing = [b.key for b in doc.benchmarks if not b.error and "kernel_launches" not in b.metrics]
    no_device_time = [
        b.key
        for b in doc.benchmarks
        if b.profile is not None and not any(op.self_device_us > 0 for op in b.profile.ops)
    ]
    check(
        "examples on CUDA",
        not errors and not missing,
        f"{len(doc.benchmarks)} benchmarks in {time.perf_counter() - start:.1f}s; errors "
        f"{errors or 'none'}; without kernel_launches {missing or 'none'}",
    )
    check(
        "example profiles carry device times",
        not no_device_time,
        f"without device time: {no_device_time or 'none'}",
    )
    for bench in doc.benchmarks:
        samples = sorted(bench.metrics["time"].samples) if "time" in bench.metrics else []
        if samples:
            launches = bench.metrics.get("kernel_launches")
            print(
                f"      {bench.key:<40} {samples[len(samples) // 2] * 1e6:10.1f} us  "
                f"kernels/call {launches.value if launches else '-'}"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--examples", default=str(Path(__file__).resolve().parents[1] / "examples" / "benchmarks")
    )
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(f"SKIPPED: no CUDA device here (torch {torch.__version__}); nothing to check")
        return 0
    device = torch.device("cuda:0")
    torch.cuda.set_device(device)
    print(
        f"device: {torch.cuda.get_device_name(device)}, torch {torch.__version__}, "
        f"CUDA {torch.version.cuda}"
    )
    for step in (timing_checks, memory_check, kernel_checks, profile_check):
        try:
            step(device)
        except Exception as exc:
            check(step.__name__, False, f"raised {type(exc).__name__}: {exc}")
    try:
        examples_check([args.examples])
    except Exception as exc:
        check("examples on CUDA", False, f"raised {type(exc).__name__}: {exc}")
    failed = [name for name, ok, _ in results if not ok]
    print(
        f"\n{len(results) - len(failed)}/{len(results)} checks passed"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
