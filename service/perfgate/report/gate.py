"""The gate: which results of a comparison fail it, under a project's `fail_on` and exemptions.

Pure: the CLI builds a `Gate` from the policy (docs/policy.md); the exit code of `perfgate compare
--fail-on-regression`, the commit status and the check run all ask it. The default gate fails on
regressions of every benchmark, as perfgate did before policies.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from perfgate.stats.model import POSSIBLE_REGRESSION, Comparison, MetricResult


def _every_result(key: str, metric: str) -> bool:
    return True


@dataclass(frozen=True)
class Gate:
    """`fail_on`: regression, possible-regression, missing. `gates(key, metric)`: False for a
    result that is shown but may never fail the gate (an informational benchmark, a metric
    outside the benchmark's `required` ones)."""

    fail_on: tuple[str, ...] = ("regression",)
    gates: Callable[[str, str], bool] = _every_result


DEFAULT_GATE = Gate()


def _fails(result: MetricResult, fail_on: tuple[str, ...]) -> bool:
    return (
        (result.verdict == "regression" and "regression" in fail_on)
        or (result.flag == POSSIBLE_REGRESSION and "possible-regression" in fail_on)
        or (result.verdict == "missing" and "missing" in fail_on)
    )


def failures(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> list[MetricResult]:
    """The results that fail the gate."""
    return [
        r for r in comparison.results if gate.gates(r.key, r.metric) and _fails(r, gate.fail_on)
    ]


def suite_fails(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> bool:
    """The whole suite got slower together, and regressions fail the gate."""
    common = comparison.common_factor
    return common is not None and common.verdict == "regression" and "regression" in gate.fail_on


def fails(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> bool:
    return suite_fails(comparison, gate) or bool(failures(comparison, gate))


def failing_benchmarks(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> int:
    """How many benchmarks fail the gate (the suite-wide shift counts as one more)."""
    return len({r.key for r in failures(comparison, gate)}) + suite_fails(comparison, gate)


def unproven(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> bool:
    """A possible regression that may gate but that `fail_on` does not fail on: it needs a look
    (a pending status, a neutral check), never a pass."""
    return any(
        r.flag == POSSIBLE_REGRESSION and gate.gates(r.key, r.metric) for r in comparison.results
    )


def exempt_findings(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> list[MetricResult]:
    """Regressions and possible regressions that the gate lets pass because they are exempt."""
    return [
        r
        for r in comparison.results
        if not gate.gates(r.key, r.metric)
        and (r.verdict == "regression" or r.flag == POSSIBLE_REGRESSION)
    ]
