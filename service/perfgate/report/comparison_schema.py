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

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import PydanticCustomError

from perfgate import document_json
from perfgate.errors import DocumentError
from perfgate.results import document_error
from perfgate.stats.model import COMPARISON_SCHEMA, Flag, Verdict

COMPARISON_SCHEMA_PREFIX = "perfgate/comparison@"


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
    if not isinstance(data, dict):
        raise DocumentError("a comparison document must be a JSON object", source=source)
    schema = data.get("schema")
    if schema != COMPARISON_SCHEMA:
        if isinstance(schema, str) and schema.startswith(COMPARISON_SCHEMA_PREFIX):
            message = (
                f"unknown schema version {schema!r}: this perfgate reads {COMPARISON_SCHEMA}; "
                "upgrade perfgate to read newer documents"
            )
        else:
            message = f"not a {COMPARISON_SCHEMA} document (schema is {schema!r})"
        raise DocumentError(message, path="schema", source=source)
    problem = document_json.first_problem(data)
    if problem is not None:
        raise DocumentError(problem[1], path=problem[0], source=source)
    try:
        return ComparisonDocument.model_validate(data)
    except ValidationError as exc:
        raise document_error(exc, source) from None
