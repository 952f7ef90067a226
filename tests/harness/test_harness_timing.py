"""Timers and adaptive sampling, driven by fake clocks and fake CUDA events where possible."""

from __future__ import annotations

import math
import random
from typing import ClassVar

import pytest

pytest.importorskip("torch")

from perfgate.harness.sampling import (
    MIN_SLICES,
    SLICES,
    SamplingConfig,
    relative_ci,
    sample,
    sample_interleaved,
    warm_up,
)
from perfgate.harness.timing import CpuTimer, CudaEventTimer
from perfgate.stats.summary import median_ci


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class FakeTimer:
    """A timer whose calls cost `per_call(i)` seconds of fake time each."""

    min_block_s = 1e-3

    def __init__(self, clock: FakeClock, per_call) -> None:
        self.clock = clock
        self.per_call = per_call
        self.calls = 0
        self.blocks: list[int] = []

    def time_block(self, fn, k):
        total = 0.0
        for _ in range(k):
            fn()
            total += self.per_call(self.calls)
            self.calls += 1
        self.clock.now += total
        self.blocks.append(k)
        return total


def test_median_ci_uses_exact_binomial_ranks():
    data = list(range(1, 11))  # n=10: the 95% CI is (x_(2), x_(9))
    assert median_ci(data) == (2, 9)
    data = list(range(1, 101))  # n=100: (x_(40), x_(61))
    assert median_ci(data) == (40, 61)
    assert median_ci([3.0, 1.0]) == (1.0, 3.0)  # too few for 95%: min and max
    with pytest.raises(ValueError):
        median_ci([])


def test_median_ci_covers_the_true_median_about_95_percent():
    rng = random.Random(1)
    hits = 0
    trials = 2000
    for _ in range(trials):
        lo, hi = median_ci([rng.expovariate(1.0) for _ in range(30)])
        hits += lo <= math.log(2) <= hi
    assert 0.94 <= hits / trials <= 0.99


def test_constant_time_stops_at_min_samples_with_blocks_over_the_minimum():
    clock = FakeClock()
    timer = FakeTimer(clock, lambda i: 1e-4)
    result = sample(lambda: None, timer, SamplingConfig(min_samples=12, max_time=10), clock=clock)
    assert len(result.samples) == 12
    assert all(s == pytest.approx(1e-4) for s in result.samples)
    assert result.calls_per_block * 1e-4 >= timer.min_block_s
    assert result.stable


def test_noisy_time_samples_until_the_budget_is_spent():
    clock = FakeClock()
    rng = random.Random(0)
    timer = FakeTimer(clock, lambda i: 1e-3 * (1 + rng.random()))
    config = SamplingConfig(min_samples=5, max_time=0.5, target=1e-6)
    result = sample(lambda: None, timer, config, clock=clock)
    assert result.elapsed == pytest.approx(0.5, abs=0.05)
    assert len(result.samples) > 50


def test_warmup_waits_for_slow_first_calls_to_settle():
    clock = FakeClock()
    # The first 50 calls are 10x slower (caches, lazy init); samples must not see them.
    timer = FakeTimer(clock, lambda i: 1e-2 if i < 50 else 1e-3)
    result = sample(lambda: None, timer, SamplingConfig(min_samples=10, max_time=10), clock=clock)
    assert result.first_call == pytest.approx(1e-2)
    assert max(result.samples) == pytest.approx(1e-3)
    assert result.warmup_blocks >= 1


def test_blocks_shrink_when_calls_slow_down_after_k_was_chosen():
    clock = FakeClock()
    # Fast while k is chosen (k ~ 120), then 1000x slower: without shrinking the blocks,
    # min_samples alone would take 20 x 120 x 10 ms = 24 s against a 0.1 s budget.
    timer = FakeTimer(clock, lambda i: 1e-5 if i < 1500 else 1e-2)
    result = sample(lambda: None, timer, SamplingConfig(min_samples=20, max_time=0.1), clock=clock)
    assert max(timer.blocks) >= 100
    assert timer.blocks[-1] == 1
    assert len(result.samples) >= 20
    assert clock.now < 3.0


def test_first_call_is_reported_and_hook_called():
    clock = FakeClock()
    timer = FakeTimer(clock, lambda i: 2.0 if i == 0 else 1e-3)
    seen = []
    result = sample(
        lambda: None,
        timer,
        SamplingConfig(max_time=1),
        clock=clock,
        after_first_call=lambda: seen.append(timer.calls),
    )
    assert result.first_call == 2.0
    assert seen == [1]
    assert 2.0 not in result.samples


JITTER = random.Random(0)


def _median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def _samplers(clock, bases, burst, config):
    """Warmed-up samplers of constant-time calls, all made `burst` (start, end, factor) slower
    while the fake clock is in that window; also returns the time of every sample."""
    times = {}
    samplers = []
    for index, base in enumerate(bases):
        times[index] = []

        def per_call(i, base=base):
            start, end, factor = burst
            # A little jitter, so the CI is never exactly zero.
            return (
                base * (1 + 0.002 * JITTER.random()) * (factor if start <= clock.now < end else 1.0)
            )

        timer = FakeTimer(clock, per_call)
        original = timer.time_block

        def timed(fn, k, original=original, index=index):
            times[index].append(clock.now)
            return original(fn, k)

        timer.time_block = timed
        samplers.append(warm_up(lambda: None, timer, config, clock=clock))
        times[index].clear()  # warm-up blocks are not samples
    return samplers, times


def test_interleaved_slices_ride_out_a_burst_that_spoils_a_sequential_instance():
    config = SamplingConfig(min_samples=20, max_time=1.0, target=1e-9)  # use the whole budget
    bases = [1e-4, 2e-4, 3e-4]
    # Sequential: the burst covers the middle instance's sampling, and its median is 1.5x.
    clock = FakeClock()
    medians = []
    for base in bases:
        timer = FakeTimer(
            clock,
            lambda i, base=base: (
                base * (1 + 0.002 * JITTER.random()) * (1.5 if 1.2 <= clock.now < 2 else 1)
            ),
        )
        medians.append(sample(lambda: None, timer, config, clock=clock).median)
    assert medians[1] == pytest.approx(1.5 * bases[1], rel=0.01)
    # Interleaved, the same 0.8 s burst spoils about a third of every instance's samples.
    probe = FakeClock()
    _samplers(probe, bases, (0, 0, 1), config)
    begin = probe.now  # warm-up is deterministic: sampling starts here on a fresh clock too
    clock = FakeClock()
    samplers, times = _samplers(clock, bases, (begin + 0.8, begin + 1.6, 1.5), config)
    assert sample_interleaved(samplers) == [None, None, None]
    for sampler, base in zip(samplers, bases, strict=True):
        assert _median(sampler.samples) == pytest.approx(base, rel=0.01)
        assert sampler.spent == pytest.approx(sampler.budget, rel=0.05)
    # Every instance's samples span the whole sampling phase, not a window of it.
    end = clock.now
    for index in times:
        assert times[index][0] - begin < 0.1 * (end - begin)
        assert end - times[index][-1] < 0.1 * (end - begin)


def test_interleaved_sampling_stops_early_only_after_min_slices():
    clock = FakeClock()
    config = SamplingConfig(min_samples=10, max_time=1.0)  # steady times: precise at once
    samplers, _ = _samplers(clock, [1e-4, 2e-4], (0, 0, 1), config)
    sample_interleaved(samplers)
    for sampler in samplers:
        assert sampler.spent == pytest.approx(sampler.budget * MIN_SLICES / SLICES, rel=0.1)


def test_interleaved_sampling_never_cuts_min_samples_and_reports_failures():
    clock = FakeClock()
    config = SamplingConfig(min_samples=40, max_time=0.2, target=1e-9)
    # A 5 ms call gets 4 slices of 9 blocks from its 0.18 s: the last 4 come a block a pass.
    slow, fine = _samplers(clock, [5e-3, 1e-4], (0, 0, 1), config)[0]
    calls = []
    limit = []

    def breaks() -> None:
        calls.append(1)
        if limit and len(calls) > limit[0]:
            raise RuntimeError("device lost")

    broken = warm_up(breaks, FakeTimer(clock, lambda i: 1e-4), config, clock=clock)
    limit.append(len(calls) + 50)  # fails in its first slices, after warm-up
    failures = sample_interleaved([slow, broken, fine])
    assert failures[0] is None and failures[2] is None
    assert isinstance(failures[1], RuntimeError)
    assert len(slow.samples) == 40
    assert len(fine.samples) >= 40


def test_relative_ci():
    assert relative_ci([1.0] * 5) is None
    assert relative_ci([1.0] * 20) == 0.0
    assert relative_ci(sorted([1.0, 1.1] * 10)) == pytest.approx(0.05 / 1.05)


def test_cpu_timer_times_k_calls():
    timer = CpuTimer()
    calls = []
    elapsed = timer.time_block(lambda: calls.append(1), 7)
    assert len(calls) == 7
    assert elapsed >= 0
    assert timer.min_block_s >= 1e-3


class FakeEvent:
    """Mimics torch.cuda.Event: record() stamps the fake device clock, elapsed_time is in ms."""

    log: ClassVar[list[str]] = []

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.stamp: float | None = None

    def record(self):
        self.log.append("record")
        self.stamp = self.clock.now

    def query(self):
        return True

    def synchronize(self):
        self.log.append("event_sync")

    def elapsed_time(self, end):
        return (end.stamp - self.stamp) * 1e3


def test_cuda_event_timer_with_fake_events():
    clock = FakeClock()
    FakeEvent.log = []
    made = []

    def factory():
        made.append(FakeEvent(clock))
        return made[-1]

    def work():
        clock.now += 0.25e-3

    timer = CudaEventTimer(event_factory=factory, synchronize=lambda: FakeEvent.log.append("sync"))
    elapsed = timer.time_block(work, 4)
    assert elapsed == pytest.approx(1e-3)
    # Drain the device, stamp, run, stamp, wait for the end stamp, then a device-wide
    # synchronize (it measures work left on other streams): in that order.
    assert FakeEvent.log == ["sync", "record", "record", "event_sync", "sync"]
    timer.time_block(work, 1)
    assert len(made) == 2  # the pair is reused


def test_sampling_with_the_cuda_timer_logic():
    clock = FakeClock()

    def factory():
        return FakeEvent(clock)

    def work():
        clock.now += 5e-5

    timer = CudaEventTimer(event_factory=factory, synchronize=lambda: None)
    result = sample(work, timer, SamplingConfig(min_samples=10, max_time=5), clock=clock)
    assert result.median == pytest.approx(5e-5)
    assert result.calls_per_block * 5e-5 >= timer.min_block_s
