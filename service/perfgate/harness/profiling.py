"""The profile pass: torch.profiler over a few calls, aggregated into per-call rows per op."""

from __future__ import annotations

import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOP_OPS = 20
MIN_SHARE = 0.01


@dataclass(frozen=True)
class ProfileResult:
    ops: list[dict[str, Any]]
    trace: str | None


def self_device_time_us(row: Any) -> float:
    """Self device time of a profiler row in µs, whatever this torch calls it.

    torch >= 2.4 names it `self_device_time_total`; older releases `self_cuda_time_total`.
    """
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(row, name, None)
        if value is not None:
            return float(value)
    return 0.0


def _is_device_row(row: Any) -> bool:
    kind = getattr(row, "device_type", None)
    return str(getattr(kind, "name", kind)) not in ("CPU", "None")


def aggregate(rows: Iterable[Any], *, calls: int, on_device: bool) -> list[dict[str, Any]]:
    """Per-call rows from `key_averages()` over `calls` profiled calls, largest self time first.

    Kernel rows are dropped: their time is already the `self_device_us` of the op that launched
    them, and counting both would double the total. Keeps every op with at least `MIN_SHARE` of
    the total self time and at least the top `TOP_OPS`.
    """
    out = []
    for row in rows:
        name = str(row.key)
        if name.startswith("ProfilerStep") or _is_device_row(row):
            continue
        out.append(
            {
                "op": name,
                "count": row.count / calls,
                "self_cpu_us": float(row.self_cpu_time_total) / calls,
                "self_device_us": self_device_time_us(row) / calls,
                "flops": float(getattr(row, "flops", 0) or 0) / calls,
            }
        )
    weight = "self_device_us" if on_device else "self_cpu_us"
    out.sort(key=lambda r: (-r[weight], -r["self_cpu_us"], r["op"]))
    total = sum(r[weight] for r in out)
    return [
        r
        for i, r in enumerate(out)
        if i < TOP_OPS or (total > 0 and r[weight] >= MIN_SHARE * total)
    ]


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
    from torch.profiler import ProfilerActivity, profile, schedule

    activities = [ProfilerActivity.CPU]
    if on_device:
        activities.append(ProfilerActivity.CUDA)
    captured: dict[str, Any] = {}

    def ready(prof: Any) -> None:
        captured["ops"] = aggregate(prof.key_averages(), calls=active, on_device=on_device)
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
            synchronize()
            prof.step()
    if "ops" not in captured:
        raise RuntimeError("the profiler produced no trace")
    return ProfileResult(
        ops=captured["ops"], trace=str(trace_path) if trace_path is not None else None
    )
