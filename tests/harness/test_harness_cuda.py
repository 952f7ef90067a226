"""CUDA code paths of the harness, driven through the simulated device in fake_cuda.py."""

from __future__ import annotations

import gc
import textwrap
from collections import Counter
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from fake_cuda import install  # noqa: E402

from perfgate.harness import timing as timing_module  # noqa: E402
from perfgate.harness.entries import entry_json  # noqa: E402
from perfgate.harness.memory import measure_peak_memory  # noqa: E402
from perfgate.harness.timing import CpuTimer, CudaEventTimer, make_synchronize, make_timer  # noqa: E402
from perfgate.harness.timing_findings import timing_findings  # noqa: E402

MIB = 1 << 20


@pytest.mark.parametrize("device", ["cuda:0", "cuda", torch.device("cuda:0")])
def test_a_cuda_device_given_as_a_string_gets_the_cuda_paths(monkeypatch, device):
    fake = install(monkeypatch)
    assert isinstance(make_timer(device), CudaEventTimer)
    make_synchronize(device)()
    assert fake.synchronize_calls == 1
    peak = measure_peak_memory(lambda: fake.alloc(MIB), device)
    assert peak.method == "cuda_allocator"
    assert isinstance(make_timer("cpu"), CpuTimer)


def test_cuda_peak_memory_reports_reserved_too_with_gc_paused(monkeypatch):
    fake = install(monkeypatch)
    fake.alloc(10 * MIB)  # held before the call: not counted
    fake.alloc(30 * MIB)
    fake.free(30 * MIB)  # cached by the allocator: reserved, not allocated
    seen = []

    def call():
        seen.append(gc.isenabled())
        fake.alloc(4 * MIB)
        fake.alloc(4 * MIB)
        fake.free(8 * MIB)

    peak = measure_peak_memory(call, torch.device("cuda:0"))
    assert seen == [False]  # a collection inside the call would hide part of the peak
    assert peak.value == 8 * MIB
    # The cache is emptied first, so reserved growth is what the call needed from the device.
    assert peak.reserved == 8 * MIB


def test_cuda_allocations_come_from_the_caching_allocators_counters(monkeypatch):
    from perfgate.harness.allocations import measure_cuda_allocations

    fake = install(monkeypatch)
    fake.alloc(10 * MIB)  # held before the call: in neither figure
    seen = []

    def call():
        seen.append(gc.isenabled())
        fake.alloc(4 * MIB)
        fake.alloc(2 * MIB)
        fake.free(4 * MIB)
        fake.alloc(3 * MIB)

    counted = measure_cuda_allocations(call, torch.device("cuda:0"))
    assert seen == [False]
    assert counted.method == "cuda_allocator"
    assert counted.allocated == 9 * MIB  # every byte handed out, frees or not
    assert counted.peak == 6 * MIB  # 4 + 2 live at once, above the 10 held before
    assert counted.note() is None  # no per-op attribution from the counters


def _timer(fake, *, queued=False):
    return CudaEventTimer(
        event_factory=lambda: fake.Event(enable_timing=True),
        synchronize=fake.synchronize,
        clock=fake.clock,
        spin=(lambda s: fake._sleep(int(s * fake.clock_hz))) if queued else None,
    )


def test_a_launch_bound_callable_is_timed_by_its_host_time_and_flagged(monkeypatch):
    fake = install(monkeypatch, launch_s=20e-6)

    def tiny():  # 20 µs to launch, 2 µs on the device
        fake.launch(2e-6)

    timer = _timer(fake)
    block = timer.time_block(tiny, 100)
    # From an idle device the events see the launches: 100 x 20 µs, not 100 x 2 µs.
    assert block == pytest.approx(100 * 20e-6, rel=0.05)
    assert timer.details["host"] == pytest.approx(20e-6, rel=0.05)
    samples = [block / 100] * 20
    found = timing_findings(samples, {"host": [timer.details["host"]] * 20}, key="tiny")
    assert found.metrics["host_time"].samples == [timer.details["host"]] * 20
    assert any(note.startswith("launch-bound") for note in found.notes)
    assert "launch-bound" in found.warnings[0]


def test_queued_device_timing_times_the_device_alone(monkeypatch):
    fake = install(monkeypatch, launch_s=20e-6)

    def tiny():
        fake.launch(2e-6)

    timer = _timer(fake, queued=True)
    assert timer.method == "cuda_events_queued"
    block = timer.time_block(tiny, 50)  # 1 ms of launching, inside the first 2 ms spin
    assert block == pytest.approx(50 * 2e-6, rel=0.01)
    assert timer.details["unheld"] == 0.0
    assert timer.details["host"] == pytest.approx(20e-6, rel=0.05)


def test_queued_blocks_that_outlast_the_spin_are_reported(monkeypatch):
    fake = install(monkeypatch, launch_s=20e-6)
    timer = _timer(fake, queued=True)
    # 500 launches of 20 µs (10 ms) outlast the first 2 ms spin.
    timer.time_block(lambda: fake.launch(2e-6), 500)
    assert timer.details["unheld"] == 1.0
    # The spin is then sized from that block's host time, and holds the next one.
    timer.time_block(lambda: fake.launch(2e-6), 500)
    assert timer.details["unheld"] == 0.0
    found = timing_findings([1e-3, 1e-3], {"unheld": [1.0, 0.0]}, key="k")
    assert "1 of 2 blocks outlasted the spin kernel" in found.notes[0]


def test_work_left_on_another_stream_is_detected(monkeypatch):
    fake = install(monkeypatch)
    side = fake.Stream()

    def call():
        fake.launch(100e-6)
        fake.launch(300e-6, stream=side)  # never joined back to the current stream

    timer = _timer(fake)
    block = timer.time_block(call, 10)
    # The end event on the current stream completes before the side stream's work.
    assert block < 10 * 300e-6
    assert timer.details["other_streams"] > 0.5 * block / 10
    found = timing_findings(
        [block / 10] * 5, {"other_streams": [timer.details["other_streams"]] * 5}, key="side"
    )
    assert "other streams" in found.notes[0] and "wait_stream" in found.warnings[0]

    def joined():
        fake.launch(100e-6)
        fake.launch(300e-6, stream=side)
        fake.current.wait_stream(side)

    timer.time_block(joined, 10)
    assert timer.details["other_streams"] == pytest.approx(0.0, abs=1e-6)


def _cuda_instances(tmp_path, body: str):
    """Benchmarks written against the fake device (`torch.cuda` while the test runs)."""
    from perfgate.harness.discovery import import_benchmark_file

    path = tmp_path / "bench_fake_cuda.py"
    path.write_text("import torch, perfgate\n\n" + textwrap.dedent(body))
    return {i.key: i for i in import_benchmark_file(path)}


def _measure(instance, **settings):
    from perfgate.harness.measure import MeasureSettings, measure_instance
    from perfgate.harness.progress import NullReporter

    settings.setdefault("profile", False)
    settings.setdefault("max_time", 0.2)
    return measure_instance(
        instance,
        device=torch.device("cuda:0"),
        settings=MeasureSettings(**settings),
        reporter=NullReporter(),
    )


def _entry_document(entry):
    from perfgate.results import parse_document

    return parse_document(
        {
            "schema": "perfgate/results@1",
            "run": {
                "id": "00000000-0000-0000-0000-000000000001",
                "project": "o/p",
                "commit": "0" * 40,
                "started_at": "2026-01-01T00:00:00Z",
            },
            "environment": {"fingerprint": "x"},
            "benchmarks": [entry],
        }
    )


def test_a_launch_bound_instance_records_host_time_and_a_note(monkeypatch, tmp_path):
    fake = install(monkeypatch, launch_s=20e-6)
    # The timer's host clock follows the simulated host (only inside the timing module).
    monkeypatch.setattr(timing_module, "time", SimpleNamespace(perf_counter=fake.clock))
    instances = _cuda_instances(
        tmp_path,
        """
        @perfgate.benchmark
        def tiny():
            cuda = torch.cuda
            return lambda: cuda.launch(2e-6)
        """,
    )
    result = _measure(instances["tiny"])
    assert result.error is None, result.entry
    metrics = entry_json(result.entry)["metrics"]
    assert metrics["time"]["method"] == "cuda_events"
    assert sorted(metrics["time"]["samples"])[10] == pytest.approx(20e-6, rel=0.1)
    assert len(metrics["host_time"]["samples"]) == len(metrics["time"]["samples"])
    assert metrics["time"]["note"].startswith("launch-bound")
    assert any("launch-bound" in w for w in result.warnings)
    _entry_document(entry_json(result.entry))  # still a valid results@1 entry

    queued = _measure(instances["tiny"], device_timing="queued")
    queued_time = entry_json(queued.entry)["metrics"]["time"]
    assert queued_time["method"] == "cuda_events_queued"
    assert sorted(queued_time["samples"])[10] == pytest.approx(2e-6, rel=0.1)


POISON = """
@perfgate.benchmark
def a_fine():
    cuda = torch.cuda
    return lambda: cuda.launch(1e-4)

@perfgate.benchmark
def b_faults():
    cuda = torch.cuda
    def call():
        cuda.launch(1e-4)
        if cuda.host > 0.05:  # after warm-up, while samples are taken
            cuda.poison()
    return call

@perfgate.benchmark
def c_after():
    cuda = torch.cuda
    return lambda: cuda.launch(1e-4)
"""


def test_a_lost_cuda_context_stops_the_process_after_the_culprit(monkeypatch, tmp_path):
    from perfgate.harness.device_errors import DeviceContextLostError
    from perfgate.harness.measure import MeasureSettings, run_instances
    from perfgate.harness.progress import NullReporter

    install(monkeypatch)
    instances = list(_cuda_instances(tmp_path, POISON).values())
    saved = []
    with pytest.raises(DeviceContextLostError) as lost:
        run_instances(
            instances,
            device=torch.device("cuda:0"),
            settings=MeasureSettings(max_time=0.2, profile=False),
            reporter=NullReporter(),
            on_result=lambda instance, result: saved.append(instance.key),
        )
    assert lost.value.key == "b_faults" and "illegal memory access" in lost.value.reason
    assert saved == ["a_fine", "b_faults"]  # c_after is never started in this process
    assert lost.value.done["a_fine"].error is None
    assert "illegal memory access" in lost.value.done["b_faults"].error


def test_an_error_that_leaves_the_context_usable_does_not_stop_the_process(monkeypatch):
    from perfgate.harness.device_errors import context_lost

    install(monkeypatch)
    oom = RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
    assert context_lost(torch.device("cuda:0"), oom) is None
    assert context_lost("cpu", RuntimeError("an illegal memory access")) is None


def test_the_worker_exits_with_lost_context_and_the_round_goes_on(monkeypatch, tmp_path):
    import io
    import json

    from perfgate.harness import rounds
    from perfgate.harness.measure import MeasureSettings
    from perfgate.harness.worker import LOST_CONTEXT, run_request
    from perfgate.harness.worker_protocol import WorkerRequest
    from perfgate.results import Benchmark

    install(monkeypatch)
    path = tmp_path / "bench_fake_cuda.py"
    path.write_text("import torch, perfgate\n" + POISON)
    results = tmp_path / "results.jsonl"
    request = WorkerRequest(
        files=(str(path),),
        keys=("a_fine", "b_faults", "c_after"),
        device="cuda:0",
        threads=1,
        max_time=0.2,
        profile=False,
        round_index=1,
        pin_malloc=False,
        results=str(results),
    )
    assert run_request(request, io.StringIO()) == LOST_CONTEXT
    written = [json.loads(line)["key"] for line in results.read_text().splitlines()]
    assert written == ["a_fine", "b_faults"]

    # The parent then hands what is left to a fresh worker.
    calls = []

    def spawn(instances, **kwargs):
        calls.append([i.key for i in instances])
        keys = [i.key for i in instances]
        if len(calls) == 1:
            done = {k: Benchmark(name=k, key=k, error="x") for k in keys[:2]}
            return done, set(keys[:2]), f"exit code {LOST_CONTEXT}: CUDA context lost"
        return {k: Benchmark(name=k, key=k, error="x") for k in keys}, set(keys), None

    monkeypatch.setattr(rounds, "_spawn_worker", spawn)
    instances = list(_cuda_instances(tmp_path, POISON).values())
    entries = rounds.run_round(
        instances,
        round_index=1,
        device="cuda:0",
        threads=1,
        settings=MeasureSettings(),
        profile=False,
        reporter=NullRecorder(),
        cwd=tmp_path,
    )
    assert calls == [["a_fine", "b_faults", "c_after"], ["c_after"]]
    assert set(entries) == {"a_fine", "b_faults", "c_after"}


class NullRecorder:
    def __init__(self):
        self.warnings = []

    def warning(self, message):
        self.warnings.append(message)

    def instance_error(self, key, message, *, round_index):
        self.warnings.append(f"error {key}: {message}")

    def instance_started(self, key, *, round_index):
        pass

    def instance_progress(self, progress):
        pass

    def instance_finished(self, progress):
        pass


def test_in_process_the_rest_goes_to_a_worker_after_a_lost_context(monkeypatch, tmp_path):
    from perfgate.harness import runner
    from perfgate.harness.measure import MeasureSettings
    from perfgate.results import Benchmark

    install(monkeypatch)
    handed = []

    def run_round(instances, **kwargs):
        handed.append(([i.key for i in instances], kwargs["device"]))
        return {i.key: Benchmark(name=i.key, key=i.key, error="x") for i in instances}

    monkeypatch.setattr(runner, "run_round", run_round)
    recorder = NullRecorder()
    entries = runner._run_in_process(
        list(_cuda_instances(tmp_path, POISON).values()),
        device=torch.device("cuda:0"),
        device_name="cuda:0",
        threads=1,
        pin_malloc=False,
        settings=MeasureSettings(max_time=0.2, profile=False),
        reporter=recorder,
        cwd=tmp_path,
    )
    assert handed == [(["c_after"], "cuda:0")]
    assert list(entries) == ["a_fine", "b_faults", "c_after"]
    assert entries["a_fine"].error is None
    assert any("CUDA context lost while measuring b_faults" in w for w in recorder.warnings)


def test_on_cuda_the_profiler_attaches_only_after_every_instance_was_timed(monkeypatch, tmp_path):
    from perfgate.harness import passes
    from perfgate.harness.counters import KernelCount
    from perfgate.harness.measure import MeasureSettings, run_instances
    from perfgate.harness.profiling import ProfileResult

    install(monkeypatch)
    log = []

    def count(fn, synchronize):
        log.append("kernels")
        return KernelCount(1, True, Counter({"k": 3}), 3)

    def profile(fn, **kwargs):
        log.append("profile")
        return ProfileResult(ops=[], trace=None)

    monkeypatch.setattr(passes, "count_kernel_launches", count)
    monkeypatch.setattr(passes, "profile_callable", profile)

    class Log(NullRecorder):
        def instance_finished(self, progress):
            log.append(f"timed {progress.key}")

    instances = _cuda_instances(
        tmp_path,
        """
        @perfgate.benchmark(params={"n": [1, 2]})
        def setups(n):
            cuda = torch.cuda
            cuda.setups = getattr(cuda, "setups", 0) + 1
            return lambda: cuda.launch(1e-4)
        """,
    )
    results = run_instances(
        list(instances.values()),
        device=torch.device("cuda:0"),
        settings=MeasureSettings(max_time=0.2, profile=True),
        reporter=Log(),
    )
    assert log == [
        "timed setups[n=1]",
        "timed setups[n=2]",
        "kernels",
        "profile",
        "kernels",
        "profile",
    ]
    assert torch.cuda.setups == 4  # each instance set up again for its profiler passes
    for result in results.values():
        assert entry_json(result.entry)["metrics"]["kernel_launches"]["value"] == 1
        metrics = entry_json(result.entry)["metrics"]
        assert metrics["peak_allocated_bytes"]["method"] == "cuda_allocator"
        assert metrics["allocated_bytes"]["exact"] is True
        # The allocator's peak is peak_allocated_bytes; it is not repeated as peak_memory.
        assert "peak_memory" not in metrics and "peak_memory_reserved" in metrics


def test_cold_cache_timing_flushes_before_each_call_and_times_calls_alone(monkeypatch):
    from perfgate.harness.timing import CudaColdCacheTimer

    fake = install(monkeypatch, launch_s=1e-7, record_s=1e-7)  # device-bound
    cache = {"warm": False}

    def flush():  # 50 µs of memset over twice the L2
        fake.launch(50e-6, name="flush")
        cache["warm"] = False

    def call():  # 10 µs from DRAM, 2 µs with its inputs in L2
        fake.launch(2e-6 if cache["warm"] else 10e-6)
        cache["warm"] = True

    hot = _timer(fake).time_block(call, 10)
    assert hot == pytest.approx(10e-6 + 9 * 2e-6, rel=0.05)
    cold = CudaColdCacheTimer(
        event_factory=lambda: fake.Event(enable_timing=True),
        synchronize=fake.synchronize,
        flush=flush,
        clock=fake.clock,
    )
    block = cold.time_block(call, 10)
    # Every call from DRAM, and none of the flushes' 500 µs in the time.
    assert block == pytest.approx(10 * 10e-6, rel=0.05)
    assert fake.kernels.count("flush") == 10
    assert cold.method == "cuda_events_cold_l2"


def test_cold_cache_is_recorded_in_the_entry(monkeypatch, tmp_path):
    from perfgate.harness import timing

    fake = install(monkeypatch)
    monkeypatch.setattr(timing, "make_l2_flush", lambda device: lambda: fake.launch(5e-5))
    instances = _cuda_instances(
        tmp_path,
        """
        @perfgate.benchmark
        def k():
            cuda = torch.cuda
            return lambda: cuda.launch(1e-5)
        """,
    )
    result = _measure(instances["k"], cold_cache=True)
    assert entry_json(result.entry)["metrics"]["time"]["method"] == "cuda_events_cold_l2"
    _entry_document(entry_json(result.entry))


def test_throttled_samples_are_flagged_from_nvml(monkeypatch, tmp_path):
    from fake_cuda import install_nvml

    fake = install(monkeypatch)
    nvml = install_nvml(monkeypatch)
    instances = _cuda_instances(
        tmp_path,
        """
        @perfgate.benchmark
        def k():
            cuda = torch.cuda
            return lambda: cuda.launch(1e-5)
        """,
    )
    calls = {"n": 0}
    original = fake.launch

    def launch(seconds, name="kernel", stream=None):
        calls["n"] += 1
        # Power capping (0x4) from some point on, while samples are taken.
        nvml.reasons = 0x4 if calls["n"] > 3000 else 0x1
        original(seconds, name, stream)

    fake.launch = launch
    result = _measure(instances["k"], max_time=0.3)
    time = entry_json(result.entry)["metrics"]["time"]
    assert nvml.samples >= len(time["samples"])
    assert "samples taken while the GPU throttled" in time["note"]
    assert any("throttled" in w for w in result.warnings)


def test_an_idle_reason_is_not_throttling_and_no_nvml_means_no_readings(monkeypatch):
    from fake_cuda import install_nvml

    from perfgate.harness.gpu_state import open_device

    install(monkeypatch)
    nvml = install_nvml(monkeypatch)
    nvml.reasons = 0x1 | 0x2  # idle, application clocks set: not throttling
    assert open_device("cuda:0").sample() == {"sm_clock_mhz": 1980.0, "throttled": 0.0}
    monkeypatch.setitem(__import__("sys").modules, "pynvml", None)  # not installed
    monkeypatch.setattr("perfgate.harness.gpu_state._opened", {})
    assert open_device("cuda:0") is None


def test_the_fingerprint_describes_only_the_measured_gpu(monkeypatch):
    from fake_cuda import install_nvml

    from perfgate.harness.environment import collect_environment, fingerprint

    install(monkeypatch, devices=2)
    install_nvml(monkeypatch)
    env = collect_environment(torch.device("cuda:0"))
    assert env["devices"] == ["Fake GPU"]  # one, though two are visible
    (gpu,) = env["gpus"]
    assert gpu["power_limit_w"] == 700.0 and gpu["mig_mode"] == 0 and gpu["ecc"] == 1
    assert gpu["max_sm_clock_mhz"] == 1980 and gpu["application_sm_clock_mhz"] is None
    assert env["gpu_uuid"] == "GPU-00000000-fake"
    # The UUID names one physical GPU: identical runners still share a fingerprint.
    assert fingerprint({**env, "gpu_uuid": "GPU-other"}) == env["fingerprint"]
    lower = {**env, "gpus": [{**gpu, "power_limit_w": 500.0}]}
    assert fingerprint(lower) != env["fingerprint"]
