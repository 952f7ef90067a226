"""Exact allocation metrics of one call: bytes allocated and peak live bytes, by op on CPU.

On CPU the profiler's memory events (`profile_memory=True`) give every allocation and free of
torch's CPU allocator with its size and time; the bytes a call allocates and the peak of its live
bytes follow from them exactly, the same on every run of the same code path (docs/harness.md).
Each allocation is charged to the outermost op of the call running when it happened, so a
regression names the op that allocated (an extra `x.clone()` reads `aten::clone`). On CUDA the
caching allocator's own counters give the same two numbers.
"""

from __future__ import annotations

import gc
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from perfgate.allocation_note import OUTSIDE_OPS, format_allocation_note
from perfgate.harness.sampling import gc_paused

#: The harness marks each measured call with this range, so its memory events can be told apart.
CALL_MARK = "perfgate::call"
MEMORY_EVENT = "[memory]"


@dataclass(frozen=True)
class Allocations:
    """What one call allocated: `allocated` bytes in all, at most `peak` bytes live at once above
    what was live when it started, `by_op` the allocated bytes per outermost op (CPU only)."""

    allocated: int
    peak: int
    by_op: Counter[str]
    #: False when the profiled calls did not all allocate alike (the last one is reported).
    consistent: bool = True
    method: str = "cpu_profiler"

    def note(self) -> str | None:
        """The allocating ops, largest first, as the metric's note (`perfgate.allocation_note`),
        which the comparator reads back to name the ops behind a memory regression."""
        return format_allocation_note(self.by_op)


class Span(NamedTuple):
    """A profiled op or range: name, start and end (ns), thread (a tuple: thousands are made)."""

    name: str
    start: int
    end: int
    thread: int


def outermost(spans: Sequence[Span]) -> list[Span]:
    """The spans not inside another one (the ops the call itself made), in time order."""
    out: list[Span] = []
    for span in sorted(spans, key=lambda s: (s.start, -s.end)):
        if out and span.start < out[-1].end:
            continue
        out.append(span)
    return out


def call_allocations(
    memory: Sequence[tuple[int, int]], ops: Sequence[Span]
) -> tuple[int, int, Counter[str]]:
    """Allocated bytes, peak live bytes above the start, bytes by outermost op.

    `memory`: (time in ns, bytes) of the call's allocator events, frees negative, in any order.
    """
    top = outermost(ops)
    starts = [op.start for op in top]
    allocated = live = peak = 0
    by_op: Counter[str] = Counter()
    for time_ns, size in sorted(memory):
        live += size
        peak = max(peak, live)
        if size > 0:
            allocated += size
            # The last outermost op that started at or before the allocation, if still running.
            index = bisect_right(starts, time_ns) - 1
            inside = index >= 0 and time_ns <= top[index].end
            by_op[top[index].name if inside else OUTSIDE_OPS] += size
    return allocated, peak, by_op


def split_calls(events: Sequence[Any], device_type: str = "CPU") -> list[Allocations]:
    """One `Allocations` per `CALL_MARK` range among kineto events (`kineto_results.events()`).

    Every accessor is a call into the profiler's C++ objects and a model's call has thousands
    of ops, so an op's end and thread are read only when it could be an outermost op.
    """
    memory: list[tuple[int, int]] = []
    ops: list[tuple[int, str, Any]] = []
    for event in events:
        name = str(event.name())
        if name == MEMORY_EVENT:
            kind = event.device_type()
            if getattr(kind, "name", str(kind)) == device_type:
                memory.append((int(event.start_ns()), int(event.nbytes())))
        else:
            ops.append((int(event.start_ns()), name, event))
    # Stable: an op and the first op inside it starting in the same nanosecond keep their order
    # (the profiler lists the outer one first).
    ops.sort(key=lambda op: op[0])
    marks = [
        Span(name, start, start + int(e.duration_ns()), int(e.start_thread_id()))
        for start, name, e in ops
        if name == CALL_MARK
    ]
    results = []
    for mark in marks:
        top: list[Span] = []
        for start, name, event in ops:
            if start < mark.start or name == CALL_MARK or (top and start < top[-1].end):
                continue
            if start > mark.end:
                break
            if int(event.start_thread_id()) != mark.thread:
                continue
            end = start + int(event.duration_ns())
            if end <= mark.end:
                top.append(Span(name, start, end, mark.thread))
        inside = [(t, size) for t, size in memory if mark.start <= t <= mark.end]
        allocated, peak, by_op = call_allocations(inside, top)
        results.append(Allocations(allocated, peak, by_op))
    return results


def measure_cpu_allocations(fn: Callable[[], object], calls: int = 3) -> Allocations:
    """Allocations of the last of `calls` profiled calls.

    The first call frees what was allocated before the profiler started (the previous step's
    gradients, a cache the call replaces); the profiler cannot size such blocks and drops their
    frees, so that call reads high. The later calls free only what an earlier profiled call
    allocated; `consistent` tells whether they agreed (with `calls` >= 3).
    """
    from torch.autograd.profiler import profile, record_function

    from perfgate.harness.profiling import quiet_profiler_chatter

    gc.collect(1)
    # A collection inside a call would free memory at a point no code of the call chose.
    with gc_paused(), quiet_profiler_chatter(), profile(profile_memory=True) as prof:
        for _ in range(calls):
            with record_function(CALL_MARK):
                out = fn()
            # Freed outside the mark: the result was live at the call's end, as on CUDA.
            out = None  # noqa: F841
    per_call = split_calls(list(prof.kineto_results.events()))
    if len(per_call) != calls:
        raise RuntimeError(f"the profiler recorded {len(per_call)} of {calls} calls")
    last = per_call[-1]
    consistent = all(
        (c.allocated, c.peak, c.by_op) == (last.allocated, last.peak, last.by_op)
        for c in per_call[1:]
    )
    return Allocations(last.allocated, last.peak, last.by_op, consistent=consistent)


def profiled_calls(per_call_s: float) -> int:
    """Three calls (two to compare) for calls under 2 ms, else two (the second is reported, with
    nothing to compare it to): the pass costs a few calls, not a share of the budget."""
    return 3 if per_call_s < 0.002 else 2


def measure_cuda_allocations(fn: Callable[[], object], device: Any) -> Allocations:
    """The caching allocator's counters around one call: bytes it handed out, peak above the
    start (`max_memory_allocated` after a reset)."""
    import torch

    torch.cuda.synchronize(device)
    gc.collect(1)
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    handed_out = torch.cuda.memory_stats(device).get("allocated_bytes.all.allocated", 0)
    with gc_paused():
        out = fn()
        torch.cuda.synchronize(device)
    out = None  # noqa: F841
    peak = torch.cuda.max_memory_allocated(device) - before
    allocated = torch.cuda.memory_stats(device).get("allocated_bytes.all.allocated", 0)
    return Allocations(
        allocated=int(allocated - handed_out),
        peak=max(0, int(peak)),
        by_op=Counter(),
        method="cuda_allocator",
    )
