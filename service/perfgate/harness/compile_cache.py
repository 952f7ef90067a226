"""Cold compiles: every instance compiles against an empty, private torch.compile cache.

Inductor, AOTAutograd and Triton keep their compiled artefacts on disk (TORCHINDUCTOR_CACHE_DIR,
by default one per user under /tmp, and TRITON_CACHE_DIR) and in memory. A warm cache turns a
16 s compile into 1.4 s (docs/harness.md), so compile_time would say more about which runs came
before than about the code. Each instance therefore gets a fresh directory for both, inside one
directory private to the measuring process, and inductor's in-memory caches are cleared; dynamo's
own state is reset by `CompileWatch.start`. The person's own cache is never read or written.

The instance also compiles on one thread (`TORCHINDUCTOR_COMPILE_THREADS=1`, and inductor's
`compile_threads` when it is loaded): a pool of compile workers outlives the compile, so the CPU
seconds it spends are not in the measuring process's accounts (`compile_clock.py`), and which
worker picks up which kernel changes from run to run.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from perfgate.config import replace_environment, restore_environment

#: Where inductor (FX graphs, AOTAutograd, generated code) and Triton keep compiled artefacts.
CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
_UNSET = object()
#: What a compile_time measured this way states as its `method`: user CPU seconds of a cold
#: compile (`compile_clock.py`).
COLD_METHOD = "cold_user_cpu"
#: The `method` of compile_wall_time: wall seconds of the same cold compile (informational).
COLD_WALL_METHOD = "cold_wall"
#: Inductor's compile worker count, for the measuring process.
COMPILE_THREADS = "1"


class PrivateCompileCache:
    """Fresh cache directories per instance under one temporary root; `close` puts the
    environment back and deletes them."""

    def __init__(self) -> None:
        self._root: Path | None = None
        #: The variables' values before the first instance (None: unset), put back by `close`.
        self._saved: dict[str, str | None] | None = None
        self._count = 0
        self.current: Path | None = None
        #: inductor's `compile_threads` before the first instance (when it was loaded then).
        self._threads: object = _UNSET

    def fresh(self) -> Path:
        """Point the cache variables at a new, empty directory and forget in-memory artefacts."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="perfgate-compile-"))
        self._count += 1
        directory = self._root / str(self._count)
        directory.mkdir()
        # Inductor reads them whenever it needs its cache, so setting them now is enough.
        saved = replace_environment(
            {
                "TORCHINDUCTOR_CACHE_DIR": str(directory),
                "TRITON_CACHE_DIR": str(directory / "triton"),
                "TORCHINDUCTOR_COMPILE_THREADS": COMPILE_THREADS,
            }
        )
        if self._saved is None:
            self._saved = saved
        previous = _set_compile_threads(int(COMPILE_THREADS))
        if self._threads is _UNSET:
            self._threads = previous
        clear_inductor_caches()
        self.current = directory
        return directory

    def close(self) -> None:
        """Put the person's cache variables back and delete the private directories."""
        if self._saved is not None:
            restore_environment(self._saved)
            self._saved = None
        if self._threads is not _UNSET:
            _set_compile_threads(self._threads)
            self._threads = _UNSET
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
        self.current = None


def clear_inductor_caches() -> None:
    """Drop inductor's in-memory caches (loaded kernels, compiled graphs), if it is loaded.

    Never imports inductor: a run that compiles nothing does not pay for it.
    """
    if "torch._inductor.utils" not in sys.modules:
        return
    from torch._inductor import utils

    clear = getattr(utils, "clear_caches", None) or getattr(utils, "clear_inductor_caches", None)
    if clear is not None:
        clear()


def _set_compile_threads(value: object) -> object:
    """Set inductor's `compile_threads` if its config is loaded (it reads the environment
    variable only when first imported); returns the value before, `_UNSET` when not loaded."""
    config = sys.modules.get("torch._inductor.config")
    if config is None or value is _UNSET:
        return _UNSET
    previous = getattr(config, "compile_threads", _UNSET)
    setattr(config, "compile_threads", value)  # noqa: B010  (a module found at run time)
    return previous
