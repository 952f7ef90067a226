"""What a compile costs: the process's user CPU seconds (its compiler subprocesses included)
and the kernels inductor generated.

On a shared runner the wall time of a compile follows the machine's load (docs/harness.md,
"Cold compiles"): the process waits for a core as often as it computes. The CPU seconds it
spends do not wait, so they are what two runs can compare. Inductor compiles its C++ kernels in
`g++` subprocesses that it waits for, so their CPU time is in the process's `RUSAGE_CHILDREN`
once they end; compile workers would not be (they outlive the compile), which is why the
measuring process compiles with one thread (`harness/compile_cache.py`).

User seconds only: the system seconds (the kernel starting `g++`, faulting in its pages, file
I/O) moved by a third between identical compiles on the shared dev VM while the user seconds
agreed within about 1% (docs/harness.md).
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class ClockReading:
    """One moment of the process: wall clock and user CPU seconds of the process and of its
    children that ended and were waited for."""

    wall: float
    cpu: float

    def since(self, earlier: ClockReading) -> ClockReading:
        return ClockReading(wall=self.wall - earlier.wall, cpu=self.cpu - earlier.cpu)


def read_clock() -> ClockReading:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = own.ru_utime + children.ru_utime
    return ClockReading(wall=time.perf_counter(), cpu=cpu)


def generated_kernels() -> int | None:
    """Kernels inductor generated in this process so far; None when inductor is not loaded.

    Never imports inductor: a benchmark that does not compile with it does not pay for it.
    """
    metrics = sys.modules.get("torch._inductor.metrics")
    if metrics is None:
        return None
    return int(getattr(metrics, "generated_kernel_count", 0))
