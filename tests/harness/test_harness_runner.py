"""run_benchmarks end to end on CPU: the document, error entries, rounds in worker processes."""

from __future__ import annotations

import os
import textwrap

import pytest

pytest.importorskip("torch")

from perfgate.config import GitHubContext
from perfgate.errors import UsageError
from perfgate.harness.progress import InstanceProgress
from perfgate.harness.rounds import merge_rounds
from perfgate.harness.runner import RunOptions, resolve_device, run_benchmarks
from perfgate.results import Benchmark, parse_document

SHA = "0123456789abcdef0123456789abcdef01234567"

SUITE = """
import torch, perfgate

@perfgate.benchmark(params={"n": [16, 32]})
def mm(n, device):
    a = torch.randn(n, n, device=device)
    return lambda: a @ a

@perfgate.benchmark(items=lambda batch: batch * 4, unit="tokens", params={"batch": [2]})
def toks(batch):
    x = torch.randn(batch, 4, 8)
    return lambda: x.softmax(-1)

@perfgate.benchmark
def setup_fails():
    raise ValueError("bad setup\\nsecond line")

@perfgate.benchmark
def call_fails():
    return lambda: 1 / 0

@perfgate.benchmark
def not_callable():
    return 3

@perfgate.benchmark(min_samples=200)  # sampling outlasts the 0.03 s, however fast the calls
def fails_while_sampled():
    import time
    began = time.perf_counter()
    def run():
        # After warm-up (at most 30% of the 0.05 s budget), while samples are being taken.
        if time.perf_counter() - began > 0.03:
            raise RuntimeError("gave up")
    return run
"""


class Recorder:
    def __init__(self):
        self.events = []

    def run_started(self, *, instances, rounds):
        self.events.append(("run_started", instances, rounds))

    def instance_started(self, key, *, round_index):
        self.events.append(("started", key, round_index))

    def instance_progress(self, progress):
        self.events.append(("progress", progress.key))

    def instance_finished(self, progress):
        assert isinstance(progress, InstanceProgress)
        self.events.append(("finished", progress.key, progress.round_index))

    def instance_error(self, key, message, *, round_index):
        self.events.append(("error", key, message, round_index))

    def warning(self, message):
        self.events.append(("warning", message))

    def run_finished(self):
        self.events.append(("run_finished",))


def _suite(tmp_path, text=SUITE, name="bench_suite.py"):
    folder = tmp_path / "benchmarks"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text))
    return folder


def _run(tmp_path, **kwargs):
    kwargs.setdefault("max_time", 0.05)
    reporter = kwargs.pop("reporter", None)
    return run_benchmarks(
        RunOptions(commit=SHA, **kwargs), reporter=reporter, github=GitHubContext(), cwd=tmp_path
    )


@pytest.mark.parametrize("interleave", [None, False])
def test_a_run_produces_a_valid_document_with_all_metrics(tmp_path, interleave):
    _suite(tmp_path)
    (tmp_path / "benchmarks" / "bench_broken.py").write_text("import no_such_module_here\n")
    recorder = Recorder()
    doc = _run(
        tmp_path,
        reporter=recorder,
        trace_dir="traces",
        project="o/p",
        pr=5,
        interleave=interleave,
    )
    # Interleaved by default on CPU; the fingerprint tells the two apart.
    assert doc.environment.sampling == ("sequential" if interleave is False else "interleaved")
    parse_document(doc.to_json_dict())  # round-trips through the validator
    by_key = {b.key: b for b in doc.benchmarks}
    assert list(by_key) == [
        "bench_broken",
        "mm[n=16]",
        "mm[n=32]",
        "toks[batch=2]",
        "setup_fails",
        "call_fails",
        "not_callable",
        "fails_while_sampled",
    ]
    mm = by_key["mm[n=32]"]
    assert mm.error is None and mm.device == "cpu"
    assert len(mm.metrics["time"].samples) >= 20
    assert mm.metrics["flops"].value == 2 * 32**3 and mm.metrics["flops"].exact
    assert mm.metrics["op_count"].value == 1
    assert mm.metrics["peak_memory"].method in ("rss_hwm", None)
    assert any(op.op == "aten::mm" for op in mm.profile.ops)
    assert mm.profile.trace and (tmp_path / "traces").is_dir()
    toks = by_key["toks[batch=2]"]
    assert toks.metrics["throughput"].unit == "tokens/s"
    # One throughput sample per time sample: items / seconds.
    expected = [8 / t for t in toks.metrics["time"].samples]
    assert toks.metrics["throughput"].samples == pytest.approx(expected)
    assert by_key["setup_fails"].error == "ValueError: bad setup"
    assert by_key["call_fails"].error == "ZeroDivisionError: division by zero"
    assert by_key["not_callable"].error.startswith("TypeError: setup returned int")
    assert by_key["bench_broken"].error.startswith("import failed: ModuleNotFoundError")
    assert (doc.run.commit, doc.run.project, doc.run.pr) == (SHA, "o/p", 5)
    assert doc.environment.fingerprint
    names = [e[0] for e in recorder.events]
    assert names[0] == "run_started" and names[-1] == "run_finished"
    assert by_key["fails_while_sampled"].error == "RuntimeError: gave up"
    assert by_key["fails_while_sampled"].metrics == {}
    assert recorder.events[0] == ("run_started", 7, 1)
    assert ("error", "setup_fails", "ValueError: bad setup", 1) in recorder.events
    assert ("finished", "mm[n=16]", 1) in recorder.events
    # Progress names the instance being sampled: interleaved, that is after every setup.
    last_start = max(i for i, e in enumerate(recorder.events) if e[0] == "started")
    late = {e[1] for e in recorder.events[last_start:] if e[0] == "progress"}
    assert ("mm[n=16]" in late) == (interleave is None)


def test_no_profile_and_filter(tmp_path):
    _suite(tmp_path)
    doc = _run(tmp_path, filter="mm and not 32", profile=False)
    assert [b.key for b in doc.benchmarks] == ["mm[n=16]"]
    assert doc.benchmarks[0].profile is None


def test_an_empty_selection_is_a_usage_error(tmp_path):
    _suite(tmp_path)
    with pytest.raises(UsageError, match="matches none"):
        _run(tmp_path, filter="nothing_like_this")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no benchmarks"):
        _run(tmp_path, paths=["empty"])


def test_bad_options_are_usage_errors(tmp_path):
    _suite(tmp_path)
    with pytest.raises(UsageError, match="--rounds"):
        _run(tmp_path, rounds=0)
    with pytest.raises(UsageError, match="--max-time"):
        _run(tmp_path, max_time=-1)
    with pytest.raises(UsageError, match="--device"):
        _run(tmp_path, device="tpu")
    # CUDA-only timing modes are refused on the CPU, not silently ignored.
    with pytest.raises(UsageError, match="--cold-cache and --device-timing queued time a CUDA"):
        _run(tmp_path, device="cpu", device_timing="queued")
    with pytest.raises(UsageError, match="this run measures on cpu"):
        _run(tmp_path, device="cpu", cold_cache=True)


def test_device_resolution_on_a_cpu_machine():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"
    for choice in ("cuda", "cuda:1"):
        with pytest.raises(UsageError, match="CUDA is not available"):
            resolve_device(choice)


CRASHY = """
import os, torch, perfgate

@perfgate.benchmark
def before():
    x = torch.ones(8)
    return lambda: x + 1

@perfgate.benchmark
def crashes():
    os._exit(17)

@perfgate.benchmark
def after():
    x = torch.ones(8)
    return lambda: x * 2
"""


@pytest.mark.slow
def test_rounds_run_in_worker_processes_and_pool(tmp_path):
    _suite(tmp_path, CRASHY)
    recorder = Recorder()
    doc = _run(tmp_path, rounds=2, max_time=0.03, reporter=recorder)
    by_key = {b.key: b for b in doc.benchmarks}
    assert list(by_key) == ["before", "crashes", "after"]
    for key in ("before", "after"):
        time = by_key[key].metrics["time"]
        assert len(time.rounds) == 2
        assert sum(time.rounds) == len(time.samples)
        assert by_key[key].error is None
        assert by_key[key].metrics["op_count"].value == 1
    # Profiling happens in the last round only, and still comes back.
    assert by_key["after"].profile is not None
    # The crash takes down only its own instance; a fresh worker runs the rest.
    assert by_key["crashes"].error.startswith("round 1/2: worker crashed while running it")
    assert "exit code 17" in by_key["crashes"].error
    # Interleaved, every instance was running when it crashed: the round went on sequentially.
    assert any(e[0] == "warning" and "one after another" in e[1] for e in recorder.events)
    assert ("started", "after", 2) in recorder.events
    assert ("finished", "after", 2) in recorder.events
    parse_document(doc.to_json_dict())


def _entry(samples, flops, error=None):
    return _benchmark(
        {
            "name": "b",
            "params": {},
            "key": "b",
            "device": "cpu",
            "error": error,
            "tags": [],
            "metrics": {
                "time": {"unit": "s", "direction": "lower", "samples": samples},
                "flops": {"unit": "flop", "direction": "lower", "value": flops, "exact": True},
            },
            "profile": {"ops": [], "trace": None},
        }
    )


def _benchmark(entry):
    return Benchmark.model_validate(entry)


def test_merge_rounds_concatenates_and_warns_on_exact_mismatch():
    merged, warnings = merge_rounds(
        [{"b": _entry([1.0, 2.0], 10)}, {"b": _entry([3.0], 10)}, {"b": _entry([4.0, 5.0], 11)}],
        ["b"],
    )
    time = merged["b"].metrics["time"]
    assert time.samples == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert time.rounds == [2, 1, 2]
    assert merged["b"].metrics["flops"].value == 10
    assert warnings == [
        "b: exact metric flops differs between rounds (10 in the first, 11 in round 3); "
        "keeping the first"
    ]


def test_merge_rounds_shares_nothing_with_the_rounds_it_merged():
    rounds = [{"b": _entry([1.0, 2.0], 10)}, {"b": _entry([3.0], 10)}]
    before = [r["b"].model_dump() for r in rounds]
    merged, _ = merge_rounds(rounds, ["b"])
    merged["b"].metrics["time"].samples.append(9.0)
    merged["b"].metrics["flops"].note = "changed"
    merged["b"].tags.append("changed")
    merged["b"].params["n"] = 1
    merged["b"].profile.trace = "changed"
    assert [r["b"].model_dump() for r in rounds] == before


def test_merge_rounds_keeps_working_rounds_of_a_flaky_instance():
    failed = _entry([], 10, error="RuntimeError: flaky").model_copy(update={"metrics": {}})
    merged, _ = merge_rounds([{"b": _entry([1.0], 10)}, {"b": failed}], ["b"])
    assert merged["b"].error == "round 2/2: RuntimeError: flaky"
    assert merged["b"].metrics["time"].rounds == [1]


ALLOCATOR_PROBE = """
import ctypes
import perfgate

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]

@perfgate.benchmark
def heap_only():
    libc = ctypes.CDLL("libc.so.6")
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    libc.mallinfo2.restype = MallInfo2
    before = libc.mallinfo2().hblks
    block = libc.malloc(8 << 20)
    mmapped = libc.mallinfo2().hblks - before
    libc.free(block)
    if mmapped:
        raise ValueError("an 8 MiB block was mmapped")
    return lambda: None
"""


@pytest.mark.slow
@pytest.mark.parametrize("pin", [True, False])
def test_worker_rounds_pin_the_allocator_unless_asked_not_to(tmp_path, pin):
    from perfgate.harness.allocator import PINNED, SYSTEM

    _suite(tmp_path, ALLOCATOR_PROBE)
    doc = _run(tmp_path, rounds=2, max_time=0.01, profile=False, pin_malloc=pin)
    error = doc.benchmarks[0].error
    if pin:
        assert error is None
        assert doc.environment.malloc == PINNED
    else:
        assert error == "round 1/2: ValueError: an 8 MiB block was mmapped"
        assert doc.environment.malloc == SYSTEM


PID_PROBE = """
import os
import perfgate

@perfgate.benchmark
def where():
    if os.environ["PERFGATE_TEST_PARENT_PID"] == str(os.getpid()):
        raise ValueError("measured in the parent process")
    return lambda: None
"""


@pytest.mark.slow
@pytest.mark.parametrize("isolate", [True, False])
def test_isolate_measures_a_single_round_in_a_worker(tmp_path, monkeypatch, isolate):
    monkeypatch.setenv("PERFGATE_TEST_PARENT_PID", str(os.getpid()))
    _suite(tmp_path, PID_PROBE)
    doc = _run(tmp_path, max_time=0.01, profile=False, isolate=isolate)
    error = doc.benchmarks[0].error
    if isolate:
        assert error is None
        assert (
            doc.benchmarks[0].metrics["time"].rounds is None
            or len(doc.benchmarks[0].metrics["time"].rounds) == 1
        )
    else:
        assert error == "ValueError: measured in the parent process"


ORDER_PROBE = """
import perfgate

later_setup_done = []

@perfgate.benchmark
def earlier():
    def run():
        # Only interleaved sampling calls an instance again after a later one was set up.
        if later_setup_done:
            raise ValueError("sampled after the next setup")
    return run

@perfgate.benchmark
def later():
    later_setup_done.append(True)
    return lambda: None
"""


@pytest.mark.slow
@pytest.mark.parametrize("interleave", [True, False])
def test_worker_rounds_interleave_when_asked(tmp_path, interleave):
    _suite(tmp_path, ORDER_PROBE)
    doc = _run(tmp_path, rounds=2, max_time=0.02, profile=False, interleave=interleave)
    by_key = {b.key: b for b in doc.benchmarks}
    assert by_key["later"].error is None
    if interleave:
        assert by_key["earlier"].error == "round 1/2: ValueError: sampled after the next setup"
    else:
        assert by_key["earlier"].error is None
    assert doc.environment.sampling == ("interleaved" if interleave else "sequential")
