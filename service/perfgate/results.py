"""The results document (`perfgate/results@1`): typed models, one validator, load and dump.

The same `parse_document` serves the CLI, the runner and the HTTP API, so a document is judged the
same way wherever it arrives. Every rejection is one `DocumentError` whose `path` names the field in
the document's own terms, e.g. `benchmarks[3].metrics.time.samples[7]: NaN is not a valid sample`.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from perfgate import document_json
from perfgate.errors import DocumentError, DocumentTooLargeError
from perfgate.gc_pause import gc_paused

SCHEMA = "perfgate/results@1"

ParamValue = str | int | float | bool | None
Direction = Literal["lower", "higher"]

# Matched with fullmatch: `$` would also accept a trailing newline, which a commit id then
# carries into workflow commands, outputs and the store.
_COMMIT_RE = re.compile(r"[0-9a-f]{7,64}")


def make_key(name: str, params: Mapping[str, ParamValue]) -> str:
    """The instance key (docs/architecture.md §2): `name[k=v,...]` with params sorted by key,
    or just `name`."""
    if not params:
        return name
    inner = ",".join(f"{k}={_format_param(params[k])}" for k in sorted(params))
    return f"{name}[{inner}]"


def _format_param(value: ParamValue) -> str:
    if isinstance(value, float) and value.is_integer():
        # 1.0 and 1 are different params to Python but would print alike; keep the float visible.
        return repr(value)
    return str(value)


# --- field-level validators (raise PydanticCustomError so the message reads as written) ---------


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError(
            "not_a_number", f"{what} must be a number, got {{got}}", {"got": type(value).__name__}
        )
    number = float(value)
    if math.isnan(number):
        raise PydanticCustomError("nan", f"NaN is not a valid {what}")
    if math.isinf(number):
        raise PydanticCustomError("inf", f"infinity is not a valid {what}")
    if number < 0:
        raise PydanticCustomError(
            "negative", f"negative {what} {{value}} is not valid", {"value": number}
        )
    return number


def _sample(value: object) -> float:
    return _number(value, "sample")


def _samples(value: object) -> object:
    """A sample list, checked whole: one Python call per sample was most of the validation time.

    Plain non-negative finite numbers pass on a few C-level passes over the list; otherwise the
    first bad sample raises `_sample`'s error, with `at` (its index) for the path.
    """
    if not isinstance(value, list):
        return value  # list[float] says what is wrong
    if value and set(map(type, value)) <= {float, int}:
        try:
            # min() >= 0 rules out negatives; a NaN or an infinity makes the sum NaN or infinite
            # (so does an overflowing sum, which the slow path below then lets through).
            if min(value) >= 0 and math.isfinite(sum(value)):
                return value
        except OverflowError:  # an integer sum too large for a float
            pass
    return [_at(f"[{i}]", _sample, item) for i, item in enumerate(value)]


def _at(suffix: str, check: Callable[[object], Any], value: object) -> Any:
    """`check(value)`, its error carrying `at`: the path below the field that raised it."""
    try:
        return check(value)
    except PydanticCustomError as exc:
        raise PydanticCustomError(
            exc.type, exc.message_template, {**(exc.context or {}), "at": suffix}
        ) from None


# The largest finite float: a float from 0 to this is a valid value as it is.
_FLOAT_MAX = sys.float_info.max


def _value(value: object) -> float:
    # The common cases first, with what `_number` returns for them: this runs for every value
    # and profile number of a document (360,000 times for 60,000 benchmarks).
    if type(value) is float and 0.0 <= value <= _FLOAT_MAX:  # False for NaN
        return value
    if type(value) is int and value >= 0:
        return float(value)
    return _number(value, "value")


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer() and value >= 0:
            return int(value)
        raise PydanticCustomError("not_a_count", "must be a non-negative integer")
    if value < 0:
        raise PydanticCustomError("negative", "must be a non-negative integer")
    return value


def _param_value(value: object) -> ParamValue:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise PydanticCustomError("bad_param", "a param must be a string, number, boolean or null")


def _commit(value: object) -> str:
    if not isinstance(value, str) or not _COMMIT_RE.fullmatch(value.lower()):
        raise PydanticCustomError("bad_commit", "must be a hex commit id (7 to 64 hex digits)")
    return value.lower()


def _run_id(value: object) -> str:
    try:
        return str(uuid.UUID(str(value)))
    except ValueError:
        raise PydanticCustomError("bad_uuid", "must be a UUID") from None


def _timestamp(value: object) -> datetime:
    if not isinstance(value, str):
        raise PydanticCustomError("bad_time", "must be an ISO-8601 timestamp string")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise PydanticCustomError("bad_time", "must be an ISO-8601 timestamp") from None
    # Naive timestamps are taken as UTC, which is what every runner we know of writes.
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    try:
        return parsed.astimezone(timezone.utc)
    except OverflowError:
        # 9999-12-31T23:00-05:00 is a valid timestamp whose UTC time is in the year 10000.
        raise PydanticCustomError(
            "bad_time", "out of range in UTC (a timestamp must fall in the years 1 to 9999)"
        ) from None


def _non_empty(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise PydanticCustomError("empty", "must be a non-empty string")
    return value


Sample = Annotated[float, BeforeValidator(_sample)]
Samples = Annotated[list[float], BeforeValidator(_samples)]
Value = Annotated[float, BeforeValidator(_value)]
Count = Annotated[int, BeforeValidator(_count)]
Param = Annotated[ParamValue, BeforeValidator(_param_value)]
Commit = Annotated[str, BeforeValidator(_commit)]
RunId = Annotated[str, BeforeValidator(_run_id)]
Timestamp = Annotated[datetime, BeforeValidator(_timestamp)]
Name = Annotated[str, BeforeValidator(_non_empty)]
MetricName = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Metric(_Model):
    """One metric of one benchmark instance: per-call `samples` (noisy) or one `value` (exact)."""

    unit: Annotated[str, Field(max_length=32)]
    direction: Direction
    samples: Samples | None = None
    # Samples per round, in order, when the run had several rounds (separate processes).
    rounds: list[Count] | None = None
    value: Value | None = None
    exact: bool = False
    # How a value was measured, e.g. "cuda_allocator" or "rss_hwm" for peak memory.
    method: Annotated[str, Field(max_length=64)] | None = None
    note: str | None = None

    def round_slices(self) -> list[list[float]]:
        """The samples split into their rounds (one round when `rounds` is absent)."""
        samples = self.samples or []
        if not self.rounds:
            return [list(samples)]
        out, start = [], 0
        for size in self.rounds:
            out.append(list(samples[start : start + size]))
            start += size
        return out


class Op(_Model):
    """Per-call profile row of one operator."""

    op: Name
    count: Value
    self_cpu_us: Value = 0.0
    self_device_us: Value = 0.0
    flops: Value = 0.0


class Profile(_Model):
    ops: list[Op] = Field(default_factory=list)
    trace: str | None = None


class Benchmark(_Model):
    """One benchmark instance (a name and one combination of params) in one run."""

    name: Annotated[Name, Field(max_length=255)]
    params: dict[str, Param] = Field(default_factory=dict)
    key: Annotated[Name, Field(max_length=1000)]
    device: Annotated[str, Field(max_length=64)] | None = None
    error: str | None = None
    tags: list[str] = Field(default_factory=list)
    metrics: dict[MetricName, Metric] = Field(default_factory=dict)
    profile: Profile | None = None


class Run(_Model):
    id: RunId
    project: Annotated[Name, Field(max_length=200)]
    commit: Commit
    branch: Annotated[str, Field(max_length=255)] | None = None
    # PostgreSQL's integer column: a larger number is not a pull request anyway.
    pr: Annotated[int, Field(gt=0, le=2**31 - 1, strict=True)] | None = None
    base_commit: Commit | None = None
    started_at: Timestamp
    finished_at: Timestamp | None = None
    ci: dict[str, Any] = Field(default_factory=dict)


class Environment(BaseModel):
    """Where the run happened; free-form apart from the fingerprint of what affects performance."""

    model_config = ConfigDict(extra="allow")

    fingerprint: Annotated[Name, Field(max_length=128)]

    def as_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class ResultsDocument(_Model):
    schema_: Literal["perfgate/results@1"] = Field(alias="schema")
    run: Run
    environment: Environment
    benchmarks: list[Benchmark]

    def to_json_dict(self) -> dict[str, Any]:
        """The document as JSON-ready data, in the canonical form that is hashed and stored."""
        return self.model_dump(mode="json", by_alias=True)

    def content_hash(self) -> str:
        """sha256 of the canonical JSON: equal for documents with equal content, however written.

        The canonical JSON is `json.dumps(self.to_json_dict(), sort_keys=True, separators=(",",
        ":"))`, fed to the hash piece by piece (`ContentHasher`): the text of a large document
        and its dump to dicts are never whole in memory.
        """
        hasher = ContentHasher()
        hasher.add_benchmarks(self.benchmarks)
        return hasher.hexdigest(self)

    def canonical_pieces(self) -> Iterator[str]:
        """The canonical JSON of the document in pieces whose concatenation is the whole text:
        `benchmarks` (the first key in sorted order) dumped `_HASH_SLICE` benchmarks at a time,
        then the other fields in sorted key order. `json.dumps` writes a list or an object as its
        members' texts joined by the separator, so the pieces join to exactly the text of one
        dump."""
        yield _BENCHMARKS_OPEN
        yield from _benchmark_pieces(self.benchmarks, first=True)
        yield from self.tail_pieces()

    def tail_pieces(self) -> Iterator[str]:
        """The canonical JSON after the benchmarks' last member: the fields other than
        `benchmarks`, whose own members play no part."""
        head = self.model_dump(mode="json", by_alias=True, exclude={"benchmarks"})
        yield "]"
        for key in sorted(head):
            yield "," + json.dumps(key) + ":" + _canonical(head[key])
        yield "}"


class ContentHasher:
    """`ResultsDocument.content_hash` fed in the canonical text's own order: the benchmarks, in
    slices as they come (a document validated a slice at a time is hashed as it goes), then the
    other fields of the document."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256(_BENCHMARKS_OPEN.encode())
        self._first = True

    def add_benchmarks(self, benchmarks: Sequence[Benchmark]) -> None:
        """The next benchmarks of the document, in order."""
        # The collector paused: each slice's dump is many thousands of objects (gc_pause).
        with gc_paused():
            for piece in _benchmark_pieces(benchmarks, first=self._first):
                self._digest.update(piece.encode())
        self._first = self._first and not benchmarks

    def hexdigest(self, document: ResultsDocument) -> str:
        """The hash, given the fields of `document` other than `benchmarks` (its own benchmarks
        are ignored: they are the ones added)."""
        for piece in document.tail_pieces():
            self._digest.update(piece.encode())
        return self._digest.hexdigest()


def _benchmark_pieces(benchmarks: Sequence[Benchmark], *, first: bool) -> Iterator[str]:
    """The canonical text of `benchmarks` as members of the benchmarks list, `_HASH_SLICE` at a
    time; `first` when none comes before them."""
    for start in range(0, len(benchmarks), _HASH_SLICE):
        chunk = BENCHMARK_LIST.dump_python(
            list(benchmarks[start : start + _HASH_SLICE]), mode="json", by_alias=True
        )
        # The list's text without its brackets: the slice's members, joined.
        yield ("" if first and not start else ",") + _canonical(chunk)[1:-1]


# Benchmarks dumped and written per piece of the content hash: large enough that the per-call
# cost is nothing, small enough that a slice's dicts and text are a few MiB at most.
_HASH_SLICE = 1024
# A list of benchmarks, validated or dumped outside a document (a slice of one).
BENCHMARK_LIST: TypeAdapter[list[Benchmark]] = TypeAdapter(list[Benchmark])
# The canonical text's first key: the pieces above and `tail_pieces` rely on it.
_BENCHMARKS_OPEN = '{"benchmarks":['
assert min(f.alias or name for name, f in ResultsDocument.model_fields.items()) == "benchmarks"


def _canonical(value: Any) -> str:
    # check_circular=False writes the same text (a dump has no cycles to find) without recording
    # every list and object of it on the way.
    return json.dumps(value, sort_keys=True, separators=(",", ":"), check_circular=False)


# --- loading --------------------------------------------------------------------------------------


def load_document(path: str | Path, *, max_bytes: int) -> ResultsDocument:
    """Read, size-check, parse and validate a results document file."""
    file = Path(path)
    try:
        size = file.stat().st_size
    except OSError as exc:
        raise DocumentError(f"cannot read file: {exc.strerror}", source=str(file)) from None
    if size > max_bytes:
        raise DocumentTooLargeError(
            f"{file}: {_human(size)} is over the document size limit of {_human(max_bytes)} "
            "(raise it with --max-size or PERFGATE_MAX_DOCUMENT_BYTES)"
        )
    return parse_document_bytes(file.read_bytes(), source=str(file))


def parse_document_bytes(raw: bytes, *, source: str = "") -> ResultsDocument:
    """Parse JSON bytes and validate them as a results document."""
    with gc_paused():
        return _parse_bytes(raw, source)


def _parse_bytes(raw: bytes, source: str) -> ResultsDocument:
    # A function of its own so that the decoded data, its local, is freed when it returns, inside
    # the caller's pause: alive after it, its millions of objects would be walked by the
    # collector's next run (gc_pause).
    data, flagged = decode_json(raw, source=source, decode=document_json.decode_checked)
    return _parse(data, source=source, free_form_only=not flagged)


def decode_json(raw: bytes, *, source: str, decode: Callable[[str], Any] = json.loads) -> Any:
    """UTF-8 JSON bytes as data; a DocumentError names the byte, or the line and column."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte {exc.start})", source=source) from None
    try:
        return decode(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", source=source
        ) from None
    except RecursionError:
        raise DocumentError("invalid JSON: nested too deeply", source=source) from None


def parse_document(data: object, *, source: str = "") -> ResultsDocument:
    """Validate already-decoded JSON data; raises DocumentError naming the first bad field."""
    with gc_paused():
        return _parse(data, source=source, free_form_only=False)


def _parse(data: object, *, source: str, free_form_only: bool) -> ResultsDocument:
    document = validate_document(
        data,
        model=ResultsDocument,
        schema=SCHEMA,
        what="results",
        other=_not_results,
        source=source,
        free_form_only=free_form_only,
    )
    _check_consistency(document, source)
    return document


def _not_results(schema: object) -> str:
    if schema is None:
        return f'missing field (expected "{SCHEMA}")'
    return f"{schema!r} is not a perfgate results document (expected {SCHEMA!r})"


_Document = TypeVar("_Document", bound=BaseModel)


def validate_document(
    data: object,
    *,
    model: type[_Document],
    schema: str,
    what: str,
    other: Callable[[object], str],
    source: str,
    free_form_only: bool = False,
) -> _Document:
    """The checks every perfgate document goes through, in order; the first failure is one
    DocumentError naming the field.

    `data` must be a JSON object (`a {what} document must be a JSON object`) whose `schema` is
    `schema`. A later version of the same document (same name, other `@N`) is told to upgrade
    perfgate; any other `schema` value, absent included, gets `other(value)` as its message.
    Then the JSON rules of `document_json` (only in free-form fields with `free_form_only`, for
    text the decoder already checked), then the pydantic `model`.
    """
    if not isinstance(data, dict):
        raise DocumentError(f"a {what} document must be a JSON object", source=source)
    found = data.get("schema")
    if found != schema:
        family = schema.rpartition("@")[0] + "@"
        if isinstance(found, str) and found.startswith(family):
            message = (
                f"unknown schema version {found!r}: this perfgate reads {schema}; "
                "upgrade perfgate to read newer documents"
            )
        else:
            message = other(found)
        raise DocumentError(message, path="schema", source=source)
    problem = document_json.first_problem(data, free_form_only=free_form_only)
    if problem is not None:
        raise DocumentError(problem[1], path=problem[0], source=source)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise document_error(exc, source) from None


def parse_benchmark(data: object, *, source: str = "", path: str = "") -> Benchmark:
    """One benchmark entry checked on its own (a measured instance on its way into a document):
    its fields and their types. The rules across entries and metrics are `parse_document`'s."""
    try:
        return Benchmark.model_validate(data)
    except ValidationError as exc:
        error = document_error(exc, source)
        inner = f"{path}.{error.path}" if path and error.path else path or error.path
        raise DocumentError(error.detail, path=inner, source=source) from None


def _check_consistency(document: ResultsDocument, source: str) -> None:
    """Rules that span fields, which pydantic's per-field validation cannot name precisely."""
    check_benchmarks(document.benchmarks, start=0, seen={}, source=source)


def check_benchmarks(
    benchmarks: Sequence[Benchmark], *, start: int, seen: dict[str, int], source: str = ""
) -> None:
    """`parse_document`'s rules across the fields of `benchmarks`, the document's benchmarks from
    index `start` on; `seen` maps the keys of those before them to their index, and gets theirs.
    """
    for i, bench in enumerate(benchmarks, start):
        where = f"benchmarks[{i}]"
        expected = make_key(bench.name, bench.params)
        if bench.key != expected:
            raise DocumentError(
                f"key {bench.key!r} does not match name and params (expected {expected!r})",
                path=f"{where}.key",
                source=source,
            )
        if bench.key in seen:
            raise DocumentError(
                f"duplicate key {bench.key!r} (also benchmarks[{seen[bench.key]}])",
                path=f"{where}.key",
                source=source,
            )
        seen[bench.key] = i
        if bench.error is None and not bench.metrics:
            raise DocumentError(
                "a benchmark without an error needs at least one metric",
                path=f"{where}.metrics",
                source=source,
            )
        for name, metric in bench.metrics.items():
            _check_metric(metric, f"{where}.metrics.{name}", source)
        if bench.profile is not None:
            ops: dict[str, int] = {}
            for j, op in enumerate(bench.profile.ops):
                if op.op in ops:
                    raise DocumentError(
                        f"duplicate op {op.op!r} (also ops[{ops[op.op]}])",
                        path=f"{where}.profile.ops[{j}].op",
                        source=source,
                    )
                ops[op.op] = j


def _check_metric(metric: Metric, where: str, source: str) -> None:
    if (metric.samples is None) == (metric.value is None):
        raise DocumentError(
            "a metric needs exactly one of 'samples' and 'value'", path=where, source=source
        )
    if metric.samples is not None:
        if not metric.samples:
            raise DocumentError("empty sample list", path=f"{where}.samples", source=source)
        if metric.exact:
            raise DocumentError(
                "an exact metric has a 'value', not 'samples'", path=f"{where}.exact", source=source
            )
    if metric.rounds is not None:
        if metric.samples is None:
            raise DocumentError("'rounds' needs 'samples'", path=f"{where}.rounds", source=source)
        if not metric.rounds or any(r == 0 for r in metric.rounds):
            raise DocumentError(
                "every round needs at least one sample", path=f"{where}.rounds", source=source
            )
        if sum(metric.rounds) != len(metric.samples):
            raise DocumentError(
                f"rounds add up to {sum(metric.rounds)} samples but there are "
                f"{len(metric.samples)}",
                path=f"{where}.rounds",
                source=source,
            )


_PYDANTIC_MESSAGES = {
    "missing": "missing field",
    "extra_forbidden": "unknown field",
    "literal_error": "must be one of the allowed words",
}


def document_error(exc: ValidationError, source: str) -> DocumentError:
    errors = exc.errors(include_url=False)
    first = errors[0]
    path = format_path(first["loc"]) + str((first.get("ctx") or {}).get("at", ""))
    message = _PYDANTIC_MESSAGES.get(first["type"], first["msg"])
    if first["type"] not in _PYDANTIC_MESSAGES or first["type"] == "literal_error":
        message = (
            first["msg"].replace("Input should be", "must be").replace("String should", "must")
        )
    if "[key]" in first["loc"]:
        message = f"bad name: {message}"
        if first["type"] == "string_pattern_mismatch":
            message = "bad name: use lower-case letters, digits and _ (at most 64 characters)"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return DocumentError(message, path=path, source=source)


def format_path(loc: Sequence[int | str]) -> str:
    """('benchmarks', 3, 'metrics', 'time') -> 'benchmarks[3].metrics.time'."""
    out = ""
    for part in loc:
        if part == "[key]":  # pydantic's marker for "the dict key itself"
            continue
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _human(size: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


# --- writing -------------------------------------------------------------------------------


def dump_document(document: ResultsDocument, path: str | Path) -> Path:
    """Write a document as JSON (parents created); returns the path written."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    # Written whole then renamed, so a crash never leaves half a document behind.
    tmp.write_text(
        json.dumps(document.to_json_dict(), indent=1, allow_nan=False) + "\n", encoding="utf-8"
    )
    tmp.replace(out)
    return out
