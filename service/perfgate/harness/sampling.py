"""Warm-up until the per-call time is stable, then adaptive block sampling to a target precision."""

from __future__ import annotations

import bisect
import gc
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from perfgate.harness.timing import Timer
from perfgate.stats.summary import median_ci

DEFAULT_MIN_SAMPLES = 20
DEFAULT_MAX_TIME = 1.0
DEFAULT_TARGET = 0.01
# A block this many times longer than the minimum means k no longer fits the per-call time.
_BLOCK_BLOWUP = 50


@dataclass(frozen=True)
class SamplingConfig:
    """How long and how precisely to time one instance."""

    min_samples: int = DEFAULT_MIN_SAMPLES
    #: Budget in seconds for warm-up plus sampling; the first call and `min_samples` are never cut.
    max_time: float = DEFAULT_MAX_TIME
    #: Stop once the 95% CI half-width of the median is under this fraction of the median.
    target: float = DEFAULT_TARGET
    #: Calls made before anything is measured (besides the always-separate first call).
    warmup_calls: int = 0
    #: Share of `max_time` warm-up may use before sampling starts, stable or not.
    warmup_share: float = 0.3
    #: Share of `max_time` warm-up always uses: a slow phase (cold caches, clocks ramping up)
    #: can look stable over a few blocks and must not be sampled as the steady state.
    min_warmup_share: float = 0.1
    #: Warm-up ends when the last `stable_window` blocks agree within this relative spread.
    stable_tolerance: float = 0.05
    stable_window: int = 3
    max_samples: int = 100_000
    max_calls_per_block: int = 10_000_000


@dataclass(frozen=True)
class Progress:
    """Where sampling stands after a block: what a reporter shows."""

    samples: int
    median: float
    ci_rel: float | None
    elapsed: float


@dataclass(frozen=True)
class TimingResult:
    """Per-call samples (one per block) and how they were obtained."""

    samples: list[float]
    calls_per_block: int
    first_call: float
    warmup_blocks: int
    stable: bool
    elapsed: float

    @property
    def median(self) -> float:
        ordered = sorted(self.samples)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


@contextmanager
def gc_paused() -> Iterator[None]:
    """No garbage collection inside a block: a collection would land in one random sample."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def relative_ci(ordered: list[float]) -> float | None:
    """Half-width of the median's 95% CI over the median, from sorted samples (None: too few)."""
    n = len(ordered)
    if n < 6:
        return None
    lo, hi = median_ci(ordered, presorted=True)
    mid = n // 2
    median = ordered[mid] if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    if median <= 0:
        return None
    return (hi - lo) / 2 / median


def sample(
    fn: Callable[[], object],
    timer: Timer,
    config: SamplingConfig,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    after_first_call: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> TimingResult:
    """Time `fn` in blocks of k calls until the median is known to `config.target`.

    The first call is timed on its own (it often compiles or allocates); the optional extra
    warm-up calls follow; then k is chosen so a block lasts at least `timer.min_block_s`; blocks
    run until per-call time is stable and `min_warmup_share` of the budget has passed (at most
    `warmup_share` of it); then blocks are sampled until `min_samples` are in and the CI target
    is met or `max_time` (warm-up included) is spent.
    """
    with gc_paused():
        first_call = timer.time_block(fn, 1)
    if after_first_call is not None:
        after_first_call()
    for _ in range(config.warmup_calls):
        fn()
    # Young garbage only: a full collection costs ~0.1 s with torch loaded, and blocks run with
    # gc paused anyway.
    gc.collect(1)
    start = clock()
    warmup_deadline = start + config.max_time * config.warmup_share
    warmup_minimum = start + config.max_time * config.min_warmup_share
    k, per_call = _calls_per_block(fn, timer, config, warmup_deadline, clock)

    # Warm-up: caches, allocator pools, clock boost and lazy init settle in the first blocks.
    recent = [per_call]
    warmup_blocks = 0
    stable = False
    while True:
        if len(recent) >= config.stable_window:
            window = sorted(recent[-config.stable_window :])
            stable = window[-1] - window[0] <= config.stable_tolerance * window[len(window) // 2]
        now = clock()
        if (stable and now >= warmup_minimum) or now >= warmup_deadline:
            break
        with gc_paused():
            recent.append(timer.time_block(fn, k) / k)
        warmup_blocks += 1
    # The settled per-call time may be far from the first estimate: size the blocks again.
    settled = sorted(recent[-config.stable_window :])[len(recent[-config.stable_window :]) // 2]
    k = _resize(k, settled, timer.min_block_s, config.max_calls_per_block)

    samples: list[float] = []
    ordered: list[float] = []
    deadline = start + config.max_time
    last_check = 0
    ci_rel: float | None = None
    while len(samples) < config.max_samples:
        with gc_paused():
            value = timer.time_block(fn, k) / k
        samples.append(value)
        bisect.insort(ordered, value)
        n = len(samples)
        now = clock()
        if k > 1 and value * k > _BLOCK_BLOWUP * timer.min_block_s:
            # Calls got far slower than when k was chosen (contention, throttling, a data-
            # dependent path): shrink the blocks so min_samples cannot outlast the budget.
            k = _resize(k, value, timer.min_block_s, config.max_calls_per_block)
        # Re-evaluating the CI costs O(n); past a few hundred samples every 1% of n is plenty.
        if n - last_check >= max(1, n // 100):
            last_check = n
            ci_rel = relative_ci(ordered)
            if on_progress is not None:
                on_progress(
                    Progress(samples=n, median=ordered[n // 2], ci_rel=ci_rel, elapsed=now - start)
                )
        if n < config.min_samples:
            continue
        if (ci_rel is not None and ci_rel <= config.target) or now >= deadline:
            break
    return TimingResult(
        samples=samples,
        calls_per_block=k,
        first_call=first_call,
        warmup_blocks=warmup_blocks,
        stable=stable,
        elapsed=clock() - start,
    )


def _calls_per_block(
    fn: Callable[[], object],
    timer: Timer,
    config: SamplingConfig,
    deadline: float,
    clock: Callable[[], float],
) -> tuple[int, float]:
    """Grow k until one block lasts `timer.min_block_s`; returns k and the last per-call time."""
    k = 1
    while True:
        with gc_paused():
            block = timer.time_block(fn, k)
        per_call = block / k
        if block >= timer.min_block_s or k >= config.max_calls_per_block:
            return k, per_call
        grown = _resize(k, per_call, timer.min_block_s, config.max_calls_per_block)
        # Never more than 10x per step: the first calls can be much slower than the rest.
        k = max(k + 1, min(grown, 10 * k))
        if clock() >= deadline and block > 0:
            return _resize(k, per_call, timer.min_block_s, config.max_calls_per_block), per_call


def _resize(k: int, per_call: float, min_block_s: float, limit: int) -> int:
    if per_call <= 0:
        return min(limit, k * 10)
    # 20% headroom so block times jittering down do not fall under the minimum.
    return max(1, min(limit, math.ceil(1.2 * min_block_s / per_call)))
