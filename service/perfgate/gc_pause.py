"""Garbage collection paused while a large document is built, across threads.

Decoding and validating a 35 MiB document creates millions of objects that all stay alive, and
each of them makes CPython's cyclic collector walk every object created before: with it running,
parsing a 60,000-benchmark document took three times as long (docs/store.md, "Measured"). None of
these objects form cycles that need the collector; reference counting still frees everything.

The collector's switch is process-wide, so concurrent uploads (the server's threads) share one
count: it is off while any of them is inside `gc_paused`, and back to how it was after the last.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _Pauses:
    """How many blocks are inside `gc_paused`, and whether the collector ran before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.was_enabled = False


_pauses = _Pauses()


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside the block (nor in other threads meanwhile)."""
    with _pauses.lock:
        if _pauses.inside == 0:
            _pauses.was_enabled = gc.isenabled()
            gc.disable()
        _pauses.inside += 1
    try:
        yield
    finally:
        with _pauses.lock:
            _pauses.inside -= 1
            if _pauses.inside == 0 and _pauses.was_enabled:
                gc.enable()
