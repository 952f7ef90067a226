"""Timers that time a block of k calls: perf_counter_ns on CPU, CUDA event pairs on a GPU."""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import repeat
from typing import Any, Protocol

from perfgate.harness.devices import is_cuda


class Timer(Protocol):
    """Times `k` back-to-back calls of `fn` and returns the seconds the block took."""

    #: Blocks are sized to last at least this long, so timer resolution and the cost of starting
    #: and stopping the timer stay well under 1% of a sample.
    min_block_s: float

    def time_block(self, fn: Callable[[], object], k: int) -> float: ...


class CpuTimer:
    """Wall-clock time of the block with `time.perf_counter_ns` (monotonic, integer ns)."""

    def __init__(self, min_block_s: float = 1e-3) -> None:
        resolution = time.get_clock_info("perf_counter").resolution
        self.min_block_s = max(min_block_s, 1000 * resolution)

    def time_block(self, fn: Callable[[], object], k: int) -> float:
        # `repeat(None, k)` is the cheapest Python loop there is: the harness's own cost per call is
        # what bench/harness_overhead.py measures.
        start = time.perf_counter_ns()
        for _ in repeat(None, k):
            fn()
        return (time.perf_counter_ns() - start) / 1e9


class EventLike(Protocol):
    """The part of `torch.cuda.Event(enable_timing=True)` the CUDA timer uses."""

    def record(self) -> None: ...

    def synchronize(self) -> None: ...

    def elapsed_time(self, end_event: Any) -> float: ...


class CudaEventTimer:
    """Device time of the block between two CUDA events recorded on the current stream.

    The device is synchronized before the start event, so the block never includes work queued
    earlier, and the end event is waited on, so the block's kernels have all finished. Launch
    latency at the start of a block is amortized over `min_block_s` like any other fixed cost.
    """

    def __init__(
        self,
        *,
        event_factory: Callable[[], EventLike],
        synchronize: Callable[[], None],
        min_block_s: float = 1e-3,
    ) -> None:
        self.min_block_s = min_block_s
        self._synchronize = synchronize
        # One reusable pair: creating events per block would put allocator work in the loop.
        self._start = event_factory()
        self._end = event_factory()

    def time_block(self, fn: Callable[[], object], k: int) -> float:
        self._synchronize()
        self._start.record()
        for _ in repeat(None, k):
            fn()
        self._end.record()
        self._end.synchronize()
        return self._start.elapsed_time(self._end) / 1e3  # elapsed_time is in milliseconds


def make_timer(device: Any) -> Timer:
    """The timer for a torch.device: CUDA events on a GPU, perf_counter_ns otherwise."""
    if is_cuda(device):
        import torch

        cuda: Any = torch.cuda

        def event() -> EventLike:
            timing_event: EventLike = cuda.Event(enable_timing=True)
            return timing_event

        def synchronize() -> None:
            torch.cuda.synchronize(device)

        return CudaEventTimer(event_factory=event, synchronize=synchronize)
    return CpuTimer()


def make_synchronize(device: Any) -> Callable[[], None]:
    """A function that waits for all queued work on `device` (a no-op on CPU)."""
    if is_cuda(device):
        import torch

        return lambda: torch.cuda.synchronize(device)
    return lambda: None
