"""The GitHub issue of a step in main's history: its facts, marker, title, body and comments.

One issue per (project, branch, benchmark, metric) tracks that series' latest slowdown (the
rules are in docs/github.md, Change-point issues). The issue is found again by the marker on its
first line, `<!-- perfgate:change-point project=P branch=B benchmark=K metric=M run=R
range=GOOD..BAD -->`, every value percent-encoded so that no key can end the comment or forge a
field. Everything taken from results documents (keys, metric, branch, op names, units) reaches
the markdown through `report/untrusted.py`. Pure rendering: no I/O.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from urllib.parse import quote, unquote, urlencode

from perfgate.report.units import format_change, format_ci, format_value
from perfgate.report.untrusted import code_block, code_span, one_line, plain_text
from perfgate.stats.model import OpDelta
from perfgate.stats.step import StepSize

MARKER_PREFIX = "<!-- perfgate:change-point "
_MARKER = re.compile(r"<!-- perfgate:change-point ((?:[a-z]+=[^\s]* )+)-->")
_RANGE = re.compile(r"([0-9a-f]{7,64})\.\.([0-9a-f]{7,64})")
_FIELDS = ("project", "branch", "benchmark", "metric", "run", "range")
# GitHub refuses titles past 256 characters (and bodies past 65,536, which a body cannot reach:
# a key is at most 1,000 characters, a branch 255, and op names are cut to KEY_SHOWN).
TITLE_CHARS = 256
# A key is shown at most this long in the title and the heading (the command keeps it whole).
KEY_SHOWN = 200
OPS_SHOWN = 8
SHORT_SHA = 12


@dataclass(frozen=True, order=True)
class SeriesId:
    """The series an issue belongs to: one open issue per series, ever."""

    project: str
    branch: str
    key: str
    metric: str


@dataclass(frozen=True)
class Marker:
    """What an issue's first line says: its series, and the change point it reports."""

    series: SeriesId
    run: str
    good: str
    bad: str


@dataclass(frozen=True)
class StepReport:
    """One stored change point, as an issue reports it."""

    series: SeriesId
    run: str  # the first run of the new segment: the change point's id in the store
    status: str  # open or acknowledged (dismissed ones are never reported)
    unit: str
    direction: str
    step: StepSize
    good: str  # commit of the last run before the step
    bad: str  # commit of the first run after it
    threshold: float
    ops: tuple[OpDelta, ...] = ()
    # Profiled runs whose ops were compared: (before the step, after it).
    profiled: tuple[int, int] = (0, 0)

    @property
    def marker(self) -> Marker:
        return Marker(series=self.series, run=self.run, good=self.good, bad=self.bad)


@dataclass(frozen=True)
class Resolution:
    """Why a series' issue closes (or what became of a change point an issue reported).

    kind: `dismissed` (a person said noise), `vanished` (the detector no longer sees it, or it is
    no longer a slowdown), `recovered` (a later step brought the level back), `small` (the step
    is now under the threshold), `ignored` (the policy ignores the benchmark).
    """

    kind: str
    ratio: float | None = None
    threshold: float | None = None
    good: str | None = None
    bad: str | None = None


@dataclass(frozen=True)
class SeriesState:
    """What the store says about one series, for the issue sync.

    `tracked`: the slowdown its issue reports now (None: its issue, if any, closes). `may_open`:
    whether `tracked` may open a new issue (status open and within the horizon); an open issue is
    updated either way. `resolutions`: by run id, what became of each stored change point that
    is not tracked (a run missing here was not detected any more). `detected`: the runs of every
    change point stored for the series.
    """

    series: SeriesId
    tracked: StepReport | None = None
    may_open: bool = False
    resolutions: dict[str, Resolution] = field(default_factory=dict)
    detected: frozenset[str] = frozenset()


@dataclass(frozen=True)
class BranchChanges:
    """The issue states of every series of one project, branch and metric with change points."""

    project: str
    branch: str
    metric: str
    states: list[SeriesState]


def marker_line(marker: Marker) -> str:
    values = {
        "project": marker.series.project,
        "branch": marker.series.branch,
        "benchmark": marker.series.key,
        "metric": marker.series.metric,
        "run": marker.run,
        "range": f"{marker.good}..{marker.bad}",
    }
    fields = " ".join(f"{name}={quote(values[name], safe='')}" for name in _FIELDS)
    return f"{MARKER_PREFIX}{fields} -->"


def parse_marker(body: str | None) -> Marker | None:
    """The marker on the first line of an issue body; None when there is none or it is damaged."""
    first = (body or "").split("\n", 1)[0].strip()
    match = _MARKER.fullmatch(first)
    if match is None:
        return None
    fields: dict[str, str] = {}
    for item in match.group(1).split():
        name, _, value = item.partition("=")
        fields[name] = unquote(value)
    if set(fields) != set(_FIELDS) or not all(fields[n] for n in _FIELDS[:5]):
        return None
    commits = _RANGE.fullmatch(fields["range"])
    if commits is None:
        return None
    good, bad = commits.groups()
    series = SeriesId(fields["project"], fields["branch"], fields["benchmark"], fields["metric"])
    return Marker(series=series, run=fields["run"], good=good, bad=bad)


def trend_url(server: str | None, series: SeriesId) -> str | None:
    """The dashboard's trend page of the series: `SERVER/p/PROJECT/trend?key=&metric=&branch=`."""
    if not server:
        return None
    query = urlencode({"key": series.key, "metric": series.metric, "branch": series.branch})
    return f"{server.rstrip('/')}/p/{quote(series.project, safe='/')}/trend?{query}"


def _shown_key(key: str) -> str:
    """A name shown in prose, a title or a table: one line, at most KEY_SHOWN characters (keys
    are at most 1,000, op names unbounded; the marker and the command keep a key whole)."""
    flat = one_line(key)
    return flat if len(flat) <= KEY_SHOWN else flat[: KEY_SHOWN - 1] + "…"


def _worse_word(report: StepReport) -> str:
    return "slower" if report.unit == "s" else "worse"


def _short(commit: str) -> str:
    return commit[:SHORT_SHA]


def bisect_command(report: StepReport) -> str:
    """The one line that finds the commit (`perfgate bisect`, docs/cli.md)."""
    return (
        f"perfgate bisect {report.good} {report.bad} "
        f"--benchmark {shlex.quote(one_line(report.series.key))}"
    )


def issue_title(report: StepReport) -> str:
    """`perfgate: KEY METRIC +20.3% slower on main (GOOD..BAD)`; GitHub shows titles as
    text, so the key only needs to be one line."""
    series = report.series
    title = (
        f"perfgate: {_shown_key(series.key)} {one_line(series.metric)} "
        f"{format_change(report.step.ratio)} {_worse_word(report)} on {one_line(series.branch)} "
        f"({_short(report.good)}..{_short(report.bad)})"
    )
    return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"


def _ops_section(report: StepReport) -> list[str]:
    before, after = report.profiled
    lines = ["### Ops that moved", ""]
    if before == 0 or after == 0:
        side = "before" if before == 0 else "after"
        return [
            *lines,
            f"No profiled run {side} the step (runs measured with `--no-profile` record no ops), "
            "so no op can be named.",
        ]
    if not report.ops:
        return [
            *lines,
            "No op's per-call time or count moved between the profiles on the two sides.",
        ]
    lines += [
        "| op | before µs/call | after µs/call | Δ µs | calls |",
        "|---|---:|---:|---:|---:|",
    ]
    for delta in report.ops[:OPS_SHOWN]:
        calls = (
            f"{delta.base_count:g} → {delta.head_count:g}"
            if delta.base_count != delta.head_count
            else f"{delta.head_count:g}"
        )
        lines.append(
            f"| {code_span(_shown_key(delta.op))} | {delta.base_us:.1f} | {delta.head_us:.1f} | "
            f"{delta.delta_us:+.1f} | {calls} |"
        )
    lines += [
        "",
        f"Median per-call profile of the {_runs(before)} nearest before the step and the "
        f"{_runs(after)} nearest after it.",
    ]
    return lines


def _runs(count: int) -> str:
    return "1 profiled run" if count == 1 else f"{count} profiled runs"


def issue_body(report: StepReport, *, trend: str | None) -> str:
    """The issue's markdown, marker first."""
    series = report.series
    step = report.step
    key = code_span(_shown_key(series.key), in_table=False)
    metric = code_span(series.metric, in_table=False)
    branch = code_span(series.branch, in_table=False)
    ci = f" (95% CI {format_ci(step.ci)})" if step.ci is not None else ""
    good, bad = _short(report.good), _short(report.bad)
    lines = [
        marker_line(report.marker),
        f"## {key} {metric} got {format_change(step.ratio)} {_worse_word(report)} on {branch}",
        "",
        f"- **Step**: {plain_text(format_value(step.before, report.unit))} → "
        f"{plain_text(format_value(step.after, report.unit))}, "
        f"**{format_change(step.ratio)}**{ci}, from {step.runs_before} runs before the step "
        f"and {step.runs_after} since (threshold {report.threshold:.1%}).",
        f"- **Commit range**: `{good}..{bad}`: the last run before the step measured `{good}`, "
        f"the first run after it `{bad}`; the cause is in `git log {good}..{bad}`.",
        f"- **Status in perfgate**: {plain_text(report.status)}.",
        "",
        *_ops_section(report),
        "",
        "### Reproduce",
        "",
        "In a checkout that has both commits (it measures the commits between them against the "
        "good one and names the first slow one):",
        "",
        code_block(bisect_command(report)),
        "",
        "### Trend",
        "",
    ]
    if trend:
        lines.append(f"[The trend of {key} on {branch}]({trend})")
    else:
        lines.append(
            "No dashboard link: this sync ran without a perfgate server "
            "(`--server URL` or `PERFGATE_SERVER`); `perfgate trend` draws it locally."
        )
    lines += [
        "",
        "---",
        "_perfgate keeps this issue in step with the change points it detects on "
        f"{plain_text(series.branch)}: it is updated when the step moves, and closed with a "
        "comment when the step is dismissed in perfgate, is no longer detected, or the level "
        "comes back. Acknowledging the change point in perfgate keeps the issue as it is._",
    ]
    return "\n".join(lines)


def moved_comment(report: StepReport, previous: Marker, *, still_detected: bool) -> str:
    """Said on the issue when the change point it reports is replaced by another."""
    old = f"`{_short(previous.good)}..{_short(previous.bad)}`"
    new = f"`{_short(report.good)}..{_short(report.bad)}`"
    size = f"{format_change(report.step.ratio)}"
    if still_detected:
        return (
            f"A later step of this benchmark, {size} in {new}, is what this issue tracks now; "
            f"the earlier one in {old} is still in perfgate's history (`perfgate changes`)."
        )
    return (
        f"With more runs the step moved: it is now in {new} ({size}), no longer in {old}. "
        "The description above is updated."
    )


def close_comment(resolution: Resolution, previous: Marker | None) -> str:
    """Said on the issue as it closes: why the step it reported is no longer a slowdown."""
    where = f" in `{_short(previous.good)}..{_short(previous.bad)}`" if previous is not None else ""
    kind = resolution.kind
    if kind == "dismissed":
        text = f"The change point{where} was dismissed in perfgate as noise."
    elif kind == "recovered":
        back = (
            f" at `{_short(resolution.good)}..{_short(resolution.bad)}`"
            if resolution.good and resolution.bad
            else ""
        )
        text = f"A later step{back} brought the level back within the threshold."
    elif kind == "small":
        text = (
            f"With more runs the step{where} is {format_change(resolution.ratio)}, under the "
            f"{(resolution.threshold or 0.0):.1%} threshold: it was mostly noise."
        )
    elif kind == "ignored":
        text = "The project's policy now ignores this benchmark."
    else:
        text = (
            f"With more runs perfgate no longer detects a slowdown{where}: it was noise, or a "
            "step that a later one undid."
        )
    return f"{text} Closing; perfgate opens a new issue if a step shows up again."


def duplicate_comment(number: int) -> str:
    return f"Closing as a duplicate of #{number}, which perfgate keeps up to date for this series."
