"""torch backend switches that change kernels and precision: read, restore, compare.

A setup that turns on TF32 or `cudnn.benchmark` changes what every later instance in the process
computes and how fast; the harness saves these before each instance and puts them back after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

BackendFlags = dict[str, str | bool]

# Attributes under torch.backends, read and written as they are. The `fp32_precision` strings are
# torch's newer spelling of the TF32 switches (absent on older torch: skipped).
_BOOLEANS = (
    "cuda.matmul.allow_tf32",
    "cuda.matmul.allow_fp16_reduced_precision_reduction",
    "cudnn.enabled",
    "cudnn.benchmark",
    "cudnn.deterministic",
    "cudnn.allow_tf32",
)
_PRECISIONS = (
    "fp32_precision",
    "cuda.matmul.fp32_precision",
    "cudnn.fp32_precision",
    "cudnn.conv.fp32_precision",
    "cudnn.rnn.fp32_precision",
)
# torch refuses to read the old switches (get_float32_matmul_precision(), allow_tf32) after a
# mix of the old and new APIs wrote them; they are recorded as this word.
MIXED = "mixed"


def _lookup(path: str) -> tuple[Any, str]:
    import torch

    target: Any = torch.backends
    module, _, attribute = path.rpartition(".")
    for part in module.split(".") if module else ():
        target = getattr(target, part)
    return target, attribute


def _matmul_precision() -> str:
    import torch

    try:
        return str(torch.get_float32_matmul_precision())
    except RuntimeError:
        return MIXED


def read_backend_flags() -> BackendFlags:
    """The switches in force now, by a stable name."""
    import torch

    flags: BackendFlags = {"float32_matmul_precision": _matmul_precision()}
    for path in _BOOLEANS:
        target, attribute = _lookup(path)
        try:
            flags[path] = bool(getattr(target, attribute))
        except RuntimeError:
            flags[path] = MIXED
    for path in _PRECISIONS:
        try:
            target, attribute = _lookup(path)
            flags[path] = str(getattr(target, attribute))
        except AttributeError:
            continue
    flags["deterministic_algorithms"] = bool(torch.are_deterministic_algorithms_enabled())
    return flags


def _write(saved: Mapping[str, str | bool]) -> None:
    import torch

    for path in _PRECISIONS:
        if path in saved:
            target, attribute = _lookup(path)
            if getattr(target, attribute) != saved[path]:
                setattr(target, attribute, saved[path])
    for path in _BOOLEANS:
        # A mixed switch cannot be written back as such; the fp32_precision strings above hold
        # the state it reads from.
        if saved[path] != MIXED and read_backend_flags()[path] != saved[path]:
            target, attribute = _lookup(path)
            setattr(target, attribute, saved[path])
    # Last: the legacy precision ("high" vs "medium") is state of its own that the switches above
    # overwrite.
    if saved["float32_matmul_precision"] not in (MIXED, _matmul_precision()):
        torch.set_float32_matmul_precision(str(saved["float32_matmul_precision"]))
    if bool(torch.are_deterministic_algorithms_enabled()) != saved["deterministic_algorithms"]:
        torch.use_deterministic_algorithms(
            bool(saved["deterministic_algorithms"]),
            warn_only=bool(torch.is_deterministic_algorithms_warn_only_enabled()),
        )


def restore_backend_flags(saved: Mapping[str, str | bool]) -> None:
    """Put back switches read by `read_backend_flags`.

    The old and new TF32 spellings write through to each other (setting the precision moves
    `allow_tf32` and the `fp32_precision` strings), so writing once may leave one of them moved:
    a second pass settles it. Raises RuntimeError if they still differ.
    """
    for _ in range(3):
        if _same(saved, read_backend_flags()):
            return
        _write(saved)
    now = read_backend_flags()
    if not _same(saved, now):
        raise RuntimeError(
            f"torch backend flags could not be restored: {describe_changes(saved, now)}"
        )


def _same(saved: Mapping[str, str | bool], now: Mapping[str, str | bool]) -> bool:
    # A mixed legacy switch is only a reading of the fp32_precision strings, compared on their own.
    return all(value == MIXED or now.get(name) == value for name, value in saved.items())


def describe_changes(
    baseline: Mapping[str, str | bool], now: Mapping[str, str | bool]
) -> str | None:
    """'cudnn.benchmark=True, ...' for switches that differ from `baseline`, or None."""
    changed = [f"{name}={now[name]}" for name in sorted(now) if baseline.get(name) != now[name]]
    return ", ".join(changed) if changed else None
