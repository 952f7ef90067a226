"""The validator of the comparison document (`perfgate/comparison@1`, docs/results.md).

`perfgate comment` and the Action read comparisons written by another perfgate (a CI job, the
server): the document is checked field by field, like a results document, and every rejection is
one DocumentError that names the field in the document's own terms, e.g.
`results[2].verdict: must be 'regression', 'improvement', ...`. What passes converts to the
comparator's own dataclasses (`perfgate.stats.model`) without further checks.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from perfgate.results import validate_document
from perfgate.stats.model import COMPARISON_SCHEMA, Flag, Verdict


def _finite(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError(
            "not_a_number", "must be a number, got {got}", {"got": type(value).__name__}
        )
    if not math.isfinite(value):
        raise PydanticCustomError(
            "not_finite", "must be a finite number, got {got}", {"got": value}
        )
    return float(value)


def _whole(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise PydanticCustomError(
            "not_a_count", "must be a whole number >= 0, got {got}", {"got": repr(value)}
        )
    return value


Number = Annotated[float, BeforeValidator(_finite)]
Count = Annotated[int, BeforeValidator(_whole)]
Interval = tuple[Number, Number]


class _Model(BaseModel):
    # Unknown fields are refused, as in results@1: a field this perfgate does not know is a newer
    # document (or a typo), and silently dropping it would misreport.
    model_config = ConfigDict(extra="forbid", strict=False)


class SideSummaryModel(_Model):
    n: Count
    median: Number
    iqr: Number
    rounds: Count = 1


class SideInfoModel(_Model):
    commit: str | None
    runs: list[str]
    branch: str | None = None
    label: str | None = None


class OpDeltaModel(_Model):
    op: str
    base_us: Number
    head_us: Number
    delta_us: Number
    base_count: Number
    head_count: Number


def _signed_whole(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise PydanticCustomError(
            "not_an_integer", "must be a whole number, got {got}", {"got": repr(value)}
        )
    return value


SignedCount = Annotated[int, BeforeValidator(_signed_whole)]


class OpBytesDeltaModel(_Model):
    op: str
    base_bytes: Count
    head_bytes: Count
    delta_bytes: SignedCount
    base_count: Number | None = None
    head_count: Number | None = None


class ResultModel(_Model):
    key: str
    benchmark: str
    params: dict[str, str | int | float | bool | None]
    metric: str
    unit: str
    direction: Literal["lower", "higher"]
    exact: bool
    base: SideSummaryModel | None
    head: SideSummaryModel | None
    ratio: Number | None
    ci: Interval | None
    p_value: Number | None
    q_value: Number | None
    threshold: Number
    verdict: Verdict
    reason: str
    noise: str | None = None
    flag: Flag | None = None
    attribution: list[OpDeltaModel] = Field(default_factory=list)
    # Optional fields: absent from documents written before they existed.
    history: list[Number] = Field(default_factory=list)
    levels: list[Number] = Field(default_factory=list)
    baseline_runs: Count = 0
    allocation_attribution: list[OpBytesDeltaModel] = Field(default_factory=list)
    informational: bool = False


class CommonModel(_Model):
    ratio: Number
    ci: Interval
    benchmarks: Count
    verdict: Verdict
    reason: str
    noise: str
    affected: list[str] = Field(default_factory=list)


class SettingsModel(_Model):
    alpha: Number
    threshold: Number


class ComparisonDocument(_Model):
    schema_: Literal["perfgate/comparison@1"] = Field(alias="schema")
    base: SideInfoModel
    head: SideInfoModel
    settings: SettingsModel
    warnings: list[str] = Field(default_factory=list)
    # Derived from `results` when written; read back only to be checked for shape.
    summary: dict[str, Count] | None = None
    common_factor: CommonModel | None = None
    results: list[ResultModel]


def validate_comparison(data: Any, *, source: str = "") -> ComparisonDocument:
    """Check decoded JSON as a comparison document; DocumentError names the first bad field."""
    return validate_document(
        data,
        model=ComparisonDocument,
        schema=COMPARISON_SCHEMA,
        what="comparison",
        other=_not_comparison,
        source=source,
    )


def _not_comparison(schema: object) -> str:
    return f"not a {COMPARISON_SCHEMA} document (schema is {schema!r})"
