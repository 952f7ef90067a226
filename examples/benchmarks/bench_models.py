"""Model benchmarks: a small GPT-style decoder (latency, generation tokens/s), a CNN training step.

Weights are random (nothing is downloaded); sizes are small so the suite runs on a laptop CPU.
PERFGATE_EXAMPLE_SCALE (default 1) widens the models for GPU runners.
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F  # noqa: N812  (the PyTorch convention)
from torch import nn

import perfgate

SCALE = int(os.environ.get("PERFGATE_EXAMPLE_SCALE", "1"))
KVCache = list[tuple[torch.Tensor, torch.Tensor]]


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)
            v = torch.cat([cache[1], v], dim=2)
        # With a cache the new queries attend to everything before them: no mask needed.
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=cache is None)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x)), (k, v)


class TinyGPT(nn.Module):
    def __init__(
        self, vocab: int = 512, dim: int = 128, heads: int = 4, layers: int = 2, context: int = 256
    ) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(context, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)

    def forward(
        self, ids: torch.Tensor, cache: KVCache | None = None, start: int = 0
    ) -> tuple[torch.Tensor, KVCache]:
        positions = torch.arange(start, start + ids.shape[1], device=ids.device)
        x = self.tok(ids) + self.pos(positions)
        new_cache = []
        for i, block in enumerate(self.blocks):
            x, kv = block(x, None if cache is None else cache[i])
            new_cache.append(kv)
        return self.head(self.ln(x)), new_cache


def _model(device: torch.device) -> TinyGPT:
    return TinyGPT(dim=128 * SCALE, heads=4 * SCALE).to(device).eval()


@perfgate.benchmark(params={"batch": [4], "seq": [64 * SCALE]}, tags=["model", "gpt"])
def gpt_forward(batch: int, seq: int, device: torch.device):
    model = _model(device)
    ids = torch.randint(0, 512, (batch, seq), device=device)

    @torch.inference_mode()
    def run() -> torch.Tensor:
        return model(ids)[0]

    return run


@perfgate.benchmark(
    params={"batch": [4], "new_tokens": [16]},
    items=lambda batch, new_tokens: batch * new_tokens,
    unit="tokens",
    tags=["model", "gpt"],
)
def gpt_generate(batch: int, new_tokens: int, prompt: int = 16, device: torch.device | None = None):
    model = _model(device or torch.device("cpu"))
    prompt_ids = torch.randint(0, 512, (batch, prompt), device=device)

    @torch.inference_mode()
    def run() -> torch.Tensor:
        # Prefill once, then one token at a time against the KV cache (greedy decoding).
        logits, cache = model(prompt_ids)
        token = logits[:, -1:].argmax(-1)
        out = [token]
        for step in range(new_tokens - 1):
            logits, cache = model(token, cache, start=prompt + step)
            token = logits[:, -1:].argmax(-1)
            out.append(token)
        return torch.cat(out, dim=1)

    return run


class SmallCNN(nn.Module):
    def __init__(self, width: int = 16, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, width, 3, padding=1),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.BatchNorm2d(2 * width),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.classifier = nn.Linear(2 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


@perfgate.benchmark(
    params={"batch": [16]}, items=lambda batch: batch, unit="images", tags=["model", "training"]
)
def cnn_train_step(batch: int, device: torch.device):
    model = SmallCNN(width=16 * SCALE).to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(batch, 3, 32, 32, device=device)
    labels = torch.randint(0, 10, (batch,), device=device)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()

    return step
