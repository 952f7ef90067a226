"""Warm-up until the per-call time is stable, then adaptive block sampling to a target precision."""

from __future__ import annotations

import bisect
import gc
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

from perfgate.harness.timing import Timer
from perfgate.stats.summary import median_ci

DEFAULT_MIN_SAMPLES = 20
DEFAULT_MAX_TIME = 1.0
DEFAULT_TARGET = 0.01
# Interleaved sampling: each instance's sampling budget is cut into this many slices, one a pass;
# it may stop early only after MIN_SLICES of them, so its samples span most of the round.
SLICES = 10
MIN_SLICES = 5
# ... and a slice is never shorter than this many blocks (fewer slices instead).
MIN_BLOCKS_PER_SLICE = 8
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
    #: What the timer reported besides each sample's time (CUDA: per-call host launch time,
    #: wait for other streams, ...), one value per sample, by name.
    details: dict[str, list[float]] = field(default_factory=dict)

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
    sampler = warm_up(fn, timer, config, after_first_call=after_first_call, clock=clock)
    while not sampler.done():
        sampler.take_block(on_progress)
    return sampler.result()


def warm_up(
    fn: Callable[[], object],
    timer: Timer,
    config: SamplingConfig,
    *,
    after_first_call: Callable[[], None] | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> Sampler:
    """The first call, the extra warm-up calls and the warm-up blocks; returns a Sampler whose
    blocks may then be taken all at once (`sample`) or in slices between other instances'."""
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
    return Sampler(
        fn=fn,
        timer=timer,
        config=config,
        clock=clock,
        k=k,
        first_call=first_call,
        warmup_blocks=warmup_blocks,
        stable=stable,
        settled=settled,
        start=start,
        budget=max(0.0, start + config.max_time - clock()),
    )


class Sampler:
    """Sampling of one warmed-up callable, a block at a time; the budget counts only the time
    spent in its own blocks, so other instances' blocks can run in between."""

    def __init__(
        self,
        *,
        fn: Callable[[], object],
        timer: Timer,
        config: SamplingConfig,
        clock: Callable[[], float],
        k: int,
        first_call: float,
        warmup_blocks: int,
        stable: bool,
        settled: float,
        start: float,
        budget: float,
    ) -> None:
        self.fn, self.timer, self.config, self.clock = fn, timer, config, clock
        self.k = k
        self.first_call, self.warmup_blocks, self.stable = first_call, warmup_blocks, stable
        #: Per-call time at the end of warm-up.
        self.settled = settled
        self.start = start
        #: Seconds of sampling left (what warm-up left of `max_time`).
        self.budget = budget
        self.spent = 0.0
        self.samples: list[float] = []
        self._ordered: list[float] = []
        self._last_check = 0
        self.ci_rel: float | None = None
        self.details: dict[str, list[float]] = {}

    def take_block(self, on_progress: Callable[[Progress], None] | None = None) -> None:
        config, timer = self.config, self.timer
        began = self.clock()
        with gc_paused():
            value = timer.time_block(self.fn, self.k) / self.k
        self.spent += self.clock() - began
        self.samples.append(value)
        for name, detail in (getattr(timer, "details", None) or {}).items():
            self.details.setdefault(name, []).append(detail)
        bisect.insort(self._ordered, value)
        n = len(self.samples)
        if self.k > 1 and value * self.k > _BLOCK_BLOWUP * timer.min_block_s:
            # Calls got far slower than when k was chosen (contention, throttling, a data-
            # dependent path): shrink the blocks so min_samples cannot outlast the budget.
            self.k = _resize(self.k, value, timer.min_block_s, config.max_calls_per_block)
        # Re-evaluating the CI costs O(n); past a few hundred samples every 1% of n is plenty.
        if n - self._last_check >= max(1, n // 100):
            self._last_check = n
            self.ci_rel = relative_ci(self._ordered)
            if on_progress is not None:
                on_progress(self.progress())

    def progress(self) -> Progress:
        """Where this sampler stands (at least one block taken)."""
        return Progress(
            samples=len(self._ordered),
            median=self._ordered[len(self._ordered) // 2],
            ci_rel=self.ci_rel,
            elapsed=self.clock() - self.start,
        )

    def take_slice(self, seconds: float) -> None:
        """Blocks for about `seconds` (at least one), within what is left of the budget."""
        until = self.spent + min(seconds, max(0.0, self.budget - self.spent))
        if self.settled * self.k <= seconds / 4:
            # Other instances ran since this one's last block and left their data in the caches:
            # one untimed block brings this one's back, where it costs under a quarter of a slice.
            began = self.clock()
            with gc_paused():
                self.timer.time_block(self.fn, self.k)
            self.spent += self.clock() - began
        while True:
            self.take_block()
            if self.spent >= until or len(self.samples) >= self.config.max_samples:
                return

    @property
    def has_min_samples(self) -> bool:
        return len(self.samples) >= self.config.min_samples

    @property
    def precise(self) -> bool:
        return self.ci_rel is not None and self.ci_rel <= self.config.target

    @property
    def out_of_budget(self) -> bool:
        return self.spent >= self.budget or len(self.samples) >= self.config.max_samples

    def done(self) -> bool:
        """Sequential stopping rule: min_samples in, and the CI target met or the budget spent."""
        if len(self.samples) >= self.config.max_samples:
            return True
        return self.has_min_samples and (self.precise or self.out_of_budget)

    def result(self) -> TimingResult:
        return TimingResult(
            samples=self.samples,
            calls_per_block=self.k,
            first_call=self.first_call,
            warmup_blocks=self.warmup_blocks,
            stable=self.stable,
            elapsed=self.clock() - self.start,
            details=self.details,
        )


def sample_interleaved(
    samplers: Sequence[Sampler],
    *,
    slices: int = SLICES,
    min_slices: int = MIN_SLICES,
    on_slice: Callable[[int], None] | None = None,
    before_slice: Callable[[int], None] | None = None,
) -> list[Exception | None]:
    """Take the samplers' blocks in slices, round-robin; returns each one's failure or None.

    Each pass gives every sampler 1/`slices` of its budget (fewer, longer slices when that would
    be under MIN_BLOCKS_PER_SLICE blocks; at least one block). A sampler may
    stop after `min_slices` passes once it has `min_samples` and meets the CI target, so its
    samples span most of the round; `min_samples` are never cut short (a block a pass after
    the last slice). A sampler that raises drops out with its exception. `on_slice(index)`
    follows each slice that completed (for progress); `before_slice(index)` precedes each
    (the instance's own backend flags are put in force there).
    """
    failures: list[Exception | None] = [None] * len(samplers)
    # A slice must hold several blocks: its first one follows other instances (cold caches) and
    # must stay a minority. A small budget therefore gets fewer, longer slices.
    own_slices = [
        max(1, min(slices, int(s.budget / (MIN_BLOCKS_PER_SLICE * s.settled * s.k))))
        if s.settled > 0
        else slices
        for s in samplers
    ]
    active = list(range(len(samplers)))
    passes = 0
    while active:
        passes += 1
        for index in list(active):
            sampler, count = samplers[index], own_slices[index]
            try:
                if before_slice is not None:
                    before_slice(index)
                if passes <= count:
                    sampler.take_slice(sampler.budget / count)
                else:
                    sampler.take_block()
            except Exception as exc:
                failures[index] = exc
                active.remove(index)
                continue
            if on_slice is not None:
                on_slice(index)
            if sampler.has_min_samples and (
                sampler.out_of_budget
                or passes >= count
                or (passes >= min(min_slices, count) and sampler.precise)
            ):
                active.remove(index)
    return failures


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
