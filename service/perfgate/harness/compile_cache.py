"""Cold compiles: every instance compiles against an empty, private torch.compile cache.

Inductor, AOTAutograd and Triton keep their compiled artefacts on disk (TORCHINDUCTOR_CACHE_DIR,
by default one per user under /tmp, and TRITON_CACHE_DIR) and in memory. A warm cache turns a
16 s compile into 1.4 s (docs/harness.md), so compile_time would say more about which runs came
before than about the code. Each instance therefore gets a fresh directory for both, inside one
directory private to the measuring process, and inductor's in-memory caches are cleared; dynamo's
own state is reset by `CompileWatch.start`. The person's own cache is never read or written.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from perfgate.config import replace_environment, restore_environment

#: Where inductor (FX graphs, AOTAutograd, generated code) and Triton keep compiled artefacts.
CACHE_VARIABLES = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
#: What a compile_time measured this way states as its `method`.
COLD_METHOD = "cold_private_cache"


class PrivateCompileCache:
    """Fresh cache directories per instance under one temporary root; `close` puts the
    environment back and deletes them."""

    def __init__(self) -> None:
        self._root: Path | None = None
        #: The variables' values before the first instance (None: unset), put back by `close`.
        self._saved: dict[str, str | None] | None = None
        self._count = 0
        self.current: Path | None = None

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
            }
        )
        if self._saved is None:
            self._saved = saved
        clear_inductor_caches()
        self.current = directory
        return directory

    def close(self) -> None:
        """Put the person's cache variables back and delete the private directories."""
        if self._saved is not None:
            restore_environment(self._saved)
            self._saved = None
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
