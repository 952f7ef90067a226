"""JSON text as perfgate writes it: strict RFC 8259 JSON, with no NaN and no Infinity.

Python's `json.dumps` writes a non-finite float as `NaN` or `Infinity`, which JSON does not have
and strict readers (JavaScript's `JSON.parse`, jq, Go's encoding/json) refuse. Every JSON the CLI
prints or writes and the API answers goes through `dumps` (or `finite` before a JSON response), so
a non-finite number, such as the ratio of a value of 1e-300 that became 1e300, is written as `null`
(docs/results.md, "JSON perfgate writes").
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """The same data with NaN and infinities as None (JSON null); other values unchanged."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(
    value: Any,
    *,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    """`json.dumps` of `finite(value)`, refusing (ValueError) anything else JSON cannot carry."""
    return json.dumps(
        finite(value), indent=indent, separators=separators, sort_keys=sort_keys, allow_nan=False
    )
