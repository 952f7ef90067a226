"""The profile pass: torch.profiler over a few calls, aggregated into per-call rows per op."""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfgate.harness.profile_events import HARNESS_MARK, aggregate_events, self_device_time_us

__all__ = ["aggregate", "profile_callable", "self_device_time_us", "trace_file_name"]

TOP_OPS = 20
MIN_SHARE = 0.01


@dataclass(frozen=True)
class ProfileResult:
    ops: list[dict[str, Any]]
    trace: str | None


def aggregate(events: Sequence[Any], *, calls: int, on_device: bool) -> list[dict[str, Any]]:
    """Per-call rows from `prof.events()` over `calls` profiled calls (see `aggregate_events`)."""
    return aggregate_events(
        events, calls=calls, on_device=on_device, top=TOP_OPS, min_share=MIN_SHARE
    )


def trace_file_name(key: str) -> str:
    """A file name for an instance's trace: readable, filesystem-safe, unique per key."""
    safe = re.sub(r"[^A-Za-z0-9._=-]+", "_", key).strip("_")[:120] or "benchmark"
    return f"{safe}-{hashlib.sha1(key.encode()).hexdigest()[:8]}.json"


def active_calls(per_call_s: float, budget_s: float = 0.25, most: int = 5) -> int:
    """How many calls to profile: up to `most`, fewer when calls are slow."""
    return max(1, min(most, int(budget_s / per_call_s) if per_call_s > 0 else most))


@contextmanager
def quiet_profiler_chatter() -> Iterator[None]:
    """Drop the `USDT:`/`STAGE:` lines Kineto writes to fd 2 for every profiling session.

    They would scroll the progress display once per instance. Everything else written to stderr
    meanwhile is passed on unchanged once the pass is over.
    """
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        yield
        return
    sys.stderr.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as capture:
        os.dup2(capture.fileno(), fd)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, fd)
            os.close(saved)
            capture.seek(0)
            kept = [
                line
                for line in capture.read().splitlines(keepends=True)
                if not line.startswith((b"USDT:", b"STAGE:"))
            ]
            if kept:
                os.write(fd, b"".join(kept))


def profile_callable(
    fn: Callable[[], object],
    *,
    on_device: bool,
    synchronize: Callable[[], None],
    active: int,
    trace_path: Path | None = None,
) -> ProfileResult:
    """Profile `active` calls after one skipped and one warm-up step of the schedule."""
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    activities = [ProfilerActivity.CPU]
    if on_device:
        activities.append(ProfilerActivity.CUDA)
    captured: dict[str, Any] = {}

    def ready(prof: Any) -> None:
        captured["ops"] = aggregate(prof.events(), calls=active, on_device=on_device)
        if trace_path is not None:
            trace_path.parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(trace_path))

    with (
        quiet_profiler_chatter(),
        profile(
            activities=activities,
            schedule=schedule(wait=1, warmup=1, active=active, repeat=1),
            on_trace_ready=ready,
            record_shapes=True,
            with_flops=True,
        ) as prof,
    ):
        for _ in range(2 + active):
            fn()
            # Each step's kernels must finish inside the step, or they land in the next one.
            # Marked, so the profile can leave out this cudaDeviceSynchronize (not the code's).
            with record_function(HARNESS_MARK):
                synchronize()
            prof.step()
    if "ops" not in captured:
        raise RuntimeError("the profiler produced no trace")
    return ProfileResult(
        ops=captured["ops"], trace=str(trace_path) if trace_path is not None else None
    )
