"""Telling a CUDA error that poisons the process (illegal address, device assert) from one that
does not (out of memory, a shape error): after the first kind every later CUDA call fails."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from perfgate.harness.devices import is_cuda
from perfgate.harness.discovery import one_line

if TYPE_CHECKING:
    from perfgate.harness.measure import InstanceResult

# CUDA's sticky errors: the context is unusable until the process exits.
STICKY_MESSAGES = (
    "illegal memory access",
    "device-side assert",
    "unspecified launch failure",
    "illegal instruction",
    "misaligned address",
    "hardware stack error",
    "invalid program counter",
    "uncorrectable ecc error",
    "operation not permitted when stream is capturing",
)


class DeviceContextLostError(RuntimeError):
    """A benchmark left the CUDA context unusable: the process must stop measuring."""

    def __init__(
        self, key: str, reason: str, done: dict[str, InstanceResult] | None = None
    ) -> None:
        super().__init__(f"CUDA context lost while measuring {key}: {reason}")
        self.key = key
        self.reason = reason
        #: Results of the instances measured before (and including) `key`, by key.
        self.done = done or {}


def context_lost(device: Any, error: BaseException) -> str | None:
    """Why the CUDA context of `device` is unusable after `error`, or None if it still works.

    The error's message is checked, then the device is probed with a synchronize: a sticky
    error makes every later call fail, whatever raised first.
    """
    if not is_cuda(device):
        return None
    message = str(error).lower()
    if any(sticky in message for sticky in STICKY_MESSAGES):
        return one_line(error)
    import torch

    try:
        torch.cuda.synchronize(device)
    except Exception as probe:
        return f"{one_line(probe)} (a synchronize after the error)"
    return None
