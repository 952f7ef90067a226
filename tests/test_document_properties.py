"""Property-based checks of the results document: what the validator accepts survives, the rest
is refused with a field path.

- every accepted document stores and reads back with its content hash, on SQLite and PostgreSQL;
- any two accepted documents compare (the library path `perfgate compare` takes);
- a valid document broken in one place (a wrong type, a timestamp out of range, a huge integer,
  a lone surrogate, deep nesting, a duplicate key, NaN) is a DocumentError (exit 2) naming the
  field, through the library and the CLI, and HTTP 422 naming it through the API; never another
  exception.

Deterministic (`derandomize=True`, no example database), so `make test` gives the same result
on every run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.apihelpers import LiveServer, make_tokens
from perfgate import document_slices
from perfgate.api.app import create_app
from perfgate.cli import cli
from perfgate.config import Settings
from perfgate.errors import DocumentError
from perfgate.results import ResultsDocument, make_key, parse_document, parse_document_bytes
from perfgate.sides import Side, compare_sides
from perfgate.stats.two_sample import CompareSettings
from perfgate.store.connect import Store, open_store
from perfgate.store.documents import rebuild_document
from perfgate.store.uploads import store_document, store_document_bytes

PROPERTY = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # one store per test, one project per example
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)

# --- valid documents -------------------------------------------------------------------------

# Unicode as JSON carries it: no lone surrogates (hypothesis leaves them out of utf-8 text), no NUL.
_CHAR = st.characters(codec="utf-8", exclude_characters="\x00")
TEXT = st.text(_CHAR, max_size=12)
NAME = st.text(_CHAR, min_size=1, max_size=24).filter(lambda s: s.strip() != "")
# Integers anywhere in a document fit a float64; floats are finite (and may be -0.0).
INTEGER = st.one_of(
    st.integers(-(2**64), 2**64), st.integers(-(10**308), 10**308), st.sampled_from([0, -1])
)
FLOAT = st.floats(allow_nan=False, allow_infinity=False)
FREE_LEAF = st.one_of(st.none(), st.booleans(), INTEGER, FLOAT, TEXT)
FREE_VALUE = st.recursive(
    FREE_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)
PARAM = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), FLOAT, TEXT)
METRIC_NAME = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True)
# Samples: ordinary timings, zeros, the smallest and largest floats, integers.
SAMPLE = st.one_of(
    st.floats(min_value=0.0, max_value=1e-2),
    st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1.0, 1e300, 1.7976931348623157e308]),
    st.integers(0, 10**6),
    st.floats(min_value=0.0, allow_infinity=False),
)
VALUE = st.one_of(st.floats(min_value=0.0, allow_infinity=False), st.integers(0, 10**300))
HEX = st.from_regex(r"[0-9a-fA-F]{7,64}", fullmatch=True)


@st.composite
def timestamps(draw: st.DrawFn) -> str:
    """ISO-8601 text in every form the validator reads, always within years 1-9999 in UTC."""
    when = draw(
        st.datetimes(
            min_value=datetime(1, 1, 2),
            max_value=datetime(9999, 12, 30, 23, 59, 59, 999999),
        )
    )
    text = when.isoformat()
    zone = draw(st.sampled_from(["", "Z", "offset"]))
    if zone == "offset":
        minutes = draw(st.integers(-(23 * 60 + 59), 23 * 60 + 59))
        sign = "-" if minutes < 0 else "+"
        text += f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return text + ("Z" if zone == "Z" else "")


@st.composite
def sampled_metric(draw: st.DrawFn, *, direction: str | None = None) -> dict[str, Any]:
    samples = draw(st.lists(SAMPLE, min_size=1, max_size=12))
    metric: dict[str, Any] = {
        "unit": draw(st.sampled_from(["s", "B", "items/s", ""])),
        "direction": direction or draw(st.sampled_from(["lower", "higher"])),
        "samples": samples,
    }
    if len(samples) > 1 and draw(st.booleans()):
        cuts = sorted(draw(st.sets(st.integers(1, len(samples) - 1), max_size=4)))
        bounds = [0, *cuts, len(samples)]
        metric["rounds"] = [b - a for a, b in itertools.pairwise(bounds)]
    if draw(st.booleans()):
        metric["note"] = draw(TEXT)
    return metric


@st.composite
def valued_metric(draw: st.DrawFn) -> dict[str, Any]:
    metric: dict[str, Any] = {
        "unit": draw(st.sampled_from(["B", "flop", "count"])),
        "direction": draw(st.sampled_from(["lower", "higher"])),
        "value": draw(VALUE),
        "exact": draw(st.booleans()),
    }
    if draw(st.booleans()):
        metric["method"] = draw(st.sampled_from(["rss_hwm", "cuda_allocator"]))
    return metric


@dataclass(frozen=True)
class Shape:
    """The benchmarks of a document without their measurements: what two sides share."""

    benchmarks: list[tuple[str, dict[str, Any], list[str]]]  # name, params, valued metric names


@st.composite
def shapes(draw: st.DrawFn) -> Shape:
    entries = draw(
        st.lists(
            st.tuples(
                st.one_of(NAME, st.sampled_from(["kernel", "matmul", "ünïcode ✓", "😀"])),
                st.dictionaries(TEXT, PARAM, max_size=3),
                st.lists(METRIC_NAME.filter(lambda n: n != "time"), max_size=2, unique=True),
            ),
            min_size=1,
            max_size=5,
            unique_by=lambda e: make_key(e[0], e[1]),
        )
    )
    return Shape(benchmarks=entries)


@st.composite
def documents(draw: st.DrawFn, shape: Shape | None = None) -> dict[str, Any]:
    """A valid results@1 document (of `shape`'s benchmarks when given)."""
    shape = shape or draw(shapes())
    benchmarks = []
    for name, params, valued in shape.benchmarks:
        failed = draw(st.integers(0, 9)) == 0
        metrics: dict[str, Any] = {}
        if not failed or draw(st.booleans()):
            metrics["time"] = draw(sampled_metric(direction="lower"))
            for metric in valued:
                metrics[metric] = draw(st.one_of(valued_metric(), sampled_metric()))
        bench: dict[str, Any] = {
            "name": name,
            "params": params,
            "key": make_key(name, params),
            "device": draw(st.one_of(st.none(), st.sampled_from(["cpu", "cuda:0"]))),
            "error": draw(TEXT) if failed else None,
            "tags": draw(st.lists(TEXT, max_size=2)),
            "metrics": metrics,
        }
        if draw(st.booleans()):
            ops = draw(st.lists(NAME, max_size=3, unique=True))
            bench["profile"] = {
                "ops": [{"op": op, "count": draw(VALUE), "self_cpu_us": draw(VALUE)} for op in ops],
                "trace": draw(st.one_of(st.none(), TEXT)),
            }
        benchmarks.append(bench)
    started = draw(timestamps())
    environment = draw(st.dictionaries(TEXT.filter(lambda k: k != "fingerprint"), FREE_VALUE))
    return {
        "schema": "perfgate/results@1",
        "run": {
            "id": str(uuid.UUID(int=draw(st.integers(0, 2**128 - 1)), version=4)),
            "project": draw(NAME),
            "commit": draw(HEX),
            "branch": draw(st.one_of(st.none(), NAME)),
            "pr": draw(st.one_of(st.none(), st.integers(1, 2**31 - 1))),
            "base_commit": draw(st.one_of(st.none(), HEX)),
            "started_at": started,
            "finished_at": draw(st.one_of(st.none(), timestamps())),
            "ci": draw(st.dictionaries(TEXT, FREE_VALUE, max_size=4)),
        },
        "environment": {"fingerprint": draw(NAME), **environment},
        "benchmarks": benchmarks,
    }


def _isolated(data: dict[str, Any]) -> ResultsDocument:
    """The document as a run of its own, in a project and environment of its own: a store shares
    benchmarks by (project, key) and environments by fingerprint, which this property is not
    about (see the last tests of this file)."""
    unique = uuid.uuid4().hex[:12]
    data["run"]["id"] = str(uuid.uuid4())  # drawn ids repeat across examples (0 when shrunk)
    data["run"]["project"] = f"{data['run']['project'][:180]}-{unique}"
    data["environment"]["fingerprint"] = f"{data['environment']['fingerprint'][:100]}-{unique}"
    return parse_document_bytes(json.dumps(data).encode())


@pytest.fixture
def opened(db_url: str) -> Iterator[Store]:
    with open_store(db_url) as store:
        yield store


@settings(PROPERTY, max_examples=200)
@given(data=documents())
def test_content_hash_is_the_hash_of_one_canonical_dump(data: dict[str, Any]) -> None:
    """The stored hashes are idempotency keys: however the hash is computed, it is sha256 of
    one canonical dump of the validated document, as it always was."""
    document = parse_document_bytes(json.dumps(data).encode())
    text = json.dumps(document.to_json_dict(), sort_keys=True, separators=(",", ":"))
    assert document.content_hash() == hashlib.sha256(text.encode()).hexdigest()


def _store_whole(store: Store, document: ResultsDocument) -> bool:
    return store_document(store.sessions, document).created


def _store_while_validated(store: Store, document: ResultsDocument) -> bool:
    # The HTTP upload's way, two benchmarks a slice here (document_slices).
    raw = json.dumps(document.to_json_dict()).encode()
    return store_document_bytes(store.sessions, raw).created


# Summaries of samples near the largest float overflow numpy's sums (inf, with a warning).
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("store_way", [_store_whole, _store_while_validated])
@settings(PROPERTY, max_examples=100)
@given(data=documents())
def test_accepted_documents_store_and_read_back(
    opened: Store,
    data: dict[str, Any],
    store_way: Callable[[Store, ResultsDocument], bool],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(document_slices, "SLICE", 2)
    document = _isolated(data)
    assert store_way(opened, document)
    with opened.sessions() as session:
        back = rebuild_document(session, run_id=document.run.id)
    assert back is not None
    assert back.content_hash() == document.content_hash()
    assert back.to_json_dict() == document.to_json_dict()
    # Stored again: the same content, so nothing is written.
    assert not store_way(opened, back)


@st.composite
def sides(draw: st.DrawFn) -> tuple[list[ResultsDocument], list[ResultsDocument]]:
    """One or two runs a side, mostly of the same benchmarks (some only on one side)."""
    shape = draw(shapes())
    other = Shape(benchmarks=shape.benchmarks[: draw(st.integers(1, len(shape.benchmarks)))])
    base = draw(st.lists(documents(shape), min_size=1, max_size=2))
    head = draw(st.lists(documents(draw(st.sampled_from([shape, other]))), min_size=1, max_size=2))
    for side in (base, head):
        for doc in side[1:]:  # runs pooled on one side are runs of one project and commit
            doc["run"].update(project=side[0]["run"]["project"], commit=side[0]["run"]["commit"])
    return [parse_document(d) for d in base], [parse_document(d) for d in head]


# Extreme samples make infinities and NaN inside numpy (with warnings), never an exception.
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(PROPERTY, max_examples=100)
@given(pair=sides())
def test_accepted_documents_compare(
    pair: tuple[list[ResultsDocument], list[ResultsDocument]],
) -> None:
    base, head = pair
    # Fewer bootstrap resamples than the CLI's 1,000 (the same code path, a fifth of the time).
    settings = CompareSettings(resamples=200)
    comparison = compare_sides(
        Side(documents=base), Side(documents=head), settings=settings, history=[]
    )
    keys = {b.key for d in (*base, *head) for b in d.benchmarks}
    assert {r.key for r in comparison.results} == keys


# --- invalid documents -----------------------------------------------------------------------

_BIG = "__BIG_INTEGER__"


@dataclass(frozen=True)
class Broken:
    """A document broken in one place: its JSON text and the path the error must name."""

    raw: bytes
    path: str


def _dump(data: dict[str, Any], big: str = "") -> bytes:
    text = json.dumps(data)
    # json.dumps cannot write integers past 4,300 digits: they go in as text.
    return text.replace(f'"{_BIG}"', big).encode()


def _places(data: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(path, container, key) of the typed and free-form places a mutation may hit."""
    places: list[tuple[str, Any, Any]] = [
        ("run.commit", data["run"], "commit"),
        ("run.started_at", data["run"], "started_at"),
        ("run.project", data["run"], "project"),
        ("environment.fingerprint", data["environment"], "fingerprint"),
    ]
    for i, bench in enumerate(data["benchmarks"]):
        places.append((f"benchmarks[{i}].name", bench, "name"))
        for name, metric in bench["metrics"].items():
            where = f"benchmarks[{i}].metrics.{name}"
            places.append((f"{where}.direction", metric, "direction"))
            if "samples" in metric:
                j = len(metric["samples"]) - 1
                places.append((f"{where}.samples[{j}]", metric["samples"], j))
            else:
                places.append((f"{where}.value", metric, "value"))
    return places


_WRONG = [[], {}, True, None, 1.5, [1, 2]]
_BAD_TIMES = st.sampled_from(
    ["9999-12-31T23:00-05:00", "0001-01-01T00:30+01:00", "2026-13-01T00:00:00", "", "soon"]
)


@st.composite
def broken_documents(draw: st.DrawFn) -> Broken:
    data = draw(documents())
    kind = draw(
        st.sampled_from(
            ["type", "time", "integer", "surrogate", "depth", "duplicate", "nan", "key"]
        )
    )
    places = _places(data)
    if kind == "type":
        path, container, key = draw(st.sampled_from(places))
        numeric = path.endswith(("value", "]"))
        # No strings where any string would do: "x" is a fine project or name.
        container[key] = draw(st.sampled_from(["x", [], {}, True] if numeric else _WRONG))
        return Broken(_dump(data), path)
    if kind == "time":
        field = draw(st.sampled_from(["started_at", "finished_at"]))
        data["run"][field] = draw(_BAD_TIMES)
        return Broken(_dump(data), f"run.{field}")
    if kind == "integer":
        digits = draw(st.sampled_from([310, 401, 4300, 4301, 5000]))
        number = ("-" if draw(st.booleans()) else "") + "9" * digits
        numeric = [p for p in places if p[0].endswith(("value", "]"))]
        path, container, key = draw(
            st.sampled_from([*numeric, ("run.ci.n", data["run"]["ci"], "n")])
        )
        container[key] = _BIG
        return Broken(_dump(data, big=number), path)
    if kind == "surrogate":
        lone = chr(draw(st.integers(0xD800, 0xDFFF)))
        where = draw(st.sampled_from(["name", "environment", "ci-key", "ci-value", "tag"]))
        if where == "name":
            bench = data["benchmarks"][0]
            bench["name"] += lone
            bench["key"] = make_key(bench["name"], bench["params"])
            path = "benchmarks[0].name"
        elif where == "environment":
            data["environment"]["host"] = f"h{lone}"
            path = "environment.host"
        elif where == "ci-key":
            data["run"]["ci"] = {f"k{lone}": 1}
            path = f"run.ci.k\\u{ord(lone):04x}"
        elif where == "ci-value":
            data["run"]["ci"] = {"k": [1, {"v": lone}]}
            path = "run.ci.k[1].v"
        else:
            data["benchmarks"][0]["tags"] = [lone]
            path = "benchmarks[0].tags[0]"
        return Broken(_dump(data), path)
    if kind == "depth":
        levels = draw(st.integers(32, 400))
        value: Any = 0
        for _ in range(levels):
            value = [value]
        data["run"]["ci"] = {"deep": value}
        return Broken(_dump(data), "run.ci.deep" + "[0]" * 31)
    if kind == "duplicate":
        data["run"]["ci"] = {"attempt": 1}
        text = json.dumps(data).replace('"attempt": 1', '"attempt": 1, "attempt": 2', 1)
        return Broken(text.encode(), "run.ci")
    if kind == "nan":
        word = draw(st.sampled_from(["NaN", "Infinity", "-Infinity"]))
        if draw(st.booleans()):
            data["run"]["ci"] = {"x": [0, _BIG]}
            return Broken(_dump(data, big=word), "run.ci.x[1]")
        data["environment"]["clock"] = _BIG
        return Broken(_dump(data, big=word), "environment.clock")
    # kind == "key": a key that does not match the name and params
    data["benchmarks"][0]["key"] += "x"
    return Broken(_dump(data), "benchmarks[0].key")


def _only_library(broken: Broken) -> DocumentError:
    try:
        parse_document_bytes(broken.raw, source="bad.json")
    except DocumentError as error:
        return error
    raise AssertionError(f"accepted a document broken at {broken.path}")


@pytest.fixture(scope="module")
def refusing_server(
    tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path
) -> Iterator[tuple[httpx.Client, str]]:
    path = tmp_path_factory.mktemp("refusals") / "perfgate.db"
    path.write_bytes(sqlite_template.read_bytes())
    url = f"sqlite:///{path}"
    token = make_tokens(url)["upload"]
    live = LiveServer(create_app(Settings(db_url=url, max_document_bytes=1 << 20))).start()
    with httpx.Client(base_url=live.url, timeout=60) as client:
        yield client, token
    live.stop()


@settings(PROPERTY, max_examples=200)
@given(broken=broken_documents())
def test_broken_documents_are_refused_naming_the_field(
    broken: Broken, refusing_server: tuple[httpx.Client, str], tmp_path: Path
) -> None:
    error = _only_library(broken)
    assert error.path == broken.path, str(error)
    assert error.exit_code == 2
    line = str(error)
    assert line.startswith(f"bad.json: {broken.path}: ") and "\n" not in line
    line.encode("utf-8")  # printable: it goes to stderr and into a JSON answer

    client, token = refusing_server
    answer = client.post(
        "/api/v1/runs",
        content=broken.raw,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"]["code"] == "invalid_document"
    assert broken.path in answer.json()["error"]["message"]

    file = tmp_path / "bad.json"
    file.write_bytes(broken.raw)
    result = CliRunner().invoke(
        cli, ["upload", str(file), "--db", f"sqlite:///{tmp_path / 'unused.db'}"]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr == f"error: {file}: {error.path}: {error.detail}\n"


# --- documents that share store rows (found by the properties above) -----------------------------


def _pair_sharing(edit: Callable[[dict[str, Any], dict[str, Any]], None]) -> tuple[Any, Any]:
    first = json.loads(json.dumps(_SHARED))
    second = json.loads(json.dumps(_SHARED))
    second["run"]["id"] = str(uuid.uuid4())
    edit(first, second)
    return parse_document(first), parse_document(second)


_SHARED: dict[str, Any] = {
    "schema": "perfgate/results@1",
    "run": {
        "id": "00000000-0000-4000-8000-000000000001",
        "project": "acme/shared",
        "commit": "a" * 40,
        "started_at": "2026-05-01T00:00:00Z",
    },
    "environment": {"fingerprint": "shared"},
    "benchmarks": [
        {
            "name": "k",
            "params": {"n": 1},
            "key": "k[n=1]",
            "metrics": {"time": {"unit": "s", "direction": "lower", "samples": [1e-4]}},
        }
    ],
}


def _environments(first: dict[str, Any], second: dict[str, Any]) -> None:
    first["environment"]["threads"] = 1
    second["environment"]["threads"] = True  # equal to 1 in Python, not in JSON


def _environment_floats(first: dict[str, Any], second: dict[str, Any]) -> None:
    first["environment"]["gpus"] = [{"clock": 0.0, "count": 1}]
    second["environment"]["gpus"] = [{"clock": -0.0, "count": 1.0}]  # equal in Python


def _params(first: dict[str, Any], second: dict[str, Any]) -> None:
    second["benchmarks"][0]["params"] = {"n": "1"}  # the same key, k[n=1]


def _name(first: dict[str, Any], second: dict[str, Any]) -> None:
    # A name that looks like a key: the same key as the name k with params n=1.
    second["benchmarks"][0]["name"] = "k[n=1]"
    second["benchmarks"][0]["params"] = {}


@pytest.mark.parametrize(
    "edit",
    [_environments, _environment_floats, _params, _name],
    ids=["environment", "environment-floats", "params", "name"],
)
def test_documents_sharing_a_store_read_back(
    store: Store, edit: Callable[[dict[str, Any], dict[str, Any]], None]
) -> None:
    first, second = _pair_sharing(edit)
    for document in (first, second):
        store_document(store.sessions, document)
    with store.sessions() as session:
        for document in (first, second):
            back = rebuild_document(session, run_id=document.run.id)
            assert back is not None and back.content_hash() == document.content_hash()
