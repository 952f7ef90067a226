"""Peak memory of one call: the CUDA caching allocator's peak, or peak RSS growth on CPU."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.harness.devices import is_cuda
from perfgate.harness.sampling import gc_paused

PROC_SELF = Path("/proc/self")
# After a reset, VmHWM must sit at VmRSS; this much slack covers pages touched in between.
_RESET_SLACK = 256 * 1024


@dataclass(frozen=True)
class MemoryResult:
    """Bytes the call needed at its peak beyond what was held before it, and how that was known.

    `value` is None when no honest figure could be taken; `reason` then says why.
    """

    value: int | None
    method: str
    reason: str | None = None
    #: CUDA only: growth of the caching allocator's reserved memory (what the call needed the
    #: device to hand over, fragmentation and rounding included).
    reserved: int | None = None


def measure_cuda_peak(fn: Callable[[], object], device: Any) -> MemoryResult:
    """max_memory_allocated after a reset, minus what was allocated before the call; the same
    for reserved memory after emptying the allocator's cache."""
    import torch

    torch.cuda.synchronize(device)
    gc.collect(1)
    # Cached free blocks would serve the call without any growth of reserved memory.
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    before = torch.cuda.memory_allocated(device)
    reserved_before = torch.cuda.memory_reserved(device)
    # A collection inside the call would free memory and hide part of the peak.
    with gc_paused():
        fn()
        torch.cuda.synchronize(device)
    peak = torch.cuda.max_memory_allocated(device)
    reserved_peak = torch.cuda.max_memory_reserved(device)
    return MemoryResult(
        value=max(0, int(peak - before)),
        method="cuda_allocator",
        reserved=max(0, int(reserved_peak - reserved_before)),
    )


def read_status(proc: Path = PROC_SELF) -> dict[str, int]:
    """VmRSS and VmHWM of the process in bytes (from /proc/<pid>/status)."""
    text = (proc / "status").read_text()
    out = {}
    for field in ("VmRSS", "VmHWM"):
        match = re.search(rf"^{field}:\s+(\d+)\s*kB", text, re.MULTILINE)
        if match is None:
            raise OSError(f"{field} missing from {proc / 'status'}")
        out[field] = int(match.group(1)) * 1024
    return out


def _release_free_heap() -> None:
    # glibc keeps freed heap pages resident; a call that reuses them would show no RSS growth.
    # malloc_trim(0) returns them to the kernel so the next call's allocations fault pages in again.
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        libc = ctypes.CDLL(name)
        trim = getattr(libc, "malloc_trim", None)
        if trim is not None:
            trim(0)
    except OSError:
        return


def measure_rss_peak(fn: Callable[[], object], proc: Path = PROC_SELF) -> MemoryResult:
    """Growth of the peak RSS (VmHWM) over the RSS before the call, after resetting the peak.

    Writing "5" to /proc/self/clear_refs resets VmHWM to the current RSS (Linux >= 4.0). When
    that fails, or the peak did not actually reset, no value is reported: the old peak would say
    nothing about this call.
    """
    if not (proc / "status").exists():
        return MemoryResult(
            value=None,
            method="unavailable",
            reason=f"{proc / 'status'} does not exist (not Linux?)",
        )
    gc.collect(1)
    _release_free_heap()
    try:
        (proc / "clear_refs").write_text("5")
        before = read_status(proc)
    except OSError as exc:
        return MemoryResult(
            value=None,
            method="unavailable",
            reason=f"cannot reset the peak RSS via {proc / 'clear_refs'}: {exc}",
        )
    if before["VmHWM"] > before["VmRSS"] + _RESET_SLACK:
        return MemoryResult(
            value=None,
            method="unavailable",
            reason="the kernel did not reset VmHWM (clear_refs '5' unsupported)",
        )
    # A collection inside the call would free memory and hide part of the peak.
    with gc_paused():
        fn()
    after = read_status(proc)
    return MemoryResult(value=max(0, after["VmHWM"] - before["VmRSS"]), method="rss_hwm")


def measure_peak_memory(fn: Callable[[], object], device: Any) -> MemoryResult:
    if is_cuda(device):
        return measure_cuda_peak(fn, device)
    return measure_rss_peak(fn)
