"""Synthetic results documents of realistic shape, for tests and the store's benchmarks.

Nothing here measures anything; the documents are labelled as synthetic in `run.ci`.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np

from perfgate.results import SCHEMA, make_key

_OPS = [
    "aten::mm",
    "aten::addmm",
    "aten::softmax",
    "aten::layer_norm",
    "aten::copy_",
    "aten::add",
    "aten::mul",
    "aten::gelu",
    "aten::empty",
    "aten::view",
]


def synthetic_document(
    *,
    benchmarks: int = 200,
    samples: int = 40,
    project: str = "acme/models",
    commit: str | None = None,
    branch: str | None = "main",
    seed: int = 0,
    started_at: datetime | None = None,
    slowdown: dict[str, float] | None = None,
    ops_per_benchmark: int = 5,
) -> dict[str, Any]:
    """A valid `perfgate/results@1` document with lognormal timing samples.

    `slowdown` maps keys to a factor applied to their times (1.1 = 10% slower).
    """
    rng = np.random.default_rng(seed)
    started = started_at or datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(hours=seed)
    benches = []
    for i in range(benchmarks):
        params = {"n": 64 * (1 + i % 8), "variant": i // 8}
        key = make_key("kernel", params)
        base = 1e-4 * (1 + (i % 17))
        factor = (slowdown or {}).get(key, 1.0)
        times = base * factor * rng.lognormal(0.0, 0.02, samples)
        benches.append(
            {
                "name": "kernel",
                "params": params,
                "key": key,
                "device": "cpu",
                "error": None,
                "metrics": {
                    "time": {"unit": "s", "direction": "lower", "samples": times.tolist()},
                    "flops": {
                        "unit": "flop",
                        "direction": "lower",
                        "value": 2 * params["n"] ** 3,
                        "exact": True,
                    },
                    "peak_memory": {
                        "unit": "B",
                        "direction": "lower",
                        "value": 4096 * (i + 1),
                        "method": "rss_hwm",
                    },
                },
                "profile": {
                    "ops": [
                        {
                            "op": _OPS[j % len(_OPS)],
                            "count": 1 + j % 3,
                            "self_cpu_us": float(base * 1e6 / (j + 2)),
                            "self_device_us": 0.0,
                            "flops": 0.0,
                        }
                        for j in range(ops_per_benchmark)
                    ],
                    "trace": None,
                },
            }
        )
    return {
        "schema": SCHEMA,
        "run": {
            "id": str(uuid.UUID(int=int(rng.integers(0, 2**63)) << 64 | seed, version=4)),
            "project": project,
            "commit": commit or f"{seed:08x}" + "0" * 32,
            "branch": branch,
            "pr": None,
            "base_commit": None,
            "started_at": started.isoformat(),
            "finished_at": (started + timedelta(minutes=3)).isoformat(),
            "ci": {"synthetic": True},
        },
        "environment": {
            "fingerprint": "synthetic-cpu",
            "python": "3.11",
            "torch": "2.13.0",
            "cuda": None,
            "devices": [],
            "hostname": f"runner-{seed % 3}",
        },
        "benchmarks": benches,
    }
