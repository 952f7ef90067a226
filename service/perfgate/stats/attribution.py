"""Attribution: which operators' per-call self time or count moved between two profiles, and
which operators' allocated bytes moved between two `allocated_bytes` notes."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.allocation_note import OUTSIDE_OPS, AllocationsByOp
from perfgate.results import Op
from perfgate.stats.model import OpBytesDelta, OpDelta

TOP_OPS = 8


def attribute(
    base_ops: Sequence[Op], head_ops: Sequence[Op], *, top: int = TOP_OPS
) -> list[OpDelta]:
    """The ops that moved most, new and vanished ones included; slowdowns first, largest first.

    Device time is used when either profile has any (a GPU run), CPU time otherwise. Ops whose
    time did not move but whose call count did are kept too: an extra copy can be cheap per call
    and still be the cause.
    """
    device = any(op.self_device_us > 0 for op in (*base_ops, *head_ops))

    def time_of(op: Op) -> float:
        return op.self_device_us if device else op.self_cpu_us

    base = {op.op: op for op in base_ops}
    head = {op.op: op for op in head_ops}
    deltas = []
    for name in sorted(base.keys() | head.keys()):
        b, h = base.get(name), head.get(name)
        base_us = time_of(b) if b else 0.0
        head_us = time_of(h) if h else 0.0
        base_count = b.count if b else 0.0
        head_count = h.count if h else 0.0
        if base_us == head_us and base_count == head_count:
            continue
        deltas.append(
            OpDelta(
                op=name,
                base_us=base_us,
                head_us=head_us,
                delta_us=head_us - base_us,
                base_count=base_count,
                head_count=head_count,
            )
        )
    # What got slower (or is called more) comes first, largest first; then what got faster.
    deltas.sort(
        key=lambda d: (d.delta_us > 0 or d.head_count > d.base_count, abs(d.delta_us)),
        reverse=True,
    )
    return deltas[:top]


def attribute_allocations(
    base: AllocationsByOp,
    head: AllocationsByOp,
    *,
    base_ops: Sequence[Op] | None = None,
    head_ops: Sequence[Op] | None = None,
    top: int = TOP_OPS,
) -> list[OpBytesDelta]:
    """The ops whose allocated bytes per call moved, largest move first (either way).

    The bytes are exact, so any difference is a move. An op that one side's note leaves out
    because it lists only the largest ones has unknown bytes there and is skipped rather than
    counted as 0. Calls per call come from the profiles when both sides have one and either
    lists the op (`(outside ops)`, or a range the profile does not list, has none).
    """
    base_counts = {op.op: op.count for op in base_ops} if base_ops is not None else None
    head_counts = {op.op: op.count for op in head_ops} if head_ops is not None else None
    deltas = []
    for name in sorted(base.by_op.keys() | head.by_op.keys()):
        base_bytes, head_bytes = base.bytes_of(name), head.bytes_of(name)
        if base_bytes is None or head_bytes is None or base_bytes == head_bytes:
            continue
        base_count = head_count = None
        if (
            base_counts is not None
            and head_counts is not None
            and name != OUTSIDE_OPS
            and (name in base_counts or name in head_counts)
        ):
            base_count, head_count = base_counts.get(name, 0.0), head_counts.get(name, 0.0)
        deltas.append(
            OpBytesDelta(
                op=name,
                base_bytes=base_bytes,
                head_bytes=head_bytes,
                delta_bytes=head_bytes - base_bytes,
                base_count=base_count,
                head_count=head_count,
            )
        )
    deltas.sort(key=lambda d: abs(d.delta_bytes), reverse=True)
    return deltas[:top]
