"""Exact per-call counters: flops, aten op count, CUDA kernel launches, torch.compile activity."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


def _device_type_name(row: Any) -> str:
    kind = getattr(row, "device_type", None)
    return str(getattr(kind, "name", kind))


def kernel_count(rows: Iterable[Any]) -> int:
    """Kernels among profiler rows: device-side events that are not memcpy/memset copies."""
    total = 0
    for row in rows:
        if _device_type_name(row) != "CUDA":
            continue
        name = str(getattr(row, "key", getattr(row, "name", "")))
        if name.startswith(("Memcpy", "Memset")):
            continue
        total += int(getattr(row, "count", 1))
    return total


def count_kernel_launches(
    fn: Callable[[], object], synchronize: Callable[[], None], calls: int = 3
) -> tuple[int, bool]:
    """Kernels per call over `calls` profiled calls; the flag is False when calls disagreed."""
    from torch.profiler import ProfilerActivity, profile

    from perfgate.harness.profiling import quiet_profiler_chatter

    fn()
    synchronize()
    with (
        quiet_profiler_chatter(),
        profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof,
    ):
        for _ in range(calls):
            fn()
        synchronize()
    total = kernel_count(prof.key_averages())
    return round(total / calls), total % calls == 0


@dataclass(frozen=True)
class CompileMetrics:
    compile_time: float
    compile_note: str | None
    graph_breaks: int
    recompiles: int


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

    def after_setup(self) -> None:
        self.frames_after_setup = self._frames()

    def _breaks(self, *, since_start: bool = True) -> int:
        counters = self._counters()
        total = 0 if counters is None else int(sum(counters["graph_break"].values()))
        return total - self.breaks_at_start if since_start else total

    def after_first_call(self) -> None:
        self.frames_after_first_call = self._frames()
        self.breaks_after_first_call = self._breaks()

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
            compile_time = max(0.0, first_call_s - per_call_s)
            note = None
        else:
            compile_time = setup_s
            note = "compiled inside setup: compile_time is the whole setup"
        return CompileMetrics(
            compile_time=compile_time,
            compile_note=note,
            graph_breaks=graph_breaks,
            recompiles=max(0, frames - self.frames_after_first_call),
        )
