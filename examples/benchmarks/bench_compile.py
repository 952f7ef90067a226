"""torch.compile: perfgate reports compile_time, graph_breaks and recompiles next to the timing.

The compiled module is a small MLP block (compiling is the expensive part on a CPU). Inductor
needs a C++ compiler on CPU and Triton on a GPU; where those are missing the benchmark falls back
to the "aot_eager" backend, which traces and partitions like inductor but generates no code, so
the compile metrics are still real while the timing is eager-speed.
"""

from __future__ import annotations

import importlib.util
import shutil

import torch
import torch.nn.functional as F  # noqa: N812  (the PyTorch convention)
from torch import nn

import perfgate


def _backend(device: torch.device) -> str:
    if device.type == "cuda":
        return "inductor" if importlib.util.find_spec("triton") is not None else "aot_eager"
    return "inductor" if (shutil.which("c++") or shutil.which("g++")) else "aot_eager"


class MLPBlock(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.up = nn.Linear(dim, 4 * dim)
        self.down = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(F.gelu(self.up(self.norm(x))))


@perfgate.benchmark(params={"tokens": [256], "dim": [128]}, tags=["compile"], max_time=1.0)
def mlp_compiled(tokens: int, dim: int, device: torch.device):
    import torch._inductor.config

    # Inductor otherwise compiles in a pool of worker processes that keep the CPU busy for
    # seconds after the first call, right when the timing starts.
    torch._inductor.config.compile_threads = 1
    block = MLPBlock(dim).to(device).eval()
    compiled = torch.compile(block, backend=_backend(device))
    x = torch.randn(tokens, dim, device=device)

    @torch.no_grad()
    def run() -> torch.Tensor:
        # The first call compiles; perfgate times it apart and reports it as compile_time.
        return compiled(x)

    return run
