"""Pinned malloc thresholds: large temporaries come from the heap in every measuring process."""

from __future__ import annotations

import subprocess
import sys

import pytest

from perfgate.harness.allocator import PINNED, SYSTEM

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's mallopt is Linux-only"
)

# Allocates an 8 MiB block and reports whether glibc served it with its own mmap (mallinfo2's
# hblks counts such blocks; the interpreter holds a few of its own). Runs in a fresh process so
# its allocator starts unconfigured.
PROBE = """
import ctypes, sys
from perfgate.harness.allocator import pin_malloc_thresholds
state = pin_malloc_thresholds() if sys.argv[1] == "pin" else "system"

class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
        "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
libc.mallinfo2.restype = MallInfo2
before = libc.mallinfo2().hblks
block = libc.malloc(8 << 20)
print(state, libc.mallinfo2().hblks - before)
libc.free(block)
"""


def _probe(mode: str) -> tuple[str, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    ).stdout.split()
    return " ".join(out[:-1]), int(out[-1])


def test_pinning_keeps_large_blocks_on_the_heap() -> None:
    state, mmapped = _probe("pin")
    assert state == PINNED
    assert mmapped == 0


def test_without_pinning_glibc_mmaps_large_blocks() -> None:
    # The control: the probe can see the difference, so the test above can fail.
    state, mmapped = _probe("system")
    assert state == SYSTEM
    assert mmapped == 1
