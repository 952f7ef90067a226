"""GPU acceptance checks for the harness (needs CUDA; elsewhere it says it skipped and exits 0).

  1. CUDA-event timing agrees with synchronized wall-clock time within 5% (large kernels, where
     launch overhead is negligible);
  2. peak memory of a known allocation (torch.empty of 256 MiB) is exactly what the allocator
     reserved for it;
  3. kernel launch counts are identical across repeated runs (and 200 tiny adds launch 200);
  4. profiles carry device times (aten::mm has self_device_us > 0);
  5. the example suite runs on CUDA through run_benchmarks with no errors, with kernel_launches;
  6. a launch-bound callable (200 tiny adds) is flagged, its host_time is close to its time, and
     device_timing="queued" times it at least 3x lower;
  7. work left on a side stream is detected (time.note names other streams);
  8. a CUDA graph replay: kernel_launches counts the graph's kernels, event time agrees with
     wall-clock time;
  9. a device-side assert mid-round: the culprit is an error entry, the instances after it are
     measured in a fresh process (rounds=2, then in-process: run last, it poisons this process);
 10. `cuda:1` when there are two GPUs: the instance runs and allocates there;
 11. TF32 leak: a setup that turns TF32 on does not change the next instance's flags, and its
     note says so; prints both matmul times;
 12. cold-cache timing is slower than hot for a call whose inputs fit in L2;
 13. NVML readings, when nvidia-ml-py is installed: the fingerprint has the power limit.

Prints what each check measured and PASS/FAIL; exits 1 if any failed.
Run: .venv/bin/python bench/gpu_check.py [--examples examples/benchmarks]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import torch

from perfgate.config import GitHubContext
from perfgate.harness.allocations import measure_cuda_allocations
from perfgate.harness.counters import count_kernel_launches
from perfgate.harness.memory import measure_cuda_peak
from perfgate.harness.profiling import profile_callable
from perfgate.harness.runner import RunOptions, run_benchmarks
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
    counted = measure_cuda_allocations(
        lambda: torch.empty(size, dtype=torch.uint8, device=device), device
    )
    check(
        "allocated_bytes and peak_allocated_bytes of torch.empty(256 MiB) are exactly 256 MiB",
        counted.allocated == size and counted.peak == size,
        f"allocated {counted.allocated} B, peak {counted.peak} B via {counted.method}",
    )


def kernel_checks(device: torch.device) -> None:
    sync = make_synchronize(device)
    a = torch.randn(1024, 1024, device=device)
    x = torch.ones(16, device=device)

    def tiny():
        y = x
        for _ in range(200):
            y = y + 1
        return y

    def annotated():
        with torch.profiler.record_function("two kernels"):
            return (a @ a).relu_()

    cases = {"matmul 1024": (lambda: a @ a, None), "200 tiny adds": (tiny, 200)}
    cases["record_function around mm+relu"] = (annotated, 2)
    for name, (fn, expected) in cases.items():
        counts = [count_kernel_launches(fn, sync) for _ in range(3)]
        values = {c.per_call for c in counts}
        ok = len(values) == 1 and all(c.consistent for c in counts) and None not in values
        if expected is not None:
            ok = ok and values == {expected}
        check(
            f"kernel launches stable, {name}",
            ok,
            f"counts per run {[c.per_call for c in counts]}; kernels {sorted(counts[0].names)}",
        )


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
        RunOptions(
            paths=paths,
            device="cuda",
            max_time=0.5,
            commit="0" * 40,
            project="perfgate/gpu-check",
        ),
        github=GitHubContext(),
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


def run_suite(text: str, **options) -> dict:
    """Run a throw-away benchmark file through run_benchmarks; entries by key."""
    with tempfile.TemporaryDirectory(prefix="perfgate-gpu-check-") as tmp:
        folder = Path(tmp)
        (folder / "bench_check.py").write_text(
            "import torch, perfgate\n" + textwrap.dedent(text), encoding="utf-8"
        )
        options.setdefault("max_time", 0.5)
        options.setdefault("profile", False)
        options.setdefault("device", "cuda")
        doc = run_benchmarks(
            RunOptions(paths=[folder], commit="0" * 40, project="perfgate/gpu-check", **options),
            github=GitHubContext(),
            cwd=folder,
        )
    return {"_doc": doc, **{b.key: b for b in doc.benchmarks}}


def median(metric) -> float:
    ordered = sorted(metric.samples)
    return ordered[len(ordered) // 2]


LAUNCH_BOUND = """
@perfgate.benchmark
def tiny_adds(device):
    x = torch.ones(16, device=device)
    def call():
        y = x
        for _ in range(200):
            y = y + 1
        return y
    return call
"""


def launch_bound_check(device: torch.device) -> None:
    events = run_suite(LAUNCH_BOUND)["tiny_adds"]
    queued = run_suite(LAUNCH_BOUND, device_timing="queued")["tiny_adds"]
    time_s, host_s = median(events.metrics["time"]), median(events.metrics["host_time"])
    queued_s = median(queued.metrics["time"])
    note = events.metrics["time"].note or ""
    check(
        "launch-bound callable flagged, queued mode times the device",
        "launch-bound" in note and queued_s * 3 <= time_s,
        f"time {time_s * 1e6:.1f} us, host_time {host_s * 1e6:.1f} us, queued "
        f"{queued_s * 1e6:.1f} us ({queued.metrics['time'].method}); note {note!r}",
    )


SIDE_STREAM = """
@perfgate.benchmark
def side_stream(device):
    a = torch.randn(4096, 4096, device=device)
    small = torch.ones(16, device=device)
    side = torch.cuda.Stream(device)
    def call():
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            a @ a  # never joined back: the events on the current stream do not wait for it
        return small + 1
    return call
"""


def side_stream_check(device: torch.device) -> None:
    entry = run_suite(SIDE_STREAM)["side_stream"]
    note = entry.metrics["time"].note or ""
    check(
        "work on a side stream is detected",
        "other streams" in note,
        f"time {median(entry.metrics['time']) * 1e6:.1f} us; note {note!r}",
    )


def cuda_graph_check(device: torch.device) -> None:
    sync = make_synchronize(device)
    x = torch.ones(1 << 20, device=device)
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            y = x
            for _ in range(10):
                y = y * 1.0001
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = x
        for _ in range(10):
            y = y * 1.0001
    counted = count_kernel_launches(graph.replay, sync)
    events = sample(graph.replay, make_timer(device), SamplingConfig(max_time=1.0)).median
    wall = wall_per_call(graph.replay, sync, calls=max(10, int(0.5 / max(events, 1e-6))))
    check(
        "CUDA graph replay: kernels counted, time agrees with wall clock",
        counted.per_call == 10 and abs(events / wall - 1) <= 0.1,
        f"kernels/call {counted.per_call} ({counted.reason or 'ok'}), events "
        f"{events * 1e6:.1f} us, wall {wall * 1e6:.1f} us",
    )


FATAL = """
@perfgate.benchmark
def a_fine(device):
    a = torch.randn(256, 256, device=device)
    return lambda: a @ a

@perfgate.benchmark
def b_device_assert(device):
    values = torch.ones(4, device=device)
    index = torch.tensor([10], device=device)
    calls = []
    def call():
        calls.append(1)
        if len(calls) > 50:  # after warm-up began: mid-measurement
            values[index].sum().item()  # out of bounds: device-side assert
        return values * 2
    return call

@perfgate.benchmark
def c_after(device):
    a = torch.randn(256, 256, device=device)
    return lambda: a @ a
"""


def fatal_error_check(device: torch.device) -> None:
    # rounds=2 first: its workers fault, not this process; the in-process run (rounds=1) leaves
    # this process's CUDA context unusable, so it is the very last check.
    for rounds in (2, 1):
        entries = run_suite(FATAL, rounds=rounds, max_time=0.3)
        a, b, c = entries["a_fine"], entries["b_device_assert"], entries["c_after"]
        ok = a.error is None and b.error is not None and c.error is None
        check(
            f"device assert mid-round (rounds={rounds}): the rest run in a fresh process",
            ok,
            f"a_fine {a.error or 'ok'}; b {b.error}; c_after {c.error or 'ok'}",
        )


SECOND_GPU = """
@perfgate.benchmark
def on_device(device):
    a = torch.randn(1024, 1024, device=device)
    return lambda: a @ a
"""


def second_gpu_check(device: torch.device) -> None:
    if torch.cuda.device_count() < 2:
        print("SKIP  cuda:1: only one GPU here")
        return
    entries = run_suite(SECOND_GPU, device="cuda:1", max_time=0.3)
    entry, doc = entries["on_device"], entries["_doc"]
    peak = entry.metrics.get("peak_allocated_bytes")
    check(
        "cuda:1 measures on the second GPU",
        entry.error is None and entry.device == "cuda:1" and peak is not None and peak.value > 0,
        f"device {entry.device}, peak {peak.value if peak else None} B, env device "
        f"{doc.environment.device}, gpus {doc.environment.devices}",
    )


TF32 = """
@perfgate.benchmark
def a_turns_tf32_on(device):
    torch.backends.cuda.matmul.allow_tf32 = True
    a = torch.randn(4096, 4096, device=device)
    return lambda: a @ a

@perfgate.benchmark
def b_fp32_matmul(device):
    assert not torch.backends.cuda.matmul.allow_tf32, "TF32 leaked from the previous setup"
    a = torch.randn(4096, 4096, device=device)
    return lambda: a @ a
"""


def tf32_check(device: torch.device) -> None:
    entries = run_suite(TF32, max_time=0.5)
    a, b = entries["a_turns_tf32_on"], entries["b_fp32_matmul"]
    note = (a.metrics["time"].note or "") if "time" in a.metrics else ""
    timings = ""
    if not (a.error or b.error):
        tf32_ms, fp32_ms = median(a.metrics["time"]) * 1e3, median(b.metrics["time"]) * 1e3
        timings = f"tf32 {tf32_ms:.3f} ms, fp32 {fp32_ms:.3f} ms"
    check(
        "TF32 set by one setup does not leak into the next",
        a.error is None and b.error is None and "allow_tf32=True" in note,
        f"{timings}; b {b.error or 'ok'}; a's note {note!r}",
    )


COLD = """
@perfgate.benchmark
def l2_resident(device):
    x = torch.randn(4 * 1024 * 1024, device=device)  # 16 MiB: fits in L2 on recent GPUs
    return lambda: x.mul(2)
"""


def cold_cache_check(device: torch.device) -> None:
    hot = run_suite(COLD)["l2_resident"]
    cold = run_suite(COLD, cold_cache=True)["l2_resident"]
    hot_s, cold_s = median(hot.metrics["time"]), median(cold.metrics["time"])
    check(
        "cold-cache timing is slower than hot for an L2-resident call",
        cold.metrics["time"].method == "cuda_events_cold_l2" and cold_s > hot_s,
        f"hot {hot_s * 1e6:.1f} us, cold {cold_s * 1e6:.1f} us",
    )


def nvml_check(device: torch.device) -> None:
    try:
        import pynvml  # noqa: F401
    except ImportError:
        print("SKIP  NVML: nvidia-ml-py is not installed (pip install 'perfgate[nvml]')")
        return
    env = run_suite(SECOND_GPU.replace("on_device", "nvml_probe"), max_time=0.2)["_doc"].environment
    gpu = env.gpus[0]
    check(
        "NVML describes the measured GPU",
        gpu.get("power_limit_w") is not None,
        f"gpus {env.gpus}, uuid {env.gpu_uuid}",
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
    steps = (
        timing_checks,
        memory_check,
        kernel_checks,
        profile_check,
        launch_bound_check,
        side_stream_check,
        cuda_graph_check,
        second_gpu_check,
        tf32_check,
        cold_cache_check,
        nvml_check,
    )
    for step in steps:
        try:
            step(device)
        except Exception as exc:
            check(step.__name__, False, f"raised {type(exc).__name__}: {exc}")
    try:
        examples_check([args.examples])
    except Exception as exc:
        check("examples on CUDA", False, f"raised {type(exc).__name__}: {exc}")
    try:
        fatal_error_check(device)
    except Exception as exc:
        check("fatal_error_check", False, f"raised {type(exc).__name__}: {exc}")
    failed = [name for name, ok, _ in results if not ok]
    print(
        f"\n{len(results) - len(failed)}/{len(results)} checks passed"
        + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
