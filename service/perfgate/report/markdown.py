"""The comparison as GitHub markdown: the PR comment body and the job summary (no I/O here).

Layout: the headline (benchmarks counted, the worst change named); one line of what was
compared; the benchmarks that moved with a suite-wide shift; the table of regressions and
improvements; one section per regressed benchmark (its metrics' evidence, the ops that moved
once, a mermaid trend chart); the possible regressions on their own; warnings; the other
noteworthy results folded (errors, missing, new, inconclusive with why), unchanged ones only
counted; links. Nothing changed: a handful of lines whatever the suite's size. Many changes are
cut to fit GitHub's 65,536-character comment limit, least important parts first, with a note
saying what was left out. The parts themselves are in `report.comment_parts`.

Every string that came from a results document (keys, metric and op names, units, branches,
labels, warnings, noise notes, reasons) goes through `report.untrusted`: names as code spans,
the rest as escaped text, so a hostile name renders as itself and nothing else.
"""

from __future__ import annotations

from perfgate.report import comment_parts as parts
from perfgate.report.comment_parts import TOP_OPS_SHOWN, Links
from perfgate.report.untrusted import code_span, plain_text
from perfgate.report.verdicts import headline as _headline
from perfgate.report.verdicts import severity_order
from perfgate.stats.model import POSSIBLE_REGRESSION, Comparison

__all__ = ["COMMENT_LIMIT", "TOP_OPS_SHOWN", "Links", "headline", "render_markdown"]

# GitHub refuses comments over 65,536 characters; stay clear of it with room for a marker.
COMMENT_LIMIT = 60_000
# The changes table may take this share of the budget; the rest goes to the sections after it.
CHANGES_SHARE = 0.45
# Room kept for notes about what was cut and the folded table's frame.
RESERVE = 600


def headline(comparison: Comparison) -> str:
    """The one line a reviewer acts on, names as code spans and labels escaped."""
    return _headline(comparison, name=code_span, text=plain_text)


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def render_markdown(
    comparison: Comparison, *, limit: int = COMMENT_LIMIT, links: Links | None = None
) -> str:
    """The PR comment / job summary for `comparison`, at most `limit` characters."""
    links = links or Links()
    branch = comparison.base.branch
    ordered = severity_order(comparison.results)
    changed = [r for r in ordered if r.verdict in ("regression", "improvement")]
    possible = [r for r in ordered if r.flag == POSSIBLE_REGRESSION]
    quiet = not changed and not possible and parts.shift_lines(comparison) == []

    top = [
        f"### {headline(comparison)}",
        "",
        parts.compared_line(comparison, quiet=quiet),
        "",
        *parts.shift_lines(comparison),
    ]
    warnings = parts.warning_lines(comparison)
    footer = parts.footer_lines(comparison, links)
    budget = limit - _size(top) - _size(warnings) - _size(footer) - RESERVE

    changes = parts.changes_table(
        changed, links=links, branch=branch, budget=int(budget * CHANGES_SHARE)
    )
    budget -= _size(changes)
    # Each later part may use half of what is left, so the ones after it keep some room.
    details = parts.regression_details(
        [r for r in changed if r.verdict == "regression"], branch=branch, budget=budget // 2
    )
    budget -= _size(details)
    flagged = parts.possible_section(possible, links=links, branch=branch, budget=budget // 2)
    budget -= _size(flagged)
    others = parts.others_folded(ordered, quiet=quiet, branch=branch, budget=budget)

    body = [*top, *changes, *details, *flagged, *warnings, *others, *footer]
    text = "\n".join(body) + "\n"
    if len(text) > limit:
        # Only reachable with a tiny limit: keep the verdict and say where the rest is.
        note = "\n\n_Cut to fit GitHub's size limit; see the comparison JSON._\n"
        text = text[: max(0, limit - len(note))] + note
    return text
