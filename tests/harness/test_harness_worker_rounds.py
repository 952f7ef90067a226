"""run_benchmarks with rounds in worker processes on CPU: crashes, pooling, the pinned allocator,
isolation, interleaving. Each test asserts exact facts (errors, op counts, which process ran),
never timings, so each samples for a few hundredths of a second."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")

from run_helpers import Recorder, run_on_cpu, write_suite

from perfgate.results import parse_document

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
    write_suite(tmp_path, CRASHY)
    recorder = Recorder()
    doc = run_on_cpu(tmp_path, rounds=2, max_time=0.03, reporter=recorder)
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

    write_suite(tmp_path, ALLOCATOR_PROBE)
    doc = run_on_cpu(tmp_path, rounds=2, max_time=0.01, profile=False, pin_malloc=pin)
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
    write_suite(tmp_path, PID_PROBE)
    doc = run_on_cpu(tmp_path, max_time=0.01, profile=False, isolate=isolate)
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
    write_suite(tmp_path, ORDER_PROBE)
    doc = run_on_cpu(tmp_path, rounds=2, max_time=0.02, profile=False, interleave=interleave)
    by_key = {b.key: b for b in doc.benchmarks}
    assert by_key["later"].error is None
    if interleave:
        assert by_key["earlier"].error == "round 1/2: ValueError: sampled after the next setup"
    else:
        assert by_key["earlier"].error is None
    assert doc.environment.sampling == ("interleaved" if interleave else "sequential")
