"""Measure one benchmark instance: setup, timing, throughput, memory, exact counters, profile."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from perfgate.harness.api import BenchmarkInstance
from perfgate.harness.backend_flags import (
    BackendFlags,
    describe_changes,
    read_backend_flags,
    restore_backend_flags,
)
from perfgate.harness.compile_cache import PrivateCompileCache
from perfgate.harness.counters import (
    CompileMetrics,
    CompileWatch,
)
from perfgate.harness.device_errors import DeviceContextLostError, context_lost
from perfgate.harness.devices import is_cuda
from perfgate.harness.discovery import one_line
from perfgate.harness.entries import add_note, new_entry, sampled_metric
from perfgate.harness.gpu_state import MonitoredTimer, open_device
from perfgate.harness.passes import secondary_passes
from perfgate.harness.progress import InstanceProgress, RunReporter
from perfgate.harness.sampling import (
    Progress,
    Sampler,
    SamplingConfig,
    sample_interleaved,
    warm_up,
)
from perfgate.harness.timing import make_timer
from perfgate.harness.timing_findings import timing_findings
from perfgate.results import Benchmark

# Progress updates faster than this only cost time inside the instance's budget.
_PROGRESS_INTERVAL_S = 0.1


@dataclass(frozen=True)
class MeasureSettings:
    """Run-wide options for every instance."""

    #: Per-instance budget from the command line; wins over the decorator's `max_time`.
    max_time: float | None = None
    profile: bool = True
    trace_dir: Path | None = None
    #: Take samples in slices round-robin across instances (`measure_interleaved`).
    interleave: bool = False
    #: CUDA: "events" (time from an idle device: launching and running) or "queued" (the
    #: device's work alone, the block queued behind a spin kernel); see `timing.DEVICE_TIMINGS`.
    device_timing: str = "events"
    #: Leave the passes that attach the profiler (kernel_launches, profile) to
    #: `run_profiler_passes`, after every instance of the round was timed (sequential CUDA).
    defer_profiler: bool = False
    #: CUDA: flush L2 before each call and time each call alone (default: hot cache).
    cold_cache: bool = False


@dataclass
class InstanceResult:
    """A results-document benchmark entry plus warnings for the person running it."""

    entry: Benchmark
    warnings: list[str] = field(default_factory=list)
    #: Set when the instance's error left the CUDA context unusable (why).
    device_lost: str | None = None

    @property
    def error(self) -> str | None:
        return self.entry.error


def sampling_config(instance: BenchmarkInstance, settings: MeasureSettings) -> SamplingConfig:
    spec = instance.spec
    defaults = SamplingConfig()
    return SamplingConfig(
        min_samples=spec.min_samples or defaults.min_samples,
        max_time=settings.max_time or spec.max_time or defaults.max_time,
        warmup_calls=spec.warmup or 0,
    )


class _Throttled:
    def __init__(self, reporter: RunReporter, key: str, round_index: int) -> None:
        self._reporter, self._key, self._round = reporter, key, round_index
        self._last = 0.0

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        if now - self._last < _PROGRESS_INTERVAL_S:
            return
        self._last = now
        self._reporter.instance_progress(
            InstanceProgress(
                key=self._key,
                round_index=self._round,
                samples=progress.samples,
                median=progress.median,
                ci_rel=progress.ci_rel,
                elapsed=progress.elapsed,
            )
        )


def _refuse_instrumented_timing() -> None:
    import torch
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    # Timing under a dispatch mode or the profiler measures the instrumentation, not the code.
    if _get_current_dispatch_mode() is not None:
        raise RuntimeError("a TorchDispatchMode is active (left on by setup?); timing refused")
    if torch._C._autograd._profiler_enabled():
        raise RuntimeError("the torch profiler is active (left on by setup?); timing refused")


@dataclass
class _Started:
    """An instance set up and warmed up, its sampling still to come."""

    instance: BenchmarkInstance
    result: InstanceResult
    fn: Callable[[], object]
    sampler: Sampler
    watch: CompileWatch
    setup_s: float
    items: float | None
    #: torch backend switches before setup (put back after the instance) and as setup left them
    #: (in force whenever this instance runs).
    flags_before: BackendFlags
    flags: BackendFlags
    compiled: CompileMetrics | None = None

    def own_flags(self) -> None:
        """Switch to the backend flags this instance's setup chose (interleaved slices)."""
        restore_backend_flags(self.flags)

    def drop_setup(self) -> None:
        """Let go of the callable (and what its closure holds) so memory can be released."""
        self.fn = self.sampler.fn = _released


def _start(
    instance: BenchmarkInstance,
    *,
    device: Any,
    settings: MeasureSettings,
    reporter: RunReporter,
    round_index: int,
    interleaved: bool,
    compile_cache: PrivateCompileCache,
) -> _Started | InstanceResult:
    """Setup, first call and warm-up; an InstanceResult (an error entry) if any of them fails."""
    import torch

    spec = instance.spec
    result = InstanceResult(
        new_entry(spec.name, instance.key, instance.params, str(device), spec.tags)
    )
    reporter.instance_started(instance.key, round_index=round_index)
    # Whatever this instance compiles, it compiles cold: compile_time does not depend on what
    # ran before it in this process or on this machine.
    compile_cache.fresh()
    watch = CompileWatch()
    # Interleaved instances keep their compiled code until the last slice: no dynamo reset.
    watch.start(reset=not interleaved)
    # The same inputs in every round and every run: data-dependent kernels time alike.
    torch.manual_seed(0)
    fn: Callable[[], object] | None = None
    flags_before = read_backend_flags()
    try:
        setup_start = time.perf_counter()
        fn = instance.call_setup(device)
        setup_s = time.perf_counter() - setup_start
        if not callable(fn):
            raise TypeError(f"setup returned {type(fn).__name__}, not a zero-argument callable")
        flags = read_backend_flags()
        watch.after_setup()
        _refuse_instrumented_timing()
        timer = make_timer(
            device, device_timing=settings.device_timing, cold_cache=settings.cold_cache
        )
        gpu = open_device(device) if is_cuda(device) else None
        if gpu is not None:
            timer = MonitoredTimer(timer, gpu)
        sampler = warm_up(
            fn,
            timer,
            sampling_config(instance, settings),
            after_first_call=watch.after_first_call,
        )
        items = instance.item_count()
    except Exception as exc:
        fn = None  # before _release, so what the setup allocated can go
        return _failed(
            result,
            exc,
            device=device,
            reporter=reporter,
            round_index=round_index,
            flags_before=flags_before,
        )
    started = _Started(
        instance, result, fn, sampler, watch, setup_s, items, flags_before=flags_before, flags=flags
    )
    if interleaved:
        # The next instance's compiles would count as this one's: settle its counts now.
        started.compiled = watch.finish(
            setup_s=setup_s, first_call_s=sampler.first_call, per_call_s=sampler.settled
        )
        # The next setup starts from the run's switches, not from this one's.
        restore_backend_flags(flags_before)
    return started


def _failed(
    result: InstanceResult,
    exc: Exception,
    *,
    device: Any,
    reporter: RunReporter,
    round_index: int,
    flags_before: BackendFlags,
) -> InstanceResult:
    result.entry.error = error = one_line(exc)
    reporter.instance_error(result.entry.key, error, round_index=round_index)
    result.device_lost = context_lost(device, exc)
    if result.device_lost is None:
        _release(device, flags_before, result)
    return result


def _finish(
    started: _Started,
    *,
    device: Any,
    settings: MeasureSettings,
    reporter: RunReporter,
    round_index: int,
) -> InstanceResult:
    """Metrics from the samples, the secondary passes, the progress line; releases the setup."""
    timing = started.sampler.result()
    result, spec = started.result, started.instance.spec
    metrics = result.entry.metrics
    per_call = timing.median
    method = getattr(started.sampler.timer, "method", None)
    metrics["time"] = sampled_metric("s", timing.samples, method=method or None)
    findings = timing_findings(timing.samples, timing.details, key=started.instance.key)
    metrics.update(findings.metrics)
    for note in findings.notes:
        add_note(metrics["time"], note)
    result.warnings.extend(findings.warnings)
    changed = describe_changes(started.flags_before, started.flags)
    if changed:
        # Which kernels and precision the instance ran with, where its setup chose them.
        add_note(metrics["time"], f"backend flags set by setup: {changed}")
    # Interleaved: another instance's flags may be in force; the passes run under this one's.
    started.own_flags()
    if started.items is not None:
        metrics["throughput"] = sampled_metric(
            f"{spec.unit}/s",
            [started.items / s for s in timing.samples if s > 0],
            direction="higher",
        )
    compiled = started.compiled or started.watch.finish(
        setup_s=started.setup_s, first_call_s=timing.first_call, per_call_s=per_call
    )
    secondary_passes(
        fn=started.fn,
        instance=started.instance,
        device=device,
        settings=settings,
        per_call=per_call,
        result=result,
        compiled=compiled,
        passes="early" if settings.defer_profiler else "all",
    )
    reporter.instance_finished(
        InstanceProgress(
            key=started.instance.key,
            round_index=round_index,
            samples=len(timing.samples),
            median=per_call,
            ci_rel=_ci_rel(timing.samples),
            elapsed=timing.elapsed,
        )
    )
    started.drop_setup()
    _release(device, started.flags_before, result)
    return result


def measure_instance(
    instance: BenchmarkInstance,
    *,
    device: Any,
    settings: MeasureSettings,
    reporter: RunReporter,
    round_index: int = 1,
    compile_cache: PrivateCompileCache | None = None,
) -> InstanceResult:
    """Everything measured for one instance (docs/architecture.md §3), in order; failures become
    an error entry. Without `compile_cache`, one is made for this instance and removed after."""
    if compile_cache is None:
        own = PrivateCompileCache()
        try:
            return measure_instance(
                instance,
                device=device,
                settings=settings,
                reporter=reporter,
                round_index=round_index,
                compile_cache=own,
            )
        finally:
            own.close()
    started = _start(
        instance,
        device=device,
        settings=settings,
        reporter=reporter,
        round_index=round_index,
        interleaved=False,
        compile_cache=compile_cache,
    )
    if isinstance(started, InstanceResult):
        return started
    progress = _Throttled(reporter, instance.key, round_index)
    try:
        while not started.sampler.done():
            started.sampler.take_block(progress)
    except Exception as exc:
        started.drop_setup()
        return _failed(
            started.result,
            exc,
            device=device,
            reporter=reporter,
            round_index=round_index,
            flags_before=started.flags_before,
        )
    return _finish(
        started, device=device, settings=settings, reporter=reporter, round_index=round_index
    )


def measure_interleaved(
    instances: list[BenchmarkInstance],
    *,
    device: Any,
    settings: MeasureSettings,
    reporter: RunReporter,
    round_index: int = 1,
    compile_cache: PrivateCompileCache,
) -> Iterator[tuple[BenchmarkInstance, InstanceResult]]:
    """Measure instances with their samples taken in slices, round-robin across all of them.

    A burst of load on a shared runner (a neighbour on the same core, lasting a second or so)
    then spoils a slice of every instance instead of all samples of the one being timed, and the
    median of the slices holds. Every instance is set up and warmed up first (so all setups are
    alive at once); then `sample_interleaved` takes their samples in slices. Results come in
    instance order (setup failures first), each after its secondary passes.
    """
    started: list[_Started] = []
    for instance in instances:
        outcome = _start(
            instance,
            device=device,
            settings=settings,
            reporter=reporter,
            round_index=round_index,
            interleaved=True,
            compile_cache=compile_cache,
        )
        if isinstance(outcome, InstanceResult):
            yield instance, outcome
        else:
            started.append(outcome)
    progress = {
        index: _Throttled(reporter, one.instance.key, round_index)
        for index, one in enumerate(started)
    }

    def report_slice(index: int) -> None:
        progress[index](started[index].sampler.progress())

    def before_slice(index: int) -> None:
        started[index].own_flags()

    failures = sample_interleaved(
        [one.sampler for one in started], on_slice=report_slice, before_slice=before_slice
    )
    for one, failure in zip(started, failures, strict=True):
        if failure is not None:
            one.drop_setup()
            yield (
                one.instance,
                _failed(
                    one.result,
                    failure,
                    device=device,
                    reporter=reporter,
                    round_index=round_index,
                    flags_before=one.flags_before,
                ),
            )
            continue
        yield (
            one.instance,
            _finish(
                one, device=device, settings=settings, reporter=reporter, round_index=round_index
            ),
        )


def _released() -> None:
    """Stands in for a finished instance's callable, so its setup can be freed."""


def _ci_rel(samples: list[float]) -> float | None:
    from perfgate.harness.sampling import relative_ci

    return relative_ci(sorted(samples))


def run_profiler_passes(
    instance: BenchmarkInstance, result: InstanceResult, *, device: Any, settings: MeasureSettings
) -> None:
    """kernel_launches and the profile of an instance timed earlier, from a fresh setup.

    A profiling session leaves CUPTI attached to the process, which can slow every kernel
    launch after it; so on CUDA these passes run once all instances of the round are timed.
    The setup is made again (same seed, the run's backend flags) rather than kept alive, so
    device memory holds one instance at a time, as during timing.
    """
    import torch

    if result.error is not None:
        return
    CompileWatch().start(reset=True)
    torch.manual_seed(0)
    flags_before = read_backend_flags()
    fn: Callable[[], object] | None = None
    try:
        fn = instance.call_setup(device)
        fn()  # compiles and allocates, as the first call did before timing
        samples = result.entry.metrics["time"].samples or []
        per_call = sorted(samples)[len(samples) // 2]
        secondary_passes(
            fn=fn,
            instance=instance,
            device=device,
            settings=settings,
            per_call=per_call,
            result=result,
            compiled=None,
            passes="profiler",
        )
    except Exception as exc:
        result.warnings.append(
            f"{instance.key}: kernel_launches and profile not measured: setting it up again "
            f"failed: {one_line(exc)}"
        )
    finally:
        fn = None
        _release(device, flags_before, result)


def _release(device: Any, flags_before: BackendFlags, result: InstanceResult) -> None:
    gc.collect()
    try:
        # A setup's TF32 or cudnn.benchmark must not change the instances after it.
        restore_backend_flags(flags_before)
    except RuntimeError as exc:
        result.warnings.append(f"{result.entry.key}: {exc}")
    if is_cuda(device):
        import torch

        # Every instance starts from the same allocator state, whatever ran before it.
        torch.cuda.empty_cache()


def run_instances(
    instances: list[BenchmarkInstance],
    *,
    device: Any,
    settings: MeasureSettings,
    reporter: RunReporter,
    round_index: int = 1,
    on_result: Callable[[BenchmarkInstance, InstanceResult], None] | None = None,
) -> dict[str, InstanceResult]:
    """Measure instances in this process, interleaved or one after another (settings); warnings
    go to the reporter. Raises DeviceContextLostError after the instance whose error left the CUDA
    context unusable (its result was passed to `on_result`; later ones were not measured)."""
    compile_cache = PrivateCompileCache()
    try:
        return _run_instances(
            instances,
            device=device,
            settings=settings,
            reporter=reporter,
            round_index=round_index,
            on_result=on_result,
            compile_cache=compile_cache,
        )
    finally:
        compile_cache.close()


def _run_instances(
    instances: list[BenchmarkInstance],
    *,
    device: Any,
    settings: MeasureSettings,
    reporter: RunReporter,
    round_index: int,
    on_result: Callable[[BenchmarkInstance, InstanceResult], None] | None,
    compile_cache: PrivateCompileCache,
) -> dict[str, InstanceResult]:
    results: dict[str, InstanceResult] = {}
    # Sequential CUDA rounds time every instance before any profiler attaches (see
    # run_profiler_passes); interleaved rounds already sample everything first.
    deferred = is_cuda(device) and not settings.interleave
    if deferred:
        settings = replace(settings, defer_profiler=True)
    if settings.interleave:
        measured: Iterable[tuple[BenchmarkInstance, InstanceResult]] = measure_interleaved(
            instances,
            device=device,
            settings=settings,
            reporter=reporter,
            round_index=round_index,
            compile_cache=compile_cache,
        )
    else:
        measured = (
            (
                instance,
                measure_instance(
                    instance,
                    device=device,
                    settings=settings,
                    reporter=reporter,
                    round_index=round_index,
                    compile_cache=compile_cache,
                ),
            )
            for instance in instances
        )

    def deliver(instance: BenchmarkInstance, result: InstanceResult) -> None:
        for warning in result.warnings:
            reporter.warning(warning)
        results[instance.key] = result
        if on_result is not None:
            on_result(instance, result)

    timed: list[tuple[BenchmarkInstance, InstanceResult]] = []
    for instance, result in measured:
        if not deferred:
            deliver(instance, result)
        else:
            timed.append((instance, result))
        if result.device_lost is not None:
            for earlier, earlier_result in timed:
                if earlier_result is not result and earlier_result.error is None:
                    earlier_result.warnings.append(
                        f"{earlier.key}: kernel_launches and profile not measured: the CUDA "
                        f"context was lost by {instance.key} before their pass"
                    )
                deliver(earlier, earlier_result)
            # Every later instance in this process would fail too: the caller continues in a
            # fresh process.
            raise DeviceContextLostError(instance.key, result.device_lost, done=dict(results))
    for instance, result in timed:
        run_profiler_passes(instance, result, device=device, settings=settings)
        deliver(instance, result)
    return results


def prepare_torch(device_name: str, threads: int | None) -> Any:
    """Set threads and the current CUDA device; returns the torch.device to measure on."""
    import torch

    if threads is not None:
        torch.set_num_threads(threads)
    device = torch.device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device
