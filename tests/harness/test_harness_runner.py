"""run_benchmarks end to end on CPU in this process: the document, error entries, usage errors;
merging rounds (worker processes: test_harness_worker_rounds.py)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from run_helpers import SHA, Recorder, run_on_cpu, write_suite

from perfgate.errors import UsageError
from perfgate.harness.rounds import merge_rounds
from perfgate.harness.runner import resolve_device
from perfgate.results import Benchmark, parse_document

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


@pytest.mark.parametrize("interleave", [None, False])
def test_a_run_produces_a_valid_document_with_all_metrics(tmp_path, interleave):
    write_suite(tmp_path, SUITE)
    (tmp_path / "benchmarks" / "bench_broken.py").write_text("import no_such_module_here\n")
    recorder = Recorder()
    doc = run_on_cpu(
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
    write_suite(tmp_path, SUITE)
    doc = run_on_cpu(tmp_path, filter="mm and not 32", profile=False)
    assert [b.key for b in doc.benchmarks] == ["mm[n=16]"]
    assert doc.benchmarks[0].profile is None


def test_an_empty_selection_is_a_usage_error(tmp_path):
    write_suite(tmp_path, SUITE)
    with pytest.raises(UsageError, match="matches none"):
        run_on_cpu(tmp_path, filter="nothing_like_this")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no benchmarks"):
        run_on_cpu(tmp_path, paths=["empty"])


def test_bad_options_are_usage_errors(tmp_path):
    write_suite(tmp_path, SUITE)
    with pytest.raises(UsageError, match="--rounds"):
        run_on_cpu(tmp_path, rounds=0)
    with pytest.raises(UsageError, match="--max-time"):
        run_on_cpu(tmp_path, max_time=-1)
    with pytest.raises(UsageError, match="--device"):
        run_on_cpu(tmp_path, device="tpu")
    # CUDA-only timing modes are refused on the CPU, not silently ignored.
    with pytest.raises(UsageError, match="--cold-cache and --device-timing queued time a CUDA"):
        run_on_cpu(tmp_path, device="cpu", device_timing="queued")
    with pytest.raises(UsageError, match="this run measures on cpu"):
        run_on_cpu(tmp_path, device="cpu", cold_cache=True)


def test_device_resolution_on_a_cpu_machine():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"
    for choice in ("cuda", "cuda:1"):
        with pytest.raises(UsageError, match="CUDA is not available"):
            resolve_device(choice)


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
