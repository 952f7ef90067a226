"""Every JSON perfgate writes is strict: non-finite numbers become null (docs/results.md)."""

from __future__ import annotations

import json
import math
from typing import Any

from perfgate import json_text


def _strict(text: str) -> Any:
    def refuse(word: str) -> None:
        raise ValueError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_null_at_any_depth() -> None:
    data = {"ratio": math.inf, "ci": (-math.inf, 1.5), "nested": [{"x": math.nan, "n": 3}]}
    assert _strict(json_text.dumps(data, indent=1)) == {
        "ratio": None,
        "ci": [None, 1.5],
        "nested": [{"x": None, "n": 3}],
    }


def test_finite_values_are_written_as_json_dumps_writes_them() -> None:
    data = {"b": [1, 1.0, True, None, "\u00e9", -0.0, 1e300], "a": {}}
    assert json_text.dumps(data, sort_keys=True) == json.dumps(data, sort_keys=True)
