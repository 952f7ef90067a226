"""Use case: nothing could be compared yet (no baseline): say so on the PR, and what to do.

`perfgate compare` exits 4 when the store has nothing for the base side (a first PR, an empty
store). The action then posts this instead of a verdict: a one-line comment naming the remedy,
a `neutral` check run, and a commit status that does not fail (statuses have no neutral state;
`success` with a description that says nothing was compared, as for any comparison in which
nothing could be compared, so a required `perfgate` status never blocks the PR that introduces
perfgate).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from perfgate.errors import UsageError
from perfgate.github.client import GitHubAPI
from perfgate.github.publish import MODES, Outcome, Target, Verdict, post_verdict
from perfgate.github.retry import Backoff

TITLE = "No baseline yet: nothing compared"
STATUS_STATE = "success"
CHECK_CONCLUSION = "neutral"
_COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")


@dataclass(frozen=True)
class NoBaseline:
    """What was missing: the base commit (when one was known), the branch whose history stands
    in for it, and whether this job tried to measure the base itself (`alternate`)."""

    base_branch: str
    base: str | None = None
    alternate: bool = False


def _code(text: str) -> str:
    """`text` as an inert code span: fenced with more backticks than any run inside it."""
    text = " ".join(text.split())
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def no_baseline_markdown(notice: NoBaseline, *, pull_request: bool) -> str:
    """One line a reviewer can act on (pure)."""
    branch = _code(notice.base_branch)
    base = (
        f"merge-base {_code(notice.base[:12])}"
        if notice.base and _COMMIT.fullmatch(notice.base)
        else "merge-base"
    )
    if not pull_request:
        return (
            f"**perfgate: no baseline yet.** The store has no earlier run of {branch} to compare "
            f"this commit with, so nothing was compared; {branch}'s runs build the history that "
            "later commits and PRs are compared with.\n"
        )
    if notice.alternate:
        return (
            f"**perfgate: no baseline yet.** The benchmark job could not measure the {base} "
            "(it has no benchmarks yet, or the checkout has no merge-base: use `fetch-depth: 0`) "
            f"and the store has no runs of {branch}, so nothing was compared. Once this PR is "
            f"merged, {branch}'s perfgate workflow stores the history later PRs are compared "
            "with.\n"
        )
    return (
        f"**perfgate: no baseline yet.** The store has no runs of the {base} or of {branch} "
        f"before it, so nothing was compared. Merge to {branch} once so its perfgate workflow "
        "stores the history PRs are compared with, or set `alternate: true` to measure the "
        "merge-base in this job (about twice the benchmark time).\n"
    )


def status_description(notice: NoBaseline) -> str:
    branch = " ".join(notice.base_branch.split())[:60]
    return f"No baseline yet: nothing compared (no runs of {branch} in the store)"


def publish_no_baseline(
    api: GitHubAPI,
    notice: NoBaseline,
    target: Target,
    *,
    markdown: str,
    mode: str,
    details_url: str | None,
    backoff: Backoff,
    notify: Callable[[str], None] = lambda _m: None,
) -> Outcome:
    """The notice as comment (`always` mode creates it; every mode updates an existing one),
    a non-failing status and a neutral check run."""
    if mode not in MODES:
        raise UsageError(f"--mode: {mode!r} is not one of {', '.join(MODES)}")
    return post_verdict(
        api,
        target,
        Verdict(
            markdown=markdown,
            # Nothing changed and nothing regressed: only `always` starts a comment for it.
            new_comment=mode == "always",
            state=STATUS_STATE,
            description=status_description(notice),
            conclusion=CHECK_CONCLUSION,
            title=TITLE,
        ),
        mode=mode,
        details_url=details_url,
        backoff=backoff,
        notify=notify,
    )
