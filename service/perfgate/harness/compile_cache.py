"""Cold compiles: every instance compiles against an empty, private torch.compile cache.

Inductor, AOTAutograd and Triton keep their compiled artefacts on disk (TORCHINDUCTOR_CACHE_DIR,
by default one per user under /tmp, and TRITON_CACHE_DIR) and in memory. A warm cache turns a
16 s compile into 1.4 s (docs/harness.md), so compile_time would say more about which runs came
before than about the code. Each instance therefore gets a fresh directory for both, inside one
directory private to the measuring process, and inductor's in-memory caches are cleared; dynamo's
own state is reset by `CompileWatch.start`. The person's own cache is never read or written.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

#: Where inductor (FX graphs, AOTAutograd, generated code) and Triton keep compiled artefacts.
CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
#: What a compile_time measured this way states as its `method`.
COLD_METHOD = "cold_private_cache"


class PrivateCompileCache:
    """Fresh cache directories per instance under one temporary root; `close` puts the
    environment back and deletes them."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._saved: dict[str, str | None] = {}
        self._count = 0

    @property
    def current(self) -> Path | None:
        """The directory the instance being set up compiles into (None before the first)."""
        value = os.environ.get(CACHE_VARIABLES[0])
        if self._root is None or value is None:
            return None
        return Path(value)

    def fresh(self) -> Path:
        """Point the cache variables at a new, empty directory and forget in-memory artefacts."""
        if self._root is None:
            self._root = Path(tempfile.mkdtemp(prefix="perfgate-compile-"))
            self._saved = {name: os.environ.get(name) for name in CACHE_VARIABLES}
        self._count += 1
        directory = self._root / str(self._count)
        directory.mkdir()
        # Read by inductor whenever it needs its cache, so setting them now is enough.
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(directory)
        os.environ["TRITON_CACHE_DIR"] = str(directory / "triton")
        clear_inductor_caches()
        return directory

    def close(self) -> None:
        if self._root is None:
            return
        for name, value in self._saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self._root, ignore_errors=True)
        self._root = None


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
