"""Compile metrics: user CPU seconds (children included), the informational wall time, inductor's
kernel count, and the one-thread cold compile of each instance."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from perfgate.harness import compile_clock, counters
from perfgate.harness.compile_cache import COMPILE_THREADS, PrivateCompileCache
from perfgate.harness.compile_clock import ClockReading, read_clock
from perfgate.harness.counters import CompileWatch

# A child that spends at least 0.2 s of user CPU by its own account, then exits.
_BURN = (
    "import resource\n"
    "while resource.getrusage(resource.RUSAGE_SELF).ru_utime < 0.2:\n"
    "    sum(range(10000))\n"
)


def test_the_clock_counts_the_user_cpu_of_finished_children():
    before = read_clock()
    subprocess.run([sys.executable, "-c", _BURN], check=True)
    after = read_clock()
    # What the child counted for itself is in the parent's account once it was waited for.
    assert after.since(before).cpu >= 0.2


class _ScriptedClock:
    def __init__(self, *readings: tuple[float, float]) -> None:
        self.readings = [ClockReading(wall=w, cpu=c) for w, c in readings]

    def __call__(self) -> ClockReading:
        return self.readings.pop(0)


def _fake_dynamo(monkeypatch: pytest.MonkeyPatch, frames: list[int]) -> None:
    """Dynamo's counters as `CompileWatch` reads them; `frames[0]` is the current total."""
    state = {"frames": frames}

    class _Counters(dict):  # type: ignore[type-arg]
        def __getitem__(self, name: str) -> dict[str, int]:
            if name == "frames":
                return {"total": state["frames"][0]}
            return {}

    utils = types.ModuleType("torch._dynamo.utils")
    utils.counters = _Counters()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._dynamo", types.ModuleType("torch._dynamo"))
    monkeypatch.setitem(sys.modules, "torch._dynamo.utils", utils)


def _fake_inductor(monkeypatch: pytest.MonkeyPatch, count: int) -> types.ModuleType:
    metrics = types.ModuleType("torch._inductor.metrics")
    metrics.generated_kernel_count = count  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._inductor.metrics", metrics)
    return metrics


def test_compile_time_is_the_first_calls_cpu_seconds_and_the_wall_time_is_kept(monkeypatch):
    frames = [0]
    _fake_dynamo(monkeypatch, frames)
    inductor = _fake_inductor(monkeypatch, 4)
    # start, after setup, after the first call: 9 CPU seconds over 30 wall seconds.
    monkeypatch.setattr(counters, "read_clock", _ScriptedClock((0, 0), (1, 0.5), (31, 9.5)))
    watch = CompileWatch()
    watch.start(reset=False)
    watch.after_setup()
    frames[0] = 2  # the first call converted two frames
    inductor.generated_kernel_count = 14  # type: ignore[attr-defined]
    watch.after_first_call()
    metrics = watch.finish(setup_s=1.0, first_call_s=30.0, per_call_s=0.5)
    assert metrics is not None
    assert metrics.compile_time == pytest.approx(8.5)  # 9 CPU seconds less one call
    assert metrics.compile_wall_time == pytest.approx(29.5)
    assert metrics.compiled_kernels == 10  # those of this compile, not the process's
    assert metrics.compile_note is None


def test_a_compile_inside_setup_counts_the_setups_cpu_seconds(monkeypatch):
    frames = [0]
    _fake_dynamo(monkeypatch, frames)
    monkeypatch.delitem(sys.modules, "torch._inductor.metrics", raising=False)
    monkeypatch.setattr(counters, "read_clock", _ScriptedClock((0, 1), (20, 7), (20.1, 7.1)))
    watch = CompileWatch()
    watch.start(reset=False)
    frames[0] = 1  # setup compiled eagerly
    watch.after_setup()
    watch.after_first_call()
    metrics = watch.finish(setup_s=20.0, first_call_s=0.1, per_call_s=0.1)
    assert metrics is not None
    assert metrics.compile_time == pytest.approx(6.0)
    assert metrics.compile_wall_time == pytest.approx(20.0)
    assert metrics.compile_note == "compiled inside setup: compile_time is the whole setup"
    assert metrics.compiled_kernels is None  # inductor never loaded: no kernel count


def test_no_kernel_count_without_inductor(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch._inductor.metrics", raising=False)
    assert compile_clock.generated_kernels() is None
    _fake_inductor(monkeypatch, 3)
    assert compile_clock.generated_kernels() == 3


def test_each_instance_compiles_on_one_thread_without_precompiled_headers_then_puts_back(
    monkeypatch,
):
    config = types.ModuleType("torch._inductor.config")
    config.compile_threads = 8  # type: ignore[attr-defined]
    config.cpp_cache_precompile_headers = True  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._inductor.config", config)
    monkeypatch.setenv("TORCHINDUCTOR_COMPILE_THREADS", "8")
    monkeypatch.delenv("TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS", raising=False)
    cache = PrivateCompileCache()
    cache.fresh()
    assert os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == COMPILE_THREADS == "1"
    # Inductor's precompiled header lives machine-wide, outside the private cache.
    assert os.environ["TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS"] == "0"
    assert config.compile_threads == 1  # type: ignore[attr-defined]
    assert config.cpp_cache_precompile_headers is False  # type: ignore[attr-defined]
    config.compile_threads = 4  # type: ignore[attr-defined]  # a setup chose otherwise
    config.cpp_cache_precompile_headers = True  # type: ignore[attr-defined]
    cache.fresh()
    assert config.compile_threads == 1  # type: ignore[attr-defined]
    assert config.cpp_cache_precompile_headers is False  # type: ignore[attr-defined]
    cache.close()
    assert os.environ["TORCHINDUCTOR_COMPILE_THREADS"] == "8"
    assert "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS" not in os.environ
    assert config.compile_threads == 8  # type: ignore[attr-defined]
    assert config.cpp_cache_precompile_headers is True  # type: ignore[attr-defined]


def test_a_torch_without_one_of_the_settings_is_left_as_it_is(monkeypatch):
    config = types.ModuleType("torch._inductor.config")
    config.compile_threads = 8  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch._inductor.config", config)
    cache = PrivateCompileCache()
    cache.fresh()
    assert not hasattr(config, "cpp_cache_precompile_headers")
    cache.close()
    assert config.compile_threads == 8  # type: ignore[attr-defined]
