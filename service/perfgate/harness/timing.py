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

    def query(self) -> bool: ...

    def synchronize(self) -> None: ...

    def elapsed_time(self, end_event: Any) -> float: ...


#: `time` on CUDA: "events" (the default) times a block from an idle device, so it is the slower
#: of launching and running; "queued" first queues a spin kernel that holds the device while
#: the block is launched, so the events time the device's work alone (nvbench's blocking kernel).
DEVICE_TIMINGS = ("events", "queued")
# The spin kernel must outlast launching the block: this much longer than the last block's
# host time, and never shorter than QUEUE_MIN_S.
_QUEUE_HEADROOM = 1.5
_QUEUE_MIN_S = 2e-3


class CudaEventTimer:
    """Device time of the block between two CUDA events recorded on the current stream.

    The device is synchronized before the start event, so the block never includes work queued
    earlier, and the end event is waited on, so the block's kernels have all finished. Launch
    latency at the start of a block is amortized over `min_block_s` like any other fixed cost.

    Per block, `details` holds per-call seconds of: `host`, the host's time to launch the block
    (start event to the last call's return); `other_streams`, how long a device-wide synchronize
    still waited after the end event completed (work the block left on other streams, which the
    events on this stream do not time). With `spin` (device timing "queued"), a spin kernel of
    the given seconds is queued before the start event; `unheld` is 1.0 when it ended before the
    block was launched (that block includes launch time).
    """

    def __init__(
        self,
        *,
        event_factory: Callable[[], EventLike],
        synchronize: Callable[[], None],
        min_block_s: float = 1e-3,
        clock: Callable[[], float] | None = None,
        spin: Callable[[float], None] | None = None,
    ) -> None:
        self.min_block_s = min_block_s
        self._synchronize = synchronize
        self._clock = clock or time.perf_counter
        self._spin = spin
        self._queue_s = _QUEUE_MIN_S
        # One reusable pair: creating events per block would put allocator work in the loop.
        self._start = event_factory()
        self._end = event_factory()
        self.details: dict[str, float] = {}

    @property
    def method(self) -> str:
        return "cuda_events_queued" if self._spin is not None else "cuda_events"

    def time_block(self, fn: Callable[[], object], k: int) -> float:
        self._synchronize()
        if self._spin is not None:
            self._spin(self._queue_s)
        began = self._clock()
        self._start.record()
        for _ in repeat(None, k):
            fn()
        self._end.record()
        host = self._clock() - began
        details = {"host": host / k}
        if self._spin is not None:
            # The start event still pending means the spin kernel held the device throughout.
            details["unheld"] = 0.0 if not self._start.query() else 1.0
            self._queue_s = max(_QUEUE_MIN_S, _QUEUE_HEADROOM * host)
        self._end.synchronize()
        waited_from = self._clock()
        self._synchronize()
        details["other_streams"] = (self._clock() - waited_from) / k
        self.details = details
        return self._start.elapsed_time(self._end) / 1e3  # elapsed_time is in milliseconds


class CudaColdCacheTimer:
    """Each call timed alone by its own event pair, after the L2 cache was flushed.

    Before every call a buffer larger than L2 is overwritten on the current stream (outside the
    pair), so each call starts with its inputs out of L2, as in a model where other layers ran
    in between. The block's time is the sum of its calls' pairs. `details` holds
    `other_streams` as in CudaEventTimer.
    """

    method = "cuda_events_cold_l2"

    def __init__(
        self,
        *,
        event_factory: Callable[[], EventLike],
        synchronize: Callable[[], None],
        flush: Callable[[], None],
        min_block_s: float = 1e-3,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.min_block_s = min_block_s
        self._event = event_factory
        self._synchronize = synchronize
        self._flush = flush
        self._clock = clock or time.perf_counter
        self._pairs: list[tuple[EventLike, EventLike]] = []
        self.details: dict[str, float] = {}

    def time_block(self, fn: Callable[[], object], k: int) -> float:
        while len(self._pairs) < k:
            self._pairs.append((self._event(), self._event()))
        pairs = self._pairs[:k]
        self._synchronize()
        for start, end in pairs:
            self._flush()
            start.record()
            fn()
            end.record()
        pairs[-1][1].synchronize()
        waited_from = self._clock()
        self._synchronize()
        self.details = {"other_streams": (self._clock() - waited_from) / k}
        return sum(start.elapsed_time(end) for start, end in pairs) / 1e3


#: Flush buffer when the device does not say how large its L2 is (larger than any L2 so far).
_FALLBACK_FLUSH_BYTES = 256 * 1024 * 1024


def make_timer(device: Any, *, device_timing: str = "events", cold_cache: bool = False) -> Timer:
    """The timer for a device: CUDA events on a GPU, perf_counter_ns otherwise."""
    if is_cuda(device):
        import torch

        cuda: Any = torch.cuda

        def event() -> EventLike:
            timing_event: EventLike = cuda.Event(enable_timing=True)
            return timing_event

        def synchronize() -> None:
            cuda.synchronize(device)

        if cold_cache:
            return CudaColdCacheTimer(
                event_factory=event, synchronize=synchronize, flush=make_l2_flush(device)
            )
        spin = make_spin(device) if device_timing == "queued" else None
        return CudaEventTimer(event_factory=event, synchronize=synchronize, spin=spin)
    return CpuTimer()


def make_l2_flush(device: Any) -> Callable[[], None]:
    """Overwrite twice the device's L2 size of memory: nothing the call used stays in L2."""
    import torch

    l2 = int(getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 0)
    size = 2 * l2 if l2 > 0 else _FALLBACK_FLUSH_BYTES
    buffer = torch.empty(size, dtype=torch.int8, device=device)

    def flush() -> None:
        buffer.zero_()

    return flush


def make_spin(device: Any) -> Callable[[float], None]:
    """Queue a kernel that keeps the device busy for about `seconds` (torch.cuda._sleep).

    `_sleep` counts clock cycles; cycles per second are measured once with events (the SM clock
    at that moment), which is all the spin needs: it only has to outlast the launches.
    """
    import torch

    cuda: Any = torch.cuda
    rate: list[float] = []

    def spin(seconds: float) -> None:
        if not rate:
            cycles = 10_000_000
            start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
            cuda.synchronize(device)
            start.record()
            cuda._sleep(cycles)
            end.record()
            end.synchronize()
            rate.append(cycles / max(start.elapsed_time(end) / 1e3, 1e-9))
        cuda._sleep(max(1, int(seconds * rate[0])))

    return spin


def make_synchronize(device: Any) -> Callable[[], None]:
    """A function that waits for all queued work on `device` (a no-op on CPU)."""
    if is_cuda(device):
        import torch

        return lambda: torch.cuda.synchronize(device)
    return lambda: None
