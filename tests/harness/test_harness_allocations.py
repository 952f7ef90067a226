"""Exact allocation metrics (allocated_bytes, peak_allocated_bytes) and cold compiles on CPU."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from perfgate.harness.allocations import (  # noqa: E402
    OUTSIDE_OPS,
    Span,
    call_allocations,
    measure_cpu_allocations,
)
from perfgate.harness.api import BenchmarkInstance, BenchmarkSpec  # noqa: E402
from perfgate.harness.compile_cache import (  # noqa: E402
    CACHE_VARIABLES,
    COLD_METHOD,
    PrivateCompileCache,
)
from perfgate.harness.discovery import discover  # noqa: E402
from perfgate.harness.entries import entry_json  # noqa: E402
from perfgate.harness.measure import MeasureSettings, run_instances  # noqa: E402
from perfgate.harness.progress import NullReporter  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "benchmarks"


def test_peak_is_above_the_level_at_the_start_and_allocations_are_charged_to_outer_ops():
    ops = [
        Span("aten::clone", 10, 20, 1),
        Span("aten::empty_strided", 11, 12, 1),  # inside clone: charged to clone
        Span("aten::layer_norm", 30, 40, 1),
    ]
    memory = [
        (5, -100),  # frees memory held before the call: the level drops below the start
        (11, 64),
        (31, 64),
        (32, 8),
        (50, 16),  # between ops (a scalar wrapped into a tensor)
        (60, -64),
    ]
    allocated, peak, by_op = call_allocations(memory, ops)
    assert allocated == 64 + 64 + 8 + 16
    # -100, -36, +28, +36, +52, -12: the peak above the start is 52
    assert peak == 52
    assert by_op == Counter({"aten::clone": 64, "aten::layer_norm": 72, OUTSIDE_OPS: 16})


def test_a_planted_copy_adds_exactly_its_size_and_names_the_op():
    x = torch.randn(512, 768)
    norm = torch.nn.LayerNorm(768)

    @torch.no_grad()
    def plain() -> torch.Tensor:
        return norm(x)

    @torch.no_grad()
    def planted() -> torch.Tensor:
        return norm(x.clone())

    plain(), planted()
    base = measure_cpu_allocations(plain)
    head = measure_cpu_allocations(planted)
    size = x.numel() * x.element_size()
    assert head.allocated - base.allocated == size
    # The copy and the output are live together; the output alone before.
    assert head.peak - base.peak == size
    assert base.consistent and head.consistent
    assert head.by_op - base.by_op == Counter({"aten::clone": size})
    note = head.note()
    assert note is not None and f"{size} B aten::clone" in note


def test_freed_temporaries_count_in_allocated_bytes_but_not_all_in_the_peak():
    x = torch.randn(1 << 16)  # 256 KiB

    def chain() -> torch.Tensor:
        # Three outputs, at most two alive at once (no Python scalars: each would allocate a
        # small tensor of its own).
        return x.neg().exp().sin()

    chain()
    counted = measure_cpu_allocations(chain)
    size = x.numel() * x.element_size()
    assert counted.allocated == 3 * size
    assert counted.peak == 2 * size


def _example_instances() -> list[BenchmarkInstance]:
    return [item for item in discover([EXAMPLES]).items if isinstance(item, BenchmarkInstance)]


@pytest.mark.parametrize("instance", _example_instances(), ids=lambda i: i.key)
def test_exact_memory_metrics_repeat_exactly_for_every_example(instance):
    """A/A: a fresh setup each time, as in separate runs; the figures must not move at all.

    A compiled example is set up once (a cold compile here takes half a minute) and measured
    three times; bench/exact_memory_aa.py runs every example in 10 separate processes.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    compiled = "compile" in instance.spec.tags
    cache = PrivateCompileCache()
    seen = set()
    fn = None
    try:
        for _ in range(3):
            if fn is None or not compiled:
                cache.fresh()
                torch.manual_seed(0)
                fn = instance.call_setup(torch.device("cpu"))
                fn()
            counted = measure_cpu_allocations(fn)
            seen.add((counted.allocated, counted.peak, tuple(sorted(counted.by_op.items()))))
    finally:
        fn = None
        cache.close()
        torch.set_num_threads(threads)
    assert len(seen) == 1, seen
    allocated, peak, _ = seen.pop()
    assert allocated >= peak > 0


def _recording_instance(name: str, seen: list[dict[str, str | None]]) -> BenchmarkInstance:
    def setup():
        from torch._inductor import config
        from torch._inductor.runtime.cache_dir_utils import cache_dir

        directory = cache_dir()  # where inductor would write what this setup compiles
        seen.append(
            {
                **{variable: os.environ.get(variable) for variable in CACHE_VARIABLES},
                "inductor": directory,
                "empty": str(not any(Path(directory).iterdir())),
                # Inductor's precompiled headers are machine-wide, whatever the cache directory.
                "precompiled_headers": str(config.cpp_cache_precompile_headers),
            }
        )
        compiled = torch.compile(lambda x: x.sin() + 1, backend="eager")
        x = torch.randn(8)
        return lambda: compiled(x)

    spec = BenchmarkSpec(name=name, setup=setup, params={})
    return BenchmarkInstance(spec=spec, params={}, key=name)


def test_every_instance_compiles_against_an_empty_private_cache(monkeypatch, tmp_path):
    own = tmp_path / "my-inductor-cache"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(own))
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    seen: list[dict[str, str | None]] = []
    results = run_instances(
        [_recording_instance("first", seen), _recording_instance("second", seen)],
        device=torch.device("cpu"),
        settings=MeasureSettings(max_time=0.05, profile=False),
        reporter=NullReporter(),
    )
    first, second = seen
    for recorded in seen:
        directory = Path(str(recorded["TORCHINDUCTOR_CACHE_DIR"]))
        assert directory.parent.name.startswith("perfgate-compile-")
        assert recorded["inductor"] == str(directory)
        assert recorded["TRITON_CACHE_DIR"] == str(directory / "triton")
        assert recorded["empty"] == "True"
        assert recorded["precompiled_headers"] == "False"
    assert first["TORCHINDUCTOR_CACHE_DIR"] != second["TORCHINDUCTOR_CACHE_DIR"]
    # The person's own cache setting is back, the private directories are gone.
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == str(own)
    assert "TRITON_CACHE_DIR" not in os.environ
    assert not Path(str(first["TORCHINDUCTOR_CACHE_DIR"])).parent.exists()
    for result in results.values():
        metrics = entry_json(result.entry)["metrics"]
        assert metrics["compile_time"]["method"] == COLD_METHOD
        assert len(metrics["compile_time"]["samples"]) == 1
        assert metrics["graph_breaks"]["exact"] and metrics["recompiles"]["exact"]


def test_a_cpu_run_records_exact_allocations_and_peak_rss_as_informational():
    x = torch.randn(256, 256)
    spec = BenchmarkSpec(name="copy", setup=lambda: x.clone, params={})
    instance = BenchmarkInstance(spec=spec, params={}, key="copy")
    results = run_instances(
        [instance],
        device=torch.device("cpu"),
        settings=MeasureSettings(max_time=0.05, profile=False),
        reporter=NullReporter(),
    )
    metrics = entry_json(results["copy"].entry)["metrics"]
    size = x.numel() * x.element_size()
    assert metrics["allocated_bytes"] == {
        "unit": "B",
        "direction": "lower",
        "value": size,
        "exact": True,
        "note": f"allocated per call by op:\n  {size} B aten::clone",
        "method": "cpu_profiler",
    }
    assert metrics["peak_allocated_bytes"]["value"] == size
    assert metrics["peak_allocated_bytes"]["exact"] is True
    if "peak_memory" in metrics:  # absent where peak RSS cannot be reset
        assert metrics["peak_memory"]["method"] == "rss_hwm"
        assert "exact" not in metrics["peak_memory"]
        assert metrics["peak_memory"]["note"].startswith("informational")
