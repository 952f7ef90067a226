"""The passes after timing: allocations, peak memory, exact counters, kernel launches, the
profile."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from perfgate.harness.allocations import (
    measure_cpu_allocations,
    measure_cuda_allocations,
    profiled_calls,
)
from perfgate.harness.compile_cache import COLD_METHOD, COLD_WALL_METHOD
from perfgate.harness.counters import (
    count_flops,
    count_kernel_launches,
    count_ops,
    flops_note,
    uncounted_flop_ops,
)
from perfgate.harness.devices import is_cuda
from perfgate.harness.discovery import one_line
from perfgate.harness.entries import (
    add_note,
    exact_metric,
    profile_of,
    sampled_metric,
    value_metric,
)
from perfgate.harness.memory import measure_peak_memory
from perfgate.harness.profiling import active_calls, profile_callable, trace_file_name
from perfgate.harness.timing import make_synchronize

if TYPE_CHECKING:
    from perfgate.harness.api import BenchmarkInstance
    from perfgate.harness.measure import InstanceResult, MeasureSettings


#: Wall time of a compile follows the machine's load: recorded, never deciding.
COMPILE_WALL_NOTE = (
    "informational: wall seconds of the cold compile, which follow the machine's load; "
    "compile_time (user CPU seconds of the same compile) is the compared figure"
)
#: Peak RSS is page-granular and moves with the allocator's state: recorded, never deciding.
RSS_NOTE = (
    "informational: growth of the process's peak RSS, page-granular and dependent on the "
    "allocator's state; allocated_bytes and peak_allocated_bytes are the exact figures"
)


def secondary_passes(
    *,
    fn: Callable[[], object],
    instance: BenchmarkInstance,
    device: Any,
    settings: MeasureSettings,
    per_call: float,
    result: InstanceResult,
    compiled: Any,
    passes: str = "all",
) -> None:
    """Memory, exact counters and the profile: each may fail alone without losing the timing.

    `passes`: "all"; "early" (all but those that attach the profiler); "profiler" (only those).
    """
    metrics = result.entry.metrics
    key = instance.key
    on_device = is_cuda(device)
    synchronize = make_synchronize(device)

    def attempt(what: str, action: Callable[[], None]) -> None:
        try:
            # Warnings raised here come from perfgate's instrumentation (FlopCounterMode's module
            # hooks warn on torch.compile'd modules); the benchmark's own showed during timing.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                action()
        except Exception as exc:
            result.warnings.append(f"{key}: {what} not measured: {one_line(exc)}")

    def allocations() -> None:
        if on_device:
            counted = measure_cuda_allocations(fn, device)
        else:
            counted = measure_cpu_allocations(fn, calls=profiled_calls(per_call))
        metrics["allocated_bytes"] = exact_metric("B", counted.allocated, counted.note())
        metrics["peak_allocated_bytes"] = exact_metric("B", counted.peak)
        for name in ("allocated_bytes", "peak_allocated_bytes"):
            metrics[name].method = counted.method
        if not counted.consistent:
            result.warnings.append(
                f"{key}: allocations differ between calls; the last call's are reported"
            )

    def memory() -> None:
        peak = measure_peak_memory(fn, device)
        if peak.value is None:
            result.warnings.append(f"{key}: peak_memory not measured: {peak.reason}")
            return
        # On CUDA the allocator's peak is peak_allocated_bytes already; only the reserved
        # growth is new here.
        if peak.method != "cuda_allocator":
            metrics["peak_memory"] = value_metric(
                "B", peak.value, method=peak.method, note=RSS_NOTE
            )
        if peak.reserved is not None:
            metrics["peak_memory_reserved"] = value_metric(
                "B",
                peak.reserved,
                method="cuda_reserved",
                note="informational: the caching allocator's reserved memory grows in "
                "blocks; peak_allocated_bytes is the exact figure",
            )

    op_names: list[str] = []

    def ops() -> None:
        counted = count_ops(fn)
        op_names.extend(counted.by_op)
        metrics["op_count"] = exact_metric("op", counted.total)

    def flops() -> None:
        total = count_flops(fn)
        metrics["flops"] = exact_metric("flop", total, flops_note(uncounted_flop_ops(op_names)))

    def kernels() -> None:
        counted = count_kernel_launches(fn, synchronize)
        if counted.per_call is None:
            result.warnings.append(f"{key}: kernel_launches not measured: {counted.reason}")
            return
        metrics["kernel_launches"] = exact_metric("kernel", counted.per_call, counted.note())
        # Rounds and runs that chose other kernels (autotuning, cudnn.benchmark) differ here.
        metrics["kernel_launches"].method = counted.digest()
        if not counted.consistent:
            result.warnings.append(f"{key}: kernel launches differ between calls; rounded")

    def profile() -> None:
        trace = None
        if settings.trace_dir is not None:
            trace = settings.trace_dir / trace_file_name(key)
        profiled = profile_callable(
            fn,
            on_device=on_device,
            synchronize=synchronize,
            active=active_calls(per_call),
            trace_path=trace,
        )
        result.entry.profile = profile_of(profiled.ops, profiled.trace)

    if passes == "profiler":
        if on_device:
            attempt("kernel_launches", kernels)
        if settings.profile:
            attempt("profile", profile)
        return
    if compiled is not None:
        # One sample per measuring process, each a cold compile (harness/compile_cache.py):
        # rounds give the comparator several, as for time. CPU seconds, not wall seconds: on a
        # shared machine the wall time of a compile is mostly waiting for a core.
        metrics["compile_time"] = sampled_metric(
            "s", [compiled.compile_time], method=COLD_METHOD, note=compiled.compile_note or None
        )
        metrics["compile_wall_time"] = value_metric(
            "s", compiled.compile_wall_time, method=COLD_WALL_METHOD, note=COMPILE_WALL_NOTE
        )
        if compiled.compile_note:
            add_note(metrics["compile_wall_time"], compiled.compile_note)
        metrics["graph_breaks"] = exact_metric("break", compiled.graph_breaks)
        metrics["recompiles"] = exact_metric("recompile", compiled.recompiles)
        if compiled.compiled_kernels is not None:
            metrics["compiled_kernels"] = exact_metric("kernel", compiled.compiled_kernels)
    attempt("allocated_bytes", allocations)
    attempt("peak_memory", memory)
    attempt("op_count", ops)
    attempt("flops", flops)
    if passes == "early":
        return
    if on_device:
        attempt("kernel_launches", kernels)
    if settings.profile:
        attempt("profile", profile)
