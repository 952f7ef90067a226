"""Sync GitHub issues with a branch's change points: open, update, close, never duplicate.

Stateless: every sync reads perfgate's own issues back from GitHub (`github/issues.py`) and
matches them to series by their marker, so it can run after every upload, be re-run, or run
from two jobs at once and still keep one issue per series (a duplicate that a race created is
closed on the next sync, pointing at the oldest). What opens, updates and closes an issue is in
docs/github.md, Change-point issues; what the store says each series should show is computed by
`store/change_issues.py`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from perfgate.github.issues import TRACKING_LABEL, IssueAPI, IssueInfo
from perfgate.report.change_issue import (
    BranchChanges,
    Marker,
    Resolution,
    SeriesId,
    close_comment,
    duplicate_comment,
    issue_body,
    issue_title,
    moved_comment,
    parse_marker,
    trend_url,
)


@dataclass(frozen=True)
class Action:
    """One thing the sync did (or chose not to do) for a series."""

    kind: str  # opened, updated, moved, unchanged, closed, duplicate, skipped
    series: SeriesId
    number: int | None = None
    url: str | None = None
    detail: str = ""

    def line(self) -> str:
        where = f"#{self.number} " if self.number is not None else ""
        text = f"{self.kind}: {where}{self.series.key} ({self.series.metric})"
        return text + (f": {self.detail}" if self.detail else "")


@dataclass
class SyncOutcome:
    actions: list[Action] = field(default_factory=list)

    def count(self, kind: str) -> int:
        return sum(1 for a in self.actions if a.kind == kind)


def sync_change_issues(
    api: IssueAPI,
    changes: BranchChanges,
    *,
    labels: Sequence[str] = (),
    assignees: Sequence[str] = (),
    server: str | None = None,
    notify: Callable[[str], None] = lambda _m: None,
    warn: Callable[[str], None] = lambda _m: None,
) -> SyncOutcome:
    """Make the repository's perfgate issues for `changes`' branch and metric match it;
    `notify` gets one line per action, `warn` what a person must fix."""
    outcome = SyncOutcome()
    open_issues: dict[SeriesId, list[tuple[IssueInfo, Marker]]] = defaultdict(list)
    closed: set[tuple[SeriesId, str]] = set()
    for issue in api.own_issues():
        marker = parse_marker(issue.body)
        if marker is None or (
            marker.series.project,
            marker.series.branch,
            marker.series.metric,
        ) != (changes.project, changes.branch, changes.metric):
            continue
        if issue.state == "open":
            open_issues[marker.series].append((issue, marker))
        else:
            closed.add((marker.series, marker.run))
    states = {state.series: state for state in changes.states}

    def done(action: Action) -> None:
        outcome.actions.append(action)
        notify(action.line())

    for series in sorted(open_issues):
        keep, marker = min(open_issues[series], key=lambda pair: pair[0].number)
        for other, _ in sorted(open_issues[series], key=lambda pair: pair[0].number)[1:]:
            api.comment_issue(other, duplicate_comment(keep.number))
            api.close_issue(other)
            done(Action("duplicate", series, other.number, other.html_url, f"of #{keep.number}"))
        state = states.get(series)
        report = state.tracked if state is not None else None
        if report is None:
            resolution = (state.resolutions.get(marker.run) if state else None) or Resolution(
                "vanished"
            )
            api.comment_issue(keep, close_comment(resolution, marker))
            api.close_issue(keep)
            done(Action("closed", series, keep.number, keep.html_url, resolution.kind))
            continue
        title = issue_title(report)
        body = issue_body(report, trend=trend_url(server, series))
        kind = "unchanged"
        if marker.run != report.run:
            assert state is not None
            still = marker.run in state.detected
            api.comment_issue(keep, moved_comment(report, marker, still_detected=still))
            kind = "moved"
        if (keep.title, keep.body) != (title, body):
            api.edit_issue(keep, title=title, body=body)
            kind = "updated" if kind == "unchanged" else kind
        missing = [label for label in labels if label not in keep.labels]
        if missing:
            api.add_labels(keep, missing)
        done(Action(kind, series, keep.number, keep.html_url, f"{report.good}..{report.bad}"))

    for series, state in sorted(states.items()):
        report = state.tracked
        if report is None or series in open_issues:
            continue
        if (series, report.run) in closed:
            # Closing is a person's (or an earlier sync's) last word on this change point.
            done(Action("skipped", series, detail="its issue was closed; not reopened"))
            continue
        if not state.may_open:
            why = (
                "acknowledged in perfgate"
                if report.status != "open"
                else "older than the horizon; opens no new issue"
            )
            done(Action("skipped", series, detail=why))
            continue
        issue = api.create_issue(
            title=issue_title(report),
            body=issue_body(report, trend=trend_url(server, series)),
            labels=list(dict.fromkeys([TRACKING_LABEL, *labels])),
            assignees=list(assignees),
        )
        done(Action("opened", series, issue.number, issue.html_url, f"{report.good}..{report.bad}"))
        if TRACKING_LABEL not in issue.labels:
            # GitHub drops the labels of a new issue, silently, for a token without push access;
            # without the label the next sync cannot find the issue and would open another.
            warn(
                f"GitHub dropped the label {TRACKING_LABEL} from #{issue.number}: the token "
                "needs `issues: write` (and push access) for perfgate to find the issue again"
            )
    return outcome
