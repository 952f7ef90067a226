"""The bytes each op allocated per call, as the `note` of an `allocated_bytes` metric.

The harness writes the note (docs/results.md) and the comparator reads it back to name the ops
behind a memory regression; both go through this module, so the text and its reader cannot
drift apart. The note stays free text in results@1 (older perfgates read it as such); only these
functions know its shape:

    allocated per call by op:
      1572864 B aten::clone
      1572864 B aten::layer_norm
      ... 3 more ops
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

#: The metrics whose results carry the allocating ops (the CPU profiler's and CUDA's alike).
ALLOCATION_METRICS = ("allocated_bytes", "peak_allocated_bytes")
#: The note's first line.
HEADER = "allocated per call by op:"
#: Allocations made between the call's ops (none in practice: tensors come from aten ops).
OUTSIDE_OPS = "(outside ops)"
#: Ops listed in a note, largest first.
NOTE_OPS = 8

_OP_LINE = re.compile(r"  (\d+) B (\S.*)")
_MORE_LINE = re.compile(r"  \.\.\. (\d+) more ops")


@dataclass(frozen=True)
class AllocationsByOp:
    """Bytes allocated per call by each op a note lists; `complete` is False when the note lists
    only the largest ones (an op it does not name may still have allocated)."""

    by_op: Mapping[str, int]
    complete: bool = True

    def bytes_of(self, op: str) -> int | None:
        """What `op` allocated per call: 0 when a complete list lacks it, None when unknown."""
        if op in self.by_op:
            return self.by_op[op]
        return 0 if self.complete else None


def format_allocation_note(by_op: Mapping[str, int], *, shown: int = NOTE_OPS) -> str | None:
    """The note for `by_op` (bytes per op): the `shown` largest, then how many more; None when
    nothing was allocated."""
    if not by_op:
        return None
    ranked = sorted(by_op.items(), key=lambda item: (-item[1], item[0]))
    # An op name is one line of the note; a line break inside one would end it early.
    lines = [f"  {size} B {' '.join(op.splitlines())}" for op, size in ranked[:shown]]
    if len(ranked) > shown:
        lines.append(f"  ... {len(ranked) - shown} more ops")
    return "\n".join([HEADER, *lines])


def parse_allocation_note(note: str | None) -> AllocationsByOp | None:
    """The bytes per op a note lists, or None when it is not such a note (another metric's, one
    written by hand, a line that does not read): no ops are better than wrong ones."""
    if note is None:
        return None
    header, *lines = note.split("\n")
    if header != HEADER or not lines:
        return None
    by_op: dict[str, int] = {}
    complete = True
    for index, line in enumerate(lines):
        more = _MORE_LINE.fullmatch(line)
        if more is not None and index == len(lines) - 1:
            complete = False
            continue
        found = _OP_LINE.fullmatch(line)
        if found is None or found.group(2) in by_op:
            return None
        by_op[found.group(2)] = int(found.group(1))
    return AllocationsByOp(by_op=by_op, complete=complete)


def allocations_of(value: float | None, note: str | None) -> AllocationsByOp | None:
    """What an `allocated_bytes` metric says about its ops: its note, or nothing by any op when
    the call allocated nothing; None when it does not say (CUDA's counters, older documents)."""
    parsed = parse_allocation_note(note)
    if parsed is not None:
        return parsed
    if note is None and value == 0:
        return AllocationsByOp(by_op={})
    return None
