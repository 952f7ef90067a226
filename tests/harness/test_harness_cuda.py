"""CUDA code paths of the harness, driven through the simulated device in fake_cuda.py."""

from __future__ import annotations

import gc

import pytest

torch = pytest.importorskip("torch")

from fake_cuda import install  # noqa: E402

from perfgate.harness.memory import measure_peak_memory  # noqa: E402
from perfgate.harness.timing import CpuTimer, CudaEventTimer, make_synchronize, make_timer  # noqa: E402

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
