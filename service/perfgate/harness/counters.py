"""Exact per-call counters: flops, aten op count, CUDA kernel launches, torch.compile activity."""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from perfgate.harness.compile_clock import ClockReading, generated_kernels, read_clock
from perfgate.harness.profile_events import HARNESS_MARK, host_launches, kernel_names

# Op families that do real arithmetic; one of these without a FlopCounterMode formula means the
# flop count is missing work (CPU SDPA kernels are the common case).
_HEAVY_MARKERS = ("attention", "scaled_dot_product", "conv", "mm", "matmul", "linear")


@dataclass(frozen=True)
class OpCount:
    total: int
    by_op: Counter[str]


def count_flops(fn: Callable[[], object]) -> int:
    """Flops of one call as FlopCounterMode counts them (matmuls, convolutions, attention)."""
    from torch.utils.flop_counter import FlopCounterMode

    with FlopCounterMode(display=False) as mode:
        fn()
    return int(mode.get_total_flops())


def count_ops(fn: Callable[[], object]) -> OpCount:
    """aten ops that execute in one call, after autograd, composite ops decomposed.

    Whether a composite op (aten.linear, aten.scaled_dot_product_attention) reaches a dispatch
    mode whole depends on grad mode; decomposing it here, as FlopCounterMode does, counts the
    same ops under no_grad, inference_mode and autograd.
    """
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: Counter[str] = Counter()

    class _Counting(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            kwargs = kwargs or {}
            with self:
                decomposed = func.decompose(*args, **kwargs)
            if decomposed is not NotImplemented:
                return decomposed
            seen[str(func.overloadpacket)] += 1
            return func(*args, **kwargs)

    with _Counting():  # type: ignore[no-untyped-call]
        fn()
    return OpCount(total=sum(seen.values()), by_op=seen)


def uncounted_flop_ops(op_names: Iterable[str]) -> list[str]:
    """Arithmetic-heavy ops that ran but have no FlopCounterMode formula (sorted)."""
    from torch.utils.flop_counter import flop_registry

    known = {str(op) for op in flop_registry}
    return sorted(
        name
        for name in set(op_names)
        if name not in known and any(marker in name for marker in _HEAVY_MARKERS)
    )


def flops_note(missing: list[str]) -> str | None:
    if not missing:
        return None
    return (
        "no FlopCounterMode formula for "
        + ", ".join(missing)
        + "; their flops are not counted (CPU SDPA kernels count 0)"
    )


@dataclass(frozen=True)
class KernelCount:
    """Kernels per call from profiled calls; `per_call` is None when a count of 0 cannot be
    trusted (`reason` says why)."""

    per_call: int | None
    #: False when the total over the profiled calls was not a multiple of the calls.
    consistent: bool
    #: Kernels over all profiled calls, by name.
    names: Counter[str]
    calls: int
    reason: str | None = None

    def note(self) -> str:
        """The kernels per call by name, one a line (how rounds are compared)."""
        lines = [
            f"  {count / self.calls:g} x {name}"
            for name, count in sorted(self.names.items(), key=lambda item: (-item[1], item[0]))
        ]
        return "\n".join(["kernels per call:", *lines])

    def digest(self) -> str:
        """A short hash of the set of kernel names: equal when the same kernels were chosen."""
        text = "\n".join(sorted(self.names))
        return "kernels:" + hashlib.sha1(text.encode()).hexdigest()[:12]


def summarize_kernels(events: Sequence[Any], *, calls: int, device_ops: int) -> KernelCount:
    """Kernels per call from profiler events of `calls` calls.

    `record_function` annotations are mirrored on the device and are not kernels; memcpy and
    memset are not counted. A 0 is refused when the host launched kernels (the profiler saw the
    launch calls) or `device_ops` aten ops ran on device tensors: the profiler lost the device
    side (CUPTI not attached yet, or its buffers dropped), and a false 0 would gate a PR.
    """
    names = kernel_names(events)
    total = sum(names.values())
    if total == 0:
        launches = host_launches(events)
        if launches or device_ops:
            what = f"{launches} kernel launch calls" if launches else f"{device_ops} device ops"
            return KernelCount(
                None,
                True,
                names,
                calls,
                reason=f"the profiler recorded no kernels while {what} ran (events lost)",
            )
    return KernelCount(round(total / calls), total % calls == 0, names, calls)


def record_events(
    fn: Callable[[], object], synchronize: Callable[[], None], calls: int
) -> list[Any]:
    """Profiler events (host and CUDA) of `calls` calls; the harness's synchronize is marked."""
    from torch.profiler import ProfilerActivity, profile, record_function

    from perfgate.harness.profiling import quiet_profiler_chatter

    with (
        quiet_profiler_chatter(),
        profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof,
    ):
        for _ in range(calls):
            fn()
        with record_function(HARNESS_MARK):
            synchronize()
    return list(prof.events())


def count_device_ops(fn: Callable[[], object], device_type: str = "cuda") -> int:
    """aten ops of one call that touch a tensor on `device_type`, views left out (they launch
    nothing)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    seen = 0

    class _Watching(TorchDispatchMode):  # type: ignore[no-untyped-call]
        def __torch_dispatch__(
            self,
            func: Any,
            types: Any,
            args: tuple[Any, ...] = (),
            kwargs: dict[str, Any] | None = None,
        ) -> Any:
            nonlocal seen
            kwargs = kwargs or {}
            if not func.is_view and any(
                isinstance(x, torch.Tensor) and x.device.type == device_type
                for x in tree_leaves((args, kwargs))
            ):
                seen += 1
            return func(*args, **kwargs)

    with _Watching():  # type: ignore[no-untyped-call]
        fn()
    return seen


def count_kernel_launches(
    fn: Callable[[], object],
    synchronize: Callable[[], None],
    calls: int = 3,
    *,
    record: Callable[[Callable[[], object], Callable[[], None], int], list[Any]] = record_events,
    device_ops: Callable[[Callable[[], object]], int] = count_device_ops,
) -> KernelCount:
    """Kernels per call over `calls` profiled calls, after one warm-up profiling session.

    The first profiling session of a process attaches CUPTI and can miss the first kernels; its
    events are thrown away.
    """
    fn()
    synchronize()
    record(fn, synchronize, 1)
    events = record(fn, synchronize, calls)
    ops = 0
    if not kernel_names(events) and not host_launches(events):
        ops = device_ops(fn)
    return summarize_kernels(events, calls=calls, device_ops=ops)


@dataclass(frozen=True)
class CompileMetrics:
    #: User CPU seconds of the compile, its compiler subprocesses included (`compile_clock.py`).
    compile_time: float
    #: Wall seconds of the same compile: what a person waits, and what the machine's load moves.
    compile_wall_time: float
    compile_note: str | None
    graph_breaks: int
    recompiles: int
    #: Kernels inductor generated for the first compile; None when inductor generated none.
    compiled_kernels: int | None = None


class CompileWatch:
    """Watches torch._dynamo's counters across one instance to report its compile activity.

    A callable counts as compiled when dynamo converted at least one frame. Frames converted
    after the first call are recompiles (dynamo only converts on a cache miss). Graph breaks are
    those of the program as first compiled: a recompile passes the same breaks again and would
    count them twice. Dynamo is never imported here: a benchmark that does not compile does not
    pay for it.
    """

    def __init__(self) -> None:
        self.frames_at_start = 0
        self.breaks_at_start = 0
        self.frames_after_setup = 0
        self.frames_after_first_call = 0
        self.breaks_after_first_call = 0
        never = ClockReading(wall=0.0, cpu=0.0)
        self.clock_at_start = self.clock_after_setup = self.clock_after_first_call = never
        self.kernels_at_start: int | None = None
        self.kernels_after_first_call: int | None = None

    @staticmethod
    def _counters() -> Any:
        if "torch._dynamo" not in sys.modules:
            return None
        from torch._dynamo.utils import counters

        return counters

    def _frames(self, *, since_start: bool = True) -> int:
        counters = self._counters()
        total = 0 if counters is None else int(counters["frames"].get("total", 0))
        return total - self.frames_at_start if since_start else total

    def start(self, *, reset: bool = True) -> None:
        """Before setup: forget earlier instances' compiled code and counts.

        With `reset=False` (interleaved sampling, where earlier instances' compiled code must
        stay valid) only the counts so far are noted, and this instance's are counted from them.
        """
        if "torch._dynamo" in sys.modules:
            import torch._dynamo

            if reset:
                # Each instance compiles from scratch, so its compile_time and recompiles do not
                # depend on which instances ran before it.
                torch._dynamo.reset()
                torch._dynamo.utils.counters.clear()
        self.frames_at_start = self._frames(since_start=False)
        self.breaks_at_start = self._breaks(since_start=False)
        self.kernels_at_start = generated_kernels()
        self.clock_at_start = read_clock()

    def after_setup(self) -> None:
        self.clock_after_setup = read_clock()
        self.frames_after_setup = self._frames()

    def _breaks(self, *, since_start: bool = True) -> int:
        counters = self._counters()
        total = 0 if counters is None else int(sum(counters["graph_break"].values()))
        return total - self.breaks_at_start if since_start else total

    def after_first_call(self) -> None:
        self.clock_after_first_call = read_clock()
        self.frames_after_first_call = self._frames()
        self.breaks_after_first_call = self._breaks()
        self.kernels_after_first_call = generated_kernels()

    def _kernels(self) -> int | None:
        """Kernels generated from setup to the end of the first call (the first compile)."""
        after = self.kernels_after_first_call
        if after is None:
            return None
        count = after - (self.kernels_at_start or 0)
        return count if count > 0 else None

    def finish(
        self, *, setup_s: float, first_call_s: float, per_call_s: float
    ) -> CompileMetrics | None:
        """Compile metrics after timing, or None when nothing was compiled."""
        counters = self._counters()
        frames = self._frames()
        if counters is None or frames == 0:
            return None
        graph_breaks = self._breaks()
        if self.frames_after_first_call > 0:
            graph_breaks = self.breaks_after_first_call
        if self.frames_after_first_call > self.frames_after_setup:
            # The first call compiled and ran once: one call's cost comes off (its CPU seconds
            # are its wall seconds when it runs on one thread, and a call is milliseconds
            # against a compile's seconds).
            spent = self.clock_after_first_call.since(self.clock_after_setup)
            wall = max(0.0, first_call_s - per_call_s)
            cpu = max(0.0, spent.cpu - per_call_s)
            note = None
        else:
            spent = self.clock_after_setup.since(self.clock_at_start)
            wall, cpu = setup_s, spent.cpu
            note = "compiled inside setup: compile_time is the whole setup"
        return CompileMetrics(
            compile_time=cpu,
            compile_wall_time=wall,
            compile_note=note,
            graph_breaks=graph_breaks,
            recompiles=max(0, frames - self.frames_after_first_call),
            compiled_kernels=self._kernels(),
        )
