"""perfgate: catch performance regressions in PyTorch code before they merge.

`import perfgate` never imports torch: the benchmark decorator records what to run, and torch is
imported only when a benchmark actually runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "benchmark", "detect_change_points", "from_measurements"]

if TYPE_CHECKING:
    from perfgate.harness.api import benchmark
    from perfgate.imports import from_measurements
    from perfgate.stats.changepoints import detect_change_points


def __getattr__(name: str) -> Any:
    # Lazy, so that `import perfgate` stays cheap and free of side effects.
    if name == "benchmark":
        from perfgate.harness.api import benchmark

        return benchmark
    if name == "detect_change_points":
        from perfgate.stats.changepoints import detect_change_points

        return detect_change_points
    if name == "from_measurements":
        from perfgate.imports import from_measurements

        return from_measurements
    raise AttributeError(f"module 'perfgate' has no attribute {name!r}")
