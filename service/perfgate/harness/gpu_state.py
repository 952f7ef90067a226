"""The measured GPU's clocks, power and throttling through NVML (the optional `nvml` extra:
`pip install 'perfgate[nvml]'`); without it, or on a machine without NVML, nothing is read."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# nvmlClocksEventReason bits that mean the clocks were held below their target by power or
# heat. Left out: GpuIdle (0x1), ApplicationsClocksSetting (0x2, a configured clock),
# SyncBoost (0x10), DisplayClockSetting (0x100).
THROTTLE_REASONS = {
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}


def _nvml() -> Any:
    try:
        return importlib.import_module("pynvml")
    except ImportError:
        return None


def _attempt(read: Callable[[], Any]) -> Any:
    # NVML answers NotSupported / NoPermission per query and per GPU model.
    try:
        return read()
    except Exception:
        return None


class NvmlDevice:
    """One GPU's NVML handle, found by UUID (NVML and CUDA may number GPUs differently)."""

    def __init__(self, nvml: Any, handle: Any, uuid: str) -> None:
        self._nvml, self._handle, self.uuid = nvml, handle, uuid

    def _reasons(self) -> int | None:
        nvml, handle = self._nvml, self._handle
        for name in (
            "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons",
        ):
            query = getattr(nvml, name, None)
            if query is None:
                continue
            try:
                return int(query(handle))
            except Exception:
                return None
        return None

    def sample(self) -> dict[str, float]:
        """SM clock (MHz) and whether the GPU is throttled now (1.0) or not (0.0)."""
        nvml, handle = self._nvml, self._handle
        out: dict[str, float] = {}
        clock = _attempt(lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM))
        if clock is not None:
            out["sm_clock_mhz"] = float(clock)
        reasons = self._reasons()
        if reasons is not None:
            out["throttled"] = 1.0 if reasons & sum(THROTTLE_REASONS) else 0.0
        return out

    def describe(self) -> dict[str, Any]:
        """What the fingerprint records about the measured GPU (unknowns are None)."""
        nvml, handle = self._nvml, self._handle
        power = _attempt(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle))
        mig = _attempt(lambda: nvml.nvmlDeviceGetMigMode(handle))
        ecc = _attempt(lambda: nvml.nvmlDeviceGetCurrentEccMode(handle))
        return {
            "max_sm_clock_mhz": _attempt(
                lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, nvml.NVML_CLOCK_SM))
            ),
            "application_sm_clock_mhz": _attempt(
                lambda: int(nvml.nvmlDeviceGetApplicationsClock(handle, nvml.NVML_CLOCK_SM))
            ),
            "power_limit_w": round(power / 1000, 1) if power is not None else None,
            "mig_mode": int(mig[0]) if isinstance(mig, list | tuple) else mig,
            "ecc": int(ecc) if ecc is not None else None,
        }


def cuda_uuid(device: Any) -> str | None:
    """'GPU-xxxxxxxx-...' of a CUDA device as torch sees it, or None."""
    import torch

    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    if uuid is None:
        return None
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


_opened: dict[str, NvmlDevice | None] = {}


def open_device(device: Any) -> NvmlDevice | None:
    """The NVML handle of the CUDA `device`, or None without pynvml/NVML (opened once)."""
    uuid = cuda_uuid(device)
    if uuid is None:
        return None
    if uuid not in _opened:
        nvml = _nvml()
        handle = None
        if nvml is not None:
            _attempt(nvml.nvmlInit)  # a failure shows as no handle below
            handle = _attempt(lambda: nvml.nvmlDeviceGetHandleByUUID(uuid))
        _opened[uuid] = NvmlDevice(nvml, handle, uuid) if handle is not None else None
    return _opened[uuid]


class MonitoredTimer:
    """A timer that adds the GPU's state after each block to the block's `details`."""

    def __init__(self, timer: Any, gpu: NvmlDevice) -> None:
        self._timer, self._gpu = timer, gpu
        self.min_block_s: float = timer.min_block_s
        self.method: str | None = getattr(timer, "method", None)
        self.details: dict[str, float] = {}

    def time_block(self, fn: Callable[[], object], k: int) -> float:
        seconds: float = self._timer.time_block(fn, k)
        # Read right after the block, outside it: a throttled block reads throttled here.
        self.details = {**getattr(self._timer, "details", {}), **self._gpu.sample()}
        return seconds
