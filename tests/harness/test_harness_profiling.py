"""The profile pass: real rows on CPU, aggregation rules, the device-time name fallback, traces."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from perfgate.harness.profiling import (  # noqa: E402
    active_calls,
    aggregate,
    profile_callable,
    self_device_time_us,
    trace_file_name,
)


def test_profile_of_a_matmul_has_aten_mm_per_call(tmp_path):
    a = torch.randn(64, 64)
    trace = tmp_path / "t" / "mm.json"
    result = profile_callable(
        lambda: a @ a, on_device=False, synchronize=lambda: None, active=3, trace_path=trace
    )
    rows = {row["op"]: row for row in result.ops}
    assert "aten::mm" in rows
    assert rows["aten::mm"]["count"] == 1  # 3 calls profiled, divided back to one
    assert rows["aten::mm"]["flops"] == 2 * 64**3
    assert rows["aten::mm"]["self_cpu_us"] > 0
    assert not any(op.startswith("ProfilerStep") for op in rows)
    assert result.trace == str(trace)
    assert "traceEvents" in json.loads(trace.read_text())


def test_device_time_reads_the_new_name():
    assert self_device_time_us(SimpleNamespace(self_device_time_total=12.5)) == 12.5


def test_device_time_falls_back_to_the_pre_2_4_name():
    old_style = SimpleNamespace(self_cuda_time_total=7.0)
    assert self_device_time_us(old_style) == 7.0
    assert self_device_time_us(SimpleNamespace()) == 0.0


def _row(key, cpu, *, device=0.0, count=2, flops=0, kind="CPU"):
    return SimpleNamespace(
        key=key,
        count=count,
        self_cpu_time_total=cpu,
        self_device_time_total=device,
        flops=flops,
        device_type=SimpleNamespace(name=kind),
    )


def test_aggregate_keeps_top_20_and_every_op_over_one_percent():
    rows = [_row(f"op{i:02d}", cpu=1000.0 - i) for i in range(25)]
    rows.append(_row("ProfilerStep#3", cpu=99999.0))
    rows.append(_row("some_cuda_kernel", cpu=0.0, device=500.0, kind="CUDA"))
    out = aggregate(rows, calls=2, on_device=False)
    # 25 ops of ~4% each: all above 1%, so all kept even past the top 20.
    assert len(out) == 25
    assert out[0] == {
        "op": "op00",
        "count": 1.0,
        "self_cpu_us": 500.0,
        "self_device_us": 0.0,
        "flops": 0.0,
    }
    tiny = [_row("big", cpu=1e6)] + [_row(f"t{i:02d}", cpu=1.0) for i in range(30)]
    kept = aggregate(tiny, calls=1, on_device=False)
    assert len(kept) == 20
    assert kept[0]["op"] == "big"


def test_aggregate_sorts_by_device_time_on_gpu():
    rows = [_row("cpu_heavy", cpu=100.0, device=1.0), _row("gpu_heavy", cpu=1.0, device=100.0)]
    assert [r["op"] for r in aggregate(rows, calls=1, on_device=True)] == ["gpu_heavy", "cpu_heavy"]


def test_trace_file_names_are_safe_and_distinct():
    a = trace_file_name("matmul[dtype=float32,n=256]")
    b = trace_file_name("matmul[dtype=float32;n=256]")
    assert a != b
    assert a.startswith("matmul_dtype=float32_n=256-") and a.endswith(".json")
    assert "/" not in trace_file_name("../../etc/passwd")


def test_active_calls_shrink_for_slow_calls():
    assert active_calls(1e-6) == 5
    assert active_calls(0.1) == 2
    assert active_calls(10.0) == 1
