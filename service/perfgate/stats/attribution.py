"""Attribution: which operators' per-call self time or count moved between two profiles."""

from __future__ import annotations

from collections.abc import Sequence

from perfgate.results import Op
from perfgate.stats.model import OpDelta

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
