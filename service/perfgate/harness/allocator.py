"""Pin glibc malloc's thresholds in measuring processes, so large allocations behave alike.

glibc serves a large allocation with its own mmap and returns it to the kernel on free, then raises
its "mmap threshold" the first time such a chunk is freed. Whether a process ends up reusing heap
memory or page-faulting fresh memory on every call depends on the order of its early frees, so a
benchmark that allocates multi-MiB temporaries (any eager elementwise chain) lands in one of two
modes per process. Measured here: 1M-element `tanh(x*1.5+0.5).mul(x).sigmoid()` took 7.5 ms in some
processes and 12-21 ms in others; with the thresholds pinned every process took the fast path
(docs/harness.md). Pinning removes that coin flip from the measurement; `--system-malloc` keeps
glibc's dynamic behaviour for people who want exactly what their program sees in production.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

# mallopt parameter numbers from glibc's <malloc.h>.
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# glibc refuses an mmap threshold above HEAP_MAX / 2 (32 MiB on 64-bit), so ask for exactly that.
MMAP_THRESHOLD = 32 * 1024 * 1024
# Keep freed heap memory instead of trimming it back to the kernel after every large free.
TRIM_THRESHOLD = 1024 * 1024 * 1024

PINNED = f"glibc mmap_threshold={MMAP_THRESHOLD >> 20}MiB trim_threshold={TRIM_THRESHOLD >> 20}MiB"
SYSTEM = "system"


def pin_malloc_thresholds() -> str:
    """Fix the thresholds in this process; returns what the environment section records.

    Does nothing (and says "system") where the C library is not glibc or refuses the settings.
    """
    if not sys.platform.startswith("linux"):
        return SYSTEM
    name = ctypes.util.find_library("c") or "libc.so.6"
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and friends have no mallopt
        return SYSTEM
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt answers 1 on success; setting the mmap threshold also turns off its dynamic raise.
    if mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) != 1:
        return SYSTEM
    if mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD) != 1:
        return SYSTEM
    return PINNED
