"""The verdict in GitHub's small formats: commit status, check run, workflow annotations (pure)."""

from __future__ import annotations

from dataclasses import dataclass

from perfgate.report.gate import DEFAULT_GATE, Gate, unproven
from perfgate.report.gate import fails as gate_fails
from perfgate.report.units import format_change, format_ci, format_value
from perfgate.report.verdicts import (
    affected_list,
    allocating_ops_phrase,
    raw_change,
    raw_ci,
    severity_order,
    shift_phrase,
    shifted,
    summary_phrase,
)
from perfgate.stats.model import POSSIBLE_REGRESSION, Comparison, MetricResult

STATUS_DESCRIPTION_LIMIT = 140
CHECK_TITLE_LIMIT = 255
CHECK_SUMMARY_LIMIT = 65_535
# GitHub shows at most 10 warning annotations per step (and 50 per job); the rest are dropped.
ANNOTATIONS_PER_STEP = 10
# Regressions and possible regressions get all but two: those stay free for perfgate's own
# warnings (no PR found, no check run), which must not be the ones GitHub drops.
REGRESSION_ANNOTATIONS = ANNOTATIONS_PER_STEP - 2
# $GITHUB_STEP_SUMMARY is refused above 1 MiB per step.
STEP_SUMMARY_LIMIT = 1024 * 1024
# Verdicts that mean both sides were measured and looked at.
_COMPARED = ("regression", "improvement", "unchanged", "inconclusive", "error")
# What `--mode on-change` counts as a change worth a comment.
_CHANGES = ("regression", "improvement", "missing", "new", "error")


def nothing_to_compare(comparison: Comparison) -> bool:
    return not any(r.verdict in _COMPARED for r in comparison.results)


def has_changes(comparison: Comparison) -> bool:
    """Anything a reviewer should see: a verdict other than unchanged/inconclusive, a possible
    regression, or a shift."""
    return (
        shifted(comparison) is not None
        or bool(comparison.possible_regressions())
        or any(r.verdict in _CHANGES for r in comparison.results)
    )


def needs_attention(comparison: Comparison) -> bool:
    """A regression, or a possible regression (what `--mode on-regression` comments on)."""
    return comparison.has_regression() or bool(comparison.possible_regressions())


def fit(text: str, limit: int, *, note: str = " …") -> str:
    """`text` cut to at most `limit` characters (ending with `note` when cut)."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - len(note))].rstrip() + note


def status_state(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> str:
    """`failure` when the gate fails (regressions, by default), `pending` for possible
    regressions, else `success`; an exempt benchmark (informational) changes neither.

    Commit statuses have no neutral state (only error, failure, pending, success). A possible
    regression is not proven, so not `failure`; perfgate did not break, so not `error`; it must
    never look green, so not `success`. `pending` says the verdict waits on more evidence (a
    re-run with more rounds replaces it), and the description names the possible regression.
    """
    if gate_fails(comparison, gate):
        return "failure"
    if unproven(comparison, gate):
        return "pending"
    return "success"


def status_description(comparison: Comparison) -> str:
    """`2 regressions, 1 improvement, 31 unchanged` (benchmarks, as the comment's headline),
    cut at a comma to fit 140 characters."""
    phrase = summary_phrase(comparison)
    if len(phrase) <= STATUS_DESCRIPTION_LIMIT:
        return phrase
    kept = ""
    for part in phrase.split(", "):
        candidate = f"{kept}, {part}" if kept else part
        if len(candidate) + 2 > STATUS_DESCRIPTION_LIMIT:
            break
        kept = candidate
    return fit(kept or phrase, STATUS_DESCRIPTION_LIMIT - 2, note="") + " …"


def check_conclusion(comparison: Comparison, gate: Gate = DEFAULT_GATE) -> str:
    """`failure` when the gate fails (regressions, by default), `neutral` for possible
    regressions or when nothing could be compared, else `success`."""
    if gate_fails(comparison, gate):
        return "failure"
    if unproven(comparison, gate) or nothing_to_compare(comparison):
        return "neutral"
    return "success"


def check_title(comparison: Comparison) -> str:
    return fit(summary_phrase(comparison), CHECK_TITLE_LIMIT)


def check_summary(markdown: str) -> str:
    return fit(
        markdown,
        CHECK_SUMMARY_LIMIT,
        note="\n\n_Cut to fit the check run's 65,535-character limit; see the job summary._\n",
    )


@dataclass(frozen=True)
class Annotation:
    title: str
    message: str


def _annotation(result: MetricResult, title: str) -> Annotation:
    base = format_value(result.base.median, result.unit) if result.base else "—"
    head = format_value(result.head.median, result.unit) if result.head else "—"
    ci = raw_ci(result)
    ops = allocating_ops_phrase(result)
    return Annotation(
        title=f"perfgate: {result.key} {result.metric} {title}",
        message=(
            f"{result.key} {result.metric}: {base} → {head} "
            f"({format_change(raw_change(result))}"
            + (f", 95% CI {format_ci(ci)}" if ci else "")
            + f"). {result.reason}"
            + (f"; {ops}" if ops else "")
        ),
    )


def regression_annotations(
    comparison: Comparison, *, limit: int = REGRESSION_ANNOTATIONS
) -> list[Annotation]:
    """One warning per regression, worst first, then one per possible regression; past `limit`,
    the last one counts the rest."""
    ordered = severity_order(comparison.results)
    notes = []
    common = shifted(comparison)
    if common is not None and common.verdict == "regression":
        # Each affected benchmark is also judged on its own change: the shift names them once.
        message = common.reason
        if common.affected:
            message = f"{message.rstrip().rstrip('.')}. Moved together: "
            message += f"{affected_list(common)}."
        notes.append(Annotation(title=f"perfgate: {shift_phrase(common)}, slower", message=message))
    notes += [_annotation(r, "regressed") for r in ordered if r.verdict == "regression"]
    possible = [r for r in ordered if r.flag == POSSIBLE_REGRESSION]
    notes += [_annotation(r, "possible regression") for r in possible]
    if len(notes) > limit:
        rest = len(notes) - (limit - 1)
        # Possible regressions come last, so they are the first to be counted rather than named.
        possible_left = min(rest, len(possible))
        what = (
            "regressions"
            if not possible_left
            else "possible regressions"
            if possible_left == rest
            else "regressions and possible regressions"
        )
        notes = [
            *notes[: limit - 1],
            Annotation(
                title=f"perfgate: more {what}",
                message=f"{rest} more {what}: see the job summary or the PR comment",
            ),
        ]
    return notes
