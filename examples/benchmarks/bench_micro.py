"""Micro-benchmarks: single kernels and a launch-bound case, sized for a laptop CPU by default.

Set PERFGATE_EXAMPLE_SCALE (an integer, default 1) to grow the problem sizes on a GPU; sizes are
params, so a different scale gives different benchmark keys and never mixes with scale 1.

PERFGATE_DEMO_SLOWDOWN=1 plants a regression in `layer_norm` (an extra copy of its input), which
`perfgate demo` uses to show a caught regression with the op that caused it.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F  # noqa: N812  (the PyTorch convention)

import perfgate

SCALE = int(os.environ.get("PERFGATE_EXAMPLE_SCALE", "1"))


@perfgate.benchmark(
    # bfloat16 matmul is slow on CPUs without native bf16 units: sizes stay modest by default.
    params={"n": [128 * SCALE, 256 * SCALE], "dtype": ["float32", "bfloat16"]},
    tags=["micro", "matmul"],
)
def matmul(n: int, dtype: str, device: torch.device):
    a = torch.randn(n, n, device=device, dtype=getattr(torch, dtype))
    b = torch.randn(n, n, device=device, dtype=getattr(torch, dtype))
    return lambda: a @ b


@perfgate.benchmark(params={"rows": [1024 * SCALE], "cols": [1024]}, tags=["micro"])
def softmax(rows: int, cols: int, device: torch.device):
    x = torch.randn(rows, cols, device=device)
    return lambda: torch.softmax(x, dim=-1)


@perfgate.benchmark(params={"tokens": [512 * SCALE], "hidden": [768]}, tags=["micro"])
def layer_norm(tokens: int, hidden: int, device: torch.device):
    x = torch.randn(tokens, hidden, device=device)
    norm = torch.nn.LayerNorm(hidden, device=device)
    slowdown = os.environ.get("PERFGATE_DEMO_SLOWDOWN") == "1"

    @torch.no_grad()
    def run() -> torch.Tensor:
        # The planted regression: a needless copy of the input (shows up as aten::copy_).
        return norm(x.clone() if slowdown else x)

    return run


@perfgate.benchmark(params={"seq": [256 * SCALE], "heads": [8], "head_dim": [64]}, tags=["micro"])
def sdpa(seq: int, heads: int, head_dim: int, device: torch.device):
    q, k, v = (torch.randn(2, heads, seq, head_dim, device=device) for _ in range(3))

    @torch.no_grad()
    def run() -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)

    return run


@perfgate.benchmark(params={"numel": [1 << 20]}, items=lambda numel: numel, unit="elements")
def elementwise_chain(numel: int, device: torch.device):
    x = torch.randn(numel * SCALE, device=device)
    # Five memory-bound passes in eager mode: what a fusing compiler turns into one.
    return lambda: torch.tanh(x * 1.5 + 0.5).mul(x).sigmoid()


@perfgate.benchmark(params={"ops": [200]}, tags=["micro", "launch-bound"])
def tiny_ops(ops: int, device: torch.device):
    x = torch.ones(16, device=device)

    def run() -> torch.Tensor:
        # Per-op overhead (dispatch on CPU, kernel launches on a GPU) is all there is to time.
        y = x
        for _ in range(ops):
            y = y + 1
        return y

    return run
