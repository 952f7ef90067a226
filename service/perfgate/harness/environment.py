"""What the run ran on (software, GPUs, CPU, threads) and a fingerprint of what affects speed."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from perfgate.config import cuda_behaviour_variables
from perfgate.harness.backend_flags import read_backend_flags
from perfgate.harness.devices import is_cuda
from perfgate.harness.gpu_state import cuda_uuid, open_device

# Present in the environment but not part of the fingerprint: they change between identical
# machines (hostname) or describe this run rather than the machine.
VOLATILE_FIELDS = frozenset({"fingerprint", "hostname", "gpu_uuid"})


def fingerprint(environment: Mapping[str, Any]) -> str:
    """sha256 hex of the performance-relevant fields, independent of key order and hostname."""
    relevant = {k: v for k, v in environment.items() if k not in VOLATILE_FIELDS}
    canonical = json.dumps(relevant, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    # Containers and CI runners often limit the affinity mask below os.cpu_count().
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _package_version(*names: str) -> str | None:
    for name in names:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _nvidia_driver() -> str | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    return lines[0] if lines else None


def _measured_gpu(torch: Any, device: Any) -> dict[str, Any]:
    """The measured GPU only: other visible GPUs do not change its timings, and listing them
    would split the fingerprint of identical runners that expose different sets."""
    props = torch.cuda.get_device_properties(device)
    gpu: dict[str, Any] = {
        "name": props.name,
        "capability": f"{props.major}.{props.minor}",
        "sm_count": int(props.multi_processor_count),
        "memory_bytes": int(props.total_memory),
    }
    nvml = open_device(device)
    if nvml is not None:
        gpu.update(nvml.describe())
    return gpu


def collect_environment(
    device: Any, *, malloc: str = "system", sampling: str = "sequential"
) -> dict[str, Any]:
    """The environment section of a results document (torch must be importable).

    `malloc` says how the measuring processes' allocator was configured, `sampling` whether
    instances were sampled one after another or interleaved (both part of the fingerprint: they
    change what the timings mean).
    """
    import importlib

    # torch's own annotations are partial; treat the module as untyped here.
    torch: Any = importlib.import_module("torch")

    cuda = bool(torch.cuda.is_available())
    on_gpu = cuda and is_cuda(device)
    gpus = [_measured_gpu(torch, device)] if on_gpu else []
    nccl = None
    if cuda:
        try:
            version = torch.cuda.nccl.version()
            nccl = (
                ".".join(str(part) for part in version)
                if isinstance(version, tuple)
                else str(version)
            )
        except Exception:  # builds without NCCL raise a variety of errors here
            nccl = None
    cudnn = torch.backends.cudnn.version() if cuda else None
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "torch": str(torch.__version__),
        "torch_git": getattr(torch.version, "git_version", None),
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "cudnn": str(cudnn) if cudnn is not None else None,
        "nccl": nccl,
        "triton": _package_version("triton", "pytorch-triton", "pytorch-triton-rocm"),
        "numpy": _package_version("numpy"),
        "device": str(device),
        "devices": [gpu["name"] for gpu in gpus],
        "gpus": gpus,
        # Recorded, not fingerprinted (like hostname): one physical GPU among identical ones.
        "gpu_uuid": cuda_uuid(device) if on_gpu else None,
        "driver": _nvidia_driver() if cuda else None,
        "cpu": cpu_model(),
        "cpu_capability": _cpu_capability(torch),
        "machine": platform.machine(),
        "cores": os.cpu_count(),
        "usable_cores": usable_cores(),
        "torch_threads": int(torch.get_num_threads()),
        "torch_interop_threads": int(torch.get_num_interop_threads()),
        "malloc": malloc,
        "sampling": sampling,
        # Switches that pick kernels and precision, as every instance starts with them.
        "backend_flags": read_backend_flags(),
        "cuda_env": cuda_behaviour_variables(),
        "os": f"{platform.system()} {platform.release()}",
        "platform": sys.platform,
        "hostname": socket.gethostname(),
    }
    env["fingerprint"] = fingerprint(env)
    return env


def _cpu_capability(torch: Any) -> str | None:
    try:
        return str(torch.backends.cpu.get_cpu_capability())
    except (AttributeError, RuntimeError):
        return None
