"""A decoded results document validated a slice of benchmarks at a time.

The store writes each slice while the next one is validated (store/streamed_upload.py), so the
parse of a large upload runs beside the database's work instead of before it, and only a few
slices of pydantic objects are alive at once. For a document `parse_document` accepts, the
slices hold exactly its benchmarks and `content_hash` is its content hash. Naming what is wrong
with a document is left to `parse_document`: whatever the slices cannot accept on their own (a
document outside the common case, a broken rule) raises `SlicesRefusedError`, and the caller then
runs the whole-document path, whose answer is the one a user gets.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from perfgate import document_json
from perfgate.errors import DocumentError
from perfgate.results import (
    BENCHMARK_LIST,
    SCHEMA,
    ContentHasher,
    ResultsDocument,
    check_benchmarks,
)

# Benchmarks validated, and then written, together: about 64 MiB of objects at 7.8 KiB a
# benchmark, eight slices for the 60,000 benchmarks of bench/upload_throughput.py's large
# document. Smaller slices overlap more but cost a statement and a foreign-key check each: 2,048
# took 6.4-6.8 s where 8,192 took 5.8-6.3 s (docs/service.md).
SLICE = 8192


class SlicesRefusedError(Exception):
    """The slices cannot accept this document on their own: `parse_document` must judge it."""


@dataclass(frozen=True)
class Slice:
    # The index of the slice's first benchmark in the whole document.
    start: int
    # The document's run and environment with this slice's benchmarks only.
    document: ResultsDocument


class DocumentSlices:
    """The document's run and environment, validated (`head`), and its benchmarks a slice at a
    time (`slices`); built by `open_slices`."""

    def __init__(self, head: ResultsDocument, items: list[Any]) -> None:
        self.head = head
        self._items = items
        self._hasher = ContentHasher()
        self._done = False

    def slices(self) -> Iterator[Slice]:
        """The benchmarks, validated and checked against those before them, `SLICE` at a time.

        The decoded data of each slice is dropped once validated (the caller's data is left
        without its benchmarks), so a refusal needs the document decoded again.
        """
        seen: dict[str, int] = {}
        items = self._items
        for start in range(0, len(items), SLICE):
            end = min(start + SLICE, len(items))
            try:
                benchmarks = BENCHMARK_LIST.validate_python(items[start:end])
                check_benchmarks(benchmarks, start=start, seen=seen)
            except (ValidationError, DocumentError):
                raise SlicesRefusedError(f"benchmarks[{start}:{end}]") from None
            items[start:end] = [None] * (end - start)
            yield Slice(
                start=start, document=self.head.model_copy(update={"benchmarks": benchmarks})
            )
            # Hashed once handed over: the writer has it meanwhile.
            self._hasher.add_benchmarks(benchmarks)
        self._done = True

    def content_hash(self) -> str:
        """The whole document's content hash, once every slice has been taken."""
        assert self._done, "the content hash needs every slice"
        return self._hasher.hexdigest(self.head)


def open_slices(data: object, *, flagged: bool) -> DocumentSlices:
    """The slices of decoded `data` (`document_json.decode_checked`'s, with its `flagged`).

    Refused outside the common case, where `parse_document` has more to say: text the decoder
    flagged (a duplicate key, a huge integer, an escaped NUL or surrogate), no benchmarks list,
    a broken rule in the free-form fields or an invalid run or environment.
    """
    if flagged or not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise SlicesRefusedError("not the common case")
    items = data.get("benchmarks")
    if not isinstance(items, list) or document_json.first_problem(data, free_form_only=True):
        raise SlicesRefusedError("not the common case")
    try:
        head = ResultsDocument.model_validate({**data, "benchmarks": []})
    except ValidationError:
        raise SlicesRefusedError("the run or the environment") from None
    return DocumentSlices(head, items)
