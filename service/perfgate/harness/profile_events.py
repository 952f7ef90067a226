"""Reading torch.profiler events: kernels, host launch calls, annotations, the harness's own calls.

Works on `prof.events()` (FunctionEvent objects, parents linked), not `key_averages()`: which op a
kernel belongs to, whether a device row is a kernel or a `record_function` annotation, and which
calls the harness made itself are only known per event.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

#: The harness wraps its own synchronize calls in `record_function(HARNESS_MARK)`, so the
#: `cudaDeviceSynchronize` they cause can be told from the benchmark's.
HARNESS_MARK = "perfgate::synchronize"

# Host-side CUDA runtime/driver calls that put a kernel (or a graph of them) on the device.
LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cuLaunchCooperativeKernel",
        "cudaGraphLaunch",
        "cuGraphLaunch",
    }
)
_COPIES = ("Memcpy", "Memset")


def _device_name(event: Any) -> str:
    kind = getattr(event, "device_type", None)
    return str(getattr(kind, "name", kind))


def is_device_event(event: Any) -> bool:
    return _device_name(event) not in ("CPU", "None")


def is_annotation(event: Any) -> bool:
    """A `record_function` range (on the host, or its mirror on the device), not work."""
    return bool(getattr(event, "is_user_annotation", False))


def harness_events(events: Sequence[Any]) -> set[int]:
    """`id()`s of events inside the harness's own marked calls (and the marks themselves)."""
    marks = [e for e in events if e.name == HARNESS_MARK and not is_device_event(e)]
    mark_ids = {e.id for e in marks}
    hidden = {id(e) for e in marks}
    for event in events:
        if is_device_event(event):
            continue
        # Runtime calls are linked to the innermost op or range they were made in.
        if getattr(event, "linked_correlation_id", 0) in mark_ids:
            hidden.add(id(event))
            continue
        parent = getattr(event, "cpu_parent", None)
        while parent is not None:
            if id(parent) in hidden or parent.name == HARNESS_MARK:
                hidden.add(id(event))
                break
            parent = getattr(parent, "cpu_parent", None)
    return hidden


def kernels(events: Iterable[Any]) -> list[Any]:
    """Device events that are kernels: not copies, not device mirrors of annotations."""
    return [
        e
        for e in events
        if is_device_event(e) and not is_annotation(e) and not str(e.name).startswith(_COPIES)
    ]


def kernel_names(events: Iterable[Any]) -> Counter[str]:
    return Counter(str(e.name) for e in kernels(events))


def host_launches(events: Iterable[Any]) -> int:
    """Host calls that launched kernels, as the profiler saw them."""
    return sum(1 for e in events if not is_device_event(e) and str(e.name) in LAUNCH_CALLS)


def unlinked_kernels(events: Sequence[Any]) -> list[Any]:
    """Kernels whose time no host op carries (a Triton kernel launched straight from Python).

    The profiler adds a kernel's time to the host op it is linked to (that op's self device
    time); a kernel linked to none would be lost if device rows were dropped.
    """
    carriers = {e.id for e in events if not is_device_event(e) and getattr(e, "kernels", None)}
    return [e for e in kernels(events) if getattr(e, "linked_correlation_id", 0) not in carriers]


def self_device_time_us(event: Any) -> float:
    """Self device time of a profiler event or row in µs, whatever this torch calls it.

    torch >= 2.4 names it `self_device_time_total`; older releases `self_cuda_time_total`.
    """
    for name in ("self_device_time_total", "self_cuda_time_total"):
        value = getattr(event, name, None)
        if value is not None:
            return float(value)
    return 0.0


def aggregate_events(
    events: Sequence[Any], *, calls: int, on_device: bool, top: int, min_share: float
) -> list[dict[str, Any]]:
    """Per-call rows by op name, largest self time first.

    Host ops carry their kernels' time as self device time, so linked kernel rows are left out
    (they would count twice); kernels no host op carries become rows of their own. The
    harness's own synchronize calls, `ProfilerStep#` ranges and device mirrors of annotations
    are left out. Keeps every row with at least `min_share` of the total self time and at
    least the top `top`.
    """
    hidden = harness_events(events)
    rows: dict[str, dict[str, Any]] = {}

    def add(name: str, cpu_us: float, device_us: float, flops: float) -> None:
        row = rows.setdefault(
            name,
            {"op": name, "count": 0.0, "self_cpu_us": 0.0, "self_device_us": 0.0, "flops": 0.0},
        )
        row["count"] += 1 / calls
        row["self_cpu_us"] += cpu_us / calls
        row["self_device_us"] += device_us / calls
        row["flops"] += flops / calls

    for event in events:
        name = str(event.name)
        if is_device_event(event) or id(event) in hidden or name.startswith("ProfilerStep"):
            continue
        add(
            name,
            float(event.self_cpu_time_total),
            self_device_time_us(event),
            float(getattr(event, "flops", 0) or 0),
        )
    for kernel in unlinked_kernels(events):
        add(str(kernel.name), 0.0, self_device_time_us(kernel), 0.0)
    out = list(rows.values())
    weight = "self_device_us" if on_device else "self_cpu_us"
    out.sort(key=lambda r: (-r[weight], -r["self_cpu_us"], r["op"]))
    total = sum(r[weight] for r in out)
    return [
        r for i, r in enumerate(out) if i < top or (total > 0 and r[weight] >= min_share * total)
    ]
