"""Which kind of device a torch.device or a device string names ("cuda:0" is CUDA)."""

from __future__ import annotations

from typing import Any


def device_type(device: Any) -> str:
    """'cuda' for torch.device('cuda:1'), 'cuda:1' or 'cuda'; 'cpu' for None or 'cpu'."""
    kind = getattr(device, "type", None)
    if isinstance(kind, str):
        return kind
    if device is None:
        return "cpu"
    # A string such as "cuda:0": its type is what comes before the index.
    return str(device).strip().lower().partition(":")[0] or "cpu"


def is_cuda(device: Any) -> bool:
    return device_type(device) == "cuda"
