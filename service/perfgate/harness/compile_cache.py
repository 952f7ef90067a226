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

And it compiles without precompiled headers (`TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS=0`,
and inductor's `cpp_cache_precompile_headers`). Inductor keeps its precompiled C++ header in a
machine-wide directory on purpose, outside TORCHINDUCTOR_CACHE_DIR: the first compile on a
machine builds it (155 MB, about 2.7 s of CPU for `mlp_compiled`) and every later process on
that machine reuses it, so a private cache alone left compile_time 35% lower in every process
after the first (docs/harness.md). Without the header every process does the same work.
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
#: compile without precompiled headers (`compile_clock.py`). `cold_user_cpu`, before it, reused
#: a machine-wide precompiled header whenever an earlier process had built one.
COLD_METHOD = "cold_user_cpu_no_pch"
#: The `method` of compile_wall_time: wall seconds of the same cold compile (informational).
COLD_WALL_METHOD = "cold_wall"
#: Inductor's compile worker count, for the measuring process.
COMPILE_THREADS = "1"
#: What each instance compiles under: the environment variable with its text, and the config
#: attribute with its value (inductor reads the variable only when it is first imported).
_INDUCTOR_SETTINGS: tuple[tuple[str, str, str, object], ...] = (
    ("TORCHINDUCTOR_COMPILE_THREADS", COMPILE_THREADS, "compile_threads", int(COMPILE_THREADS)),
    ("TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS", "0", "cpp_cache_precompile_headers", False),
)


class PrivateCompileCache:
    """Fresh cache directories per instance under one temporary root; `close` puts the
    environment back and deletes them."""

    def __init__(self) -> None:
        self._root: Path | None = None
        #: The variables' values before the first instance (None: unset), put back by `close`.
        self._saved: dict[str, str | None] | None = None
        self._count = 0
        self.current: Path | None = None
        #: inductor's config values before the first instance that found it loaded.
        self._config: dict[str, object] = {}

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
                **{variable: text for variable, text, _, _ in _INDUCTOR_SETTINGS},
            }
        )
        if self._saved is None:
            self._saved = saved
        for _, _, name, value in _INDUCTOR_SETTINGS:
            previous = _set_inductor_config(name, value)
            if previous is not _UNSET:
                self._config.setdefault(name, previous)
        clear_inductor_caches()
        self.current = directory
        return directory

    def close(self) -> None:
        """Put the person's cache variables back and delete the private directories."""
        if self._saved is not None:
            restore_environment(self._saved)
            self._saved = None
        for name, value in self._config.items():
            _set_inductor_config(name, value)
        self._config = {}
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


def _set_inductor_config(name: str, value: object) -> object:
    """Set one of inductor's config values if its config is loaded (it reads the environment
    only when first imported); returns the value before, `_UNSET` when not loaded or when this
    torch has no such setting."""
    config = sys.modules.get("torch._inductor.config")
    if config is None or not hasattr(config, name):
        return _UNSET
    previous = getattr(config, name)
    setattr(config, name, value)
    return previous
