"""The JSON-level rules of a results document: what every JSON reader and both stores can hold.

The typed fields have their own validators (`results.py`); these rules hold everywhere, and most
of all in the free-form fields (`run.ci` and the environment's extra fields), where nothing else
looks:

- no duplicate object keys (JSON parsers disagree on which one wins);
- no NUL character and no lone surrogate (`\\ud800`) in any string or key: PostgreSQL text cannot
  hold a NUL, and a lone surrogate is not Unicode, so it cannot be written as UTF-8 at all;
- every integer fits a 64-bit float (what JavaScript and most JSON readers parse numbers into);
- no NaN or Infinity in free-form fields (JSON has neither; the typed fields say so themselves);
- free-form values nest at most `MAX_DEPTH` objects and arrays deep.

`decode` parses JSON text so that the first two kinds of problem survive parsing as markers that
`first_problem` finds with their path: Python's parser would otherwise keep the last of duplicate
keys silently, and fail on an integer over 4,300 digits without saying where it was.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

#: How deep a free-form field (`run.ci`, an environment field) may nest objects and arrays;
#: `run.ci` and `environment` themselves are the first level.
MAX_DEPTH = 32

# Integers beyond this have no float64 value (float(n) raises OverflowError).
_MAX_INTEGER = int(sys.float_info.max)
# Longer integer literals are not converted at all: Python refuses (by default) to turn more than
# 4,300 digits into an int, and anything past 309 digits is out of range anyway.
_MAX_LITERAL_DIGITS = 400
_SURROGATE = re.compile("[\ud800-\udfff]")


class _DuplicateKeys(dict[str, Any]):
    """An object that had `duplicate` more than once in its JSON text (the last value kept)."""

    duplicate: str


class _LongInteger:
    """Stands in for an integer literal too long to be a number of a results document."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    seen: set[str] = set()
    marked = _DuplicateKeys(result)
    for key, _ in pairs:
        if key in seen:
            marked.duplicate = key
            break
        seen.add(key)
    return marked


def _integer(literal: str) -> int | _LongInteger:
    digits = len(literal.lstrip("-"))
    return _LongInteger(digits) if digits > _MAX_LITERAL_DIGITS else int(literal)


def decode(text: str) -> object:
    """`json.loads`, keeping duplicate keys and overlong integers for `first_problem` to name.

    Raises what `json.loads` raises for text that is not JSON (JSONDecodeError, RecursionError).
    """
    return json.loads(text, object_pairs_hook=_object, parse_int=_integer)


# An escaped NUL or surrogate (`\u0000`, `\ud800`): the only way either can reach a decoded
# string, since the parser refuses a raw control character and UTF-8 cannot carry a surrogate.
# `\\u0000` (an escaped backslash, then text) also matches; a false alarm only costs a full check.
_ESCAPED_NUL_OR_SURROGATE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")
# Integer literals with this many digits may be past the largest float (about 1.8e308).
_RANGE_DIGITS = len(str(_MAX_INTEGER))


def decode_checked(text: str) -> tuple[object, bool]:
    """`decode`, and whether the text may break a rule outside the free-form fields.

    False means that only `run.ci` and the environment can break one (a NaN, too deep), which
    `first_problem(data, free_form_only=True)` checks without walking the benchmarks: the
    decoder saw no duplicate key and no integer of `_RANGE_DIGITS` digits or more, and the text
    has no escaped NUL or surrogate. That walk was most of the time of validating a large
    document.
    """
    flagged: list[bool] = []

    # Both hooks run once per object or integer of the document (480,000 and 300,000 times for
    # 60,000 benchmarks): the common case returns on one test, without a second call.
    def object_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) == len(pairs):
            return result
        flagged.append(True)
        return _object(pairs)

    def integer_hook(literal: str) -> int | _LongInteger:
        if len(literal) < _RANGE_DIGITS:
            return int(literal)
        flagged.append(True)
        return _integer(literal)

    data = json.loads(text, object_pairs_hook=object_hook, parse_int=integer_hook)
    return data, bool(flagged) or _ESCAPED_NUL_OR_SURROGATE.search(text) is not None


def same_json(a: object, b: object) -> bool:
    """Whether `a` and `b` are the same JSON value: what `==` says, but with the JSON types kept.

    Python's `==` holds `True == 1 == 1.0` and `0.0 == -0.0`, which JSON (and the content hash)
    tells apart; a float is compared by the text JSON writes for it.
    """
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(map(same_json, a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)
    return a == b


def printable(text: str) -> str:
    """`text` with lone surrogates written as `\\udxxx`, so that it can go out as UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "text may not contain NUL characters"
    if not text.isascii():
        found = _SURROGATE.search(text)
        if found:
            return (
                f"text may not contain a lone surrogate ({printable(found.group())}): "
                "it is not Unicode"
            )
    return None


def _integer_problem(value: int) -> str | None:
    if -_MAX_INTEGER <= value <= _MAX_INTEGER:
        return None
    return "integer out of range: a number must fit a 64-bit float (at most about 1.8e308)"


def _float_problem(value: float) -> str | None:
    if math.isfinite(value):
        return None
    word = "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    return f"{word} is not valid JSON"


def _child(path: str, key: str) -> str:
    return f"{path}.{printable(key)}" if path else printable(key)


def first_problem(data: dict[str, Any], *, free_form_only: bool = False) -> tuple[str, str] | None:
    """The path and message of a value that breaks one of the rules above; None if none does.

    The root's `run.ci` and `environment` are the free-form fields (depth 1). Long lists of plain
    numbers (samples) are checked without building a path for each number. `free_form_only`
    walks only those two fields, in document order (see `decode_checked` for when that is the
    same answer).
    """
    # (path, value, depth within a free-form field, or 0 outside them)
    stack: list[tuple[str, object, int]] = (
        _free_form_fields(data) if free_form_only else [("", data, 0)]
    )
    while stack:
        path, value, depth = stack.pop()
        problem: str | None = None
        if isinstance(value, str):
            problem = _text_problem(value)
        elif isinstance(value, bool):
            pass
        elif isinstance(value, int):
            problem = _integer_problem(value)
        elif isinstance(value, float):
            problem = _float_problem(value) if depth else None
        elif isinstance(value, _LongInteger):
            problem = (
                f"integer out of range ({value.digits} digits): a number must fit a 64-bit "
                "float (at most about 1.8e308)"
            )
        elif isinstance(value, dict | list) and depth > MAX_DEPTH:
            problem = f"nested more than {MAX_DEPTH} levels deep (the limit of free-form fields)"
        elif isinstance(value, _DuplicateKeys):
            problem = f"duplicate key {printable(value.duplicate)!r}"
        elif isinstance(value, dict):
            children = []
            for key, item in value.items():
                child = _child(path, str(key))
                key_problem = _text_problem(str(key))
                if key_problem is not None:
                    return child, key_problem
                children.append((child, item, _depth_of(path, str(key), depth)))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            found = _list_problem(path, value, depth)
            if found is not None:
                return found
            inner = depth + 1 if depth else 0
            for i in range(len(value) - 1, -1, -1):
                if not isinstance(value[i], int | float):
                    stack.append((f"{path}[{i}]", value[i], inner))
        if problem is not None:
            return path or "(document)", problem
    return None


def _free_form_fields(data: dict[str, Any]) -> list[tuple[str, object, int]]:
    """The stack `first_problem` starts from to walk only `run.ci` and `environment`."""
    fields: list[tuple[str, object, int]] = []
    for key, value in data.items():
        if key == "environment":
            fields.append(("environment", value, 1))
        elif key == "run" and isinstance(value, dict) and "ci" in value:
            fields.append(("run.ci", value["ci"], 1))
    fields.reverse()  # the stack pops the last first
    return fields


def _depth_of(path: str, key: str, depth: int) -> int:
    """The free-form depth of `path.key`: 1 for `run.ci` and `environment`, 0 outside them."""
    if depth:
        return depth + 1
    if (path, key) in (("", "environment"), ("run", "ci")):
        return 1
    return 0


def _list_problem(path: str, items: list[object], depth: int) -> tuple[str, str] | None:
    """A problem among the plain numbers of a list (their path is built only when one has)."""
    for i, item in enumerate(items):
        problem = None
        if isinstance(item, float):
            problem = _float_problem(item) if depth else None
        elif isinstance(item, int) and not isinstance(item, bool):
            problem = _integer_problem(item)
        if problem is not None:
            return f"{path}[{i}]", problem
    return None
