"""Exact counters: flops, op count, kernel counting, compile metrics; and peak memory on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from perfgate.harness.counters import (  # noqa: E402
    CompileWatch,
    count_flops,
    count_ops,
    flops_note,
    uncounted_flop_ops,
)
from perfgate.harness.memory import measure_rss_peak  # noqa: E402


@pytest.mark.parametrize("n", [8, 33, 64])
def test_flops_of_a_matmul_are_2n3(n):
    a = torch.randn(n, n)
    assert count_flops(lambda: a @ a) == 2 * n**3


def test_op_count_of_a_known_callable():
    a = torch.randn(4, 4)
    counted = count_ops(lambda: (a @ a).relu().sum())
    assert counted.total == 3
    assert counted.by_op == {"aten.mm": 1, "aten.relu": 1, "aten.sum": 1}


def test_op_count_is_the_same_under_inference_mode():
    layer = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    plain = count_ops(lambda: layer(x))
    with torch.inference_mode():
        inference = count_ops(lambda: layer(x))
    assert plain.by_op == inference.by_op
    assert "aten.linear" not in plain.by_op  # composite ops are counted as what they run


def test_cpu_sdpa_gets_a_note_about_missing_flops():
    q = torch.randn(1, 2, 8, 4)

    def attention():
        return torch.nn.functional.scaled_dot_product_attention(q, q, q)

    names = count_ops(attention).by_op
    missing = uncounted_flop_ops(names)
    assert missing and all("scaled_dot_product" in m for m in missing)
    assert "not counted" in flops_note(missing)
    assert flops_note(uncounted_flop_ops(["aten.mm", "aten.add"])) is None


def test_kernel_names_skip_copies_and_host_rows():
    from fake_cuda import RecordedProfile

    from perfgate.harness.profile_events import kernel_names

    rec = RecordedProfile()
    mm = rec.op("aten::mm", 0, 10)
    rec.kernel("sm90_gemm_kernel", 1, 5, linked=mm)
    rec.kernel("vectorized_elementwise_kernel", 5, 6, linked=mm)
    rec.kernel("vectorized_elementwise_kernel", 6, 7, linked=mm)
    rec.kernel("Memcpy HtoD (Pageable -> Device)", 7, 8, linked=mm)
    rec.kernel("Memset (Device)", 8, 9, linked=mm)
    assert kernel_names(rec.events()) == {
        "sm90_gemm_kernel": 1,
        "vectorized_elementwise_kernel": 2,
    }


def test_compile_metrics_for_a_compiled_callable():
    watch = CompileWatch()
    watch.start()

    def f(x):
        y = x.sin()
        torch._dynamo.graph_break()
        return y.cos()

    compiled = torch.compile(f, backend="eager")
    x = torch.randn(8)
    watch.after_setup()
    compiled(x)
    watch.after_first_call()
    compiled(x)
    compiled(torch.randn(8, 2))  # a new shape: dynamo compiles the frame again
    metrics = watch.finish(setup_s=0.01, first_call_s=0.5, per_call_s=0.001)
    assert metrics is not None
    assert metrics.graph_breaks == 1
    assert metrics.recompiles >= 1
    assert metrics.compile_wall_time == pytest.approx(0.499)
    # CPU seconds of the first call (this process's clock), less one call: never negative.
    assert metrics.compile_time >= 0.0
    assert metrics.compile_note is None
    assert metrics.compiled_kernels is None  # the eager backend generates no kernels


def test_no_compile_metrics_for_eager_code():
    watch = CompileWatch()
    watch.start()
    watch.after_setup()
    torch.ones(3).add(1)
    watch.after_first_call()
    assert watch.finish(setup_s=0.0, first_call_s=0.0, per_call_s=0.0) is None


MIB = 1 << 20


def test_cpu_peak_memory_sees_a_large_allocation():
    size = 64 * MIB
    result = measure_rss_peak(lambda: torch.ones(size // 4))
    if result.value is None:
        pytest.skip(f"peak RSS cannot be reset here: {result.reason}")
    assert result.method == "rss_hwm"
    # Linux batches RSS accounting per thread (up to 64 pages each), hence the small slack.
    assert size - MIB <= result.value <= 2 * size


def _fake_proc(tmp_path: Path, *, rss_kb: int, hwm_kb: int) -> Path:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "status").write_text(f"Name:\tpython\nVmHWM:\t{hwm_kb} kB\nVmRSS:\t{rss_kb} kB\n")
    return proc


def test_cpu_peak_memory_without_a_writable_clear_refs(tmp_path):
    proc = _fake_proc(tmp_path, rss_kb=1000, hwm_kb=1000)
    (proc / "clear_refs").mkdir()  # writing to it fails like a read-only /proc would
    result = measure_rss_peak(lambda: None, proc=proc)
    assert result.value is None
    assert result.method == "unavailable"
    assert "clear_refs" in result.reason


def test_cpu_peak_memory_refuses_a_peak_that_did_not_reset(tmp_path):
    proc = _fake_proc(tmp_path, rss_kb=1000, hwm_kb=900_000)
    result = measure_rss_peak(lambda: None, proc=proc)
    assert result.value is None
    assert "did not reset" in result.reason


def test_cpu_peak_memory_without_proc(tmp_path):
    result = measure_rss_peak(lambda: None, proc=tmp_path / "missing")
    assert result.value is None
    assert result.method == "unavailable"
