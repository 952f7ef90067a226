"""Use case: one comparison on GitHub: the sticky PR comment, the commit status, the check run.

Order matters for "results are never lost": the caller writes the job summary first; here the PR
is read first (a bad token or a wrong PR number fails before anything is written), then the
comment, the status and the check run are each attempted, and any failures are reported together.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from perfgate.errors import GitHubError, InputError, UsageError
from perfgate.github.client import ChecksUnavailable, CommentInfo, GitHubAPI
from perfgate.github.event import EventInfo
from perfgate.github.retry import Backoff
from perfgate.report.checks import (
    check_conclusion,
    check_summary,
    check_title,
    has_changes,
    needs_attention,
    status_description,
    status_state,
)
from perfgate.report.gate import DEFAULT_GATE, Gate
from perfgate.stats.model import Comparison

# The hidden first line that finds perfgate's comment again; quoting it (`> <!--`) never matches.
MARKER = "<!-- perfgate:pr-comment -->"
MODES = ("always", "on-change", "on-regression")
# Matched with fullmatch: `$` would also accept a trailing newline.
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_SHA = re.compile(r"[0-9a-fA-F]{7,64}")


@dataclass(frozen=True)
class Target:
    """Where the verdict goes. `claimed`: the PR number did not come from GitHub's own event for
    this commit (a fork's artifact, a command-line option in a workflow_run job), so it is
    believed only if the PR's head really is `sha`."""

    repo: str
    sha: str
    pr: int | None
    claimed: bool = False
    find_by_head: str | None = None  # "owner:branch" to look the PR up by, when none is known


@dataclass
class Outcome:
    comment: str = "skipped"
    comment_url: str | None = None
    status: str | None = None
    check: str | None = None
    check_url: str | None = None
    warnings: list[str] = field(default_factory=list)


def resolve_target(
    *,
    repo: str | None,
    pr: int | None,
    sha: str | None,
    event: EventInfo,
    github_sha: str | None,
) -> Target:
    """Options first, then the event payload; GITHUB_SHA only outside workflow_run jobs (there it
    is the default branch's tip, not the commit that was measured)."""
    if not repo:
        raise UsageError("no repository: pass --repo owner/name or set GITHUB_REPOSITORY")
    if not _REPO.fullmatch(repo):
        raise UsageError(f"--repo: {repo!r} is not owner/name")
    found_sha = sha or event.head_sha or (None if event.is_workflow_run else github_sha)
    if not found_sha:
        raise UsageError(
            "no head commit: pass --sha, or run inside GitHub Actions (GITHUB_EVENT_PATH)"
        )
    if not _SHA.fullmatch(found_sha):
        raise UsageError(f"--sha: {found_sha!r} is not a commit id")
    if event.is_workflow_run:
        number = event.pr or pr
        if event.pr and pr and pr != event.pr:
            raise InputError(
                f"--pr {pr} disagrees with the workflow_run event, which names #{event.pr}"
            )
        head = (
            f"{event.head_owner}:{event.head_branch}"
            if number is None and event.head_owner and event.head_branch
            else None
        )
        return Target(
            repo=repo, sha=found_sha, pr=number, claimed=event.pr is None, find_by_head=head
        )
    return Target(repo=repo, sha=found_sha, pr=pr or event.pr)


def wants_comment(mode: str, comparison: Comparison) -> bool:
    """Whether `mode` asks for a new comment; an existing one is always kept up to date."""
    if mode == "on-regression":
        # A possible regression sets a non-green status: the comment is where it is explained.
        return needs_attention(comparison)
    if mode == "on-change":
        return has_changes(comparison)
    return True


def _check_head(comparison: Comparison, target: Target) -> None:
    head = (comparison.head.commit or "").lower()
    sha = target.sha.lower()
    if head and not (head.startswith(sha) or sha.startswith(head)):
        raise InputError(
            f"the comparison's head is {head[:12]} but the commit to report on is {sha[:12]}: "
            "compare the commit that was measured, or pass --sha"
        )


def _verified_pr(api: GitHubAPI, target: Target, outcome: Outcome) -> int | None:
    """The PR to comment on, after checking a claimed number against GitHub itself."""
    if target.pr is None:
        if target.find_by_head:
            found = [
                p for p in api.pulls_with_head(target.find_by_head) if p.head_sha == target.sha
            ]
            if found:
                return found[0].number
        outcome.warnings.append(
            f"no pull request to comment on for {target.sha[:12]}: status and check run only"
        )
        return None
    pull = api.pull(target.pr)  # 404 -> "pull request #N not found", exit 3
    if target.claimed and (
        pull.head_sha.lower() != target.sha.lower() or pull.base_repo.lower() != target.repo.lower()
    ):
        raise InputError(
            f"pull request #{target.pr} of {pull.base_repo} has head {pull.head_sha[:12]}, not "
            f"{target.sha[:12]} (the commit that was measured): refusing to comment on it"
        )
    return target.pr


def upsert_comment(
    api: GitHubAPI, pr: int, body: str, *, existing: CommentInfo | None, backoff: Backoff
) -> tuple[str, CommentInfo]:
    """Edit perfgate's comment on `pr` (`existing`, already searched for) or create it; never
    a second one.

    A create that failed with a 5xx or a lost connection may still have landed, so it is not
    retried blindly: the comments are searched again first.
    """
    attempt = 0
    while True:
        if existing is not None:
            if existing.body == body:
                return "unchanged", existing
            return "updated", api.edit_comment(existing, body)
        try:
            with api.single_attempt():
                return "created", api.create_comment(pr, body)
        except GitHubError as exc:
            delay = backoff.delay_for(attempt, None) if exc.transient else None
            if delay is None:
                raise
            backoff.wait(delay)
            attempt += 1
        existing = api.find_comment(pr, MARKER)


def publish(
    api: GitHubAPI,
    comparison: Comparison,
    target: Target,
    *,
    markdown: str,
    mode: str,
    details_url: str | None,
    backoff: Backoff,
    notify: Callable[[str], None] = lambda _m: None,
    gate: Gate = DEFAULT_GATE,
) -> Outcome:
    """Comment (per `mode`), status and check run for `comparison` on `target`; `gate` (the
    project's policy) decides the status and the check run's conclusion."""
    if mode not in MODES:
        raise UsageError(f"--mode: {mode!r} is not one of {', '.join(MODES)}")
    _check_head(comparison, target)
    return post_verdict(
        api,
        target,
        Verdict(
            markdown=markdown,
            new_comment=wants_comment(mode, comparison),
            state=status_state(comparison, gate),
            description=status_description(comparison),
            conclusion=check_conclusion(comparison, gate),
            title=check_title(comparison),
        ),
        mode=mode,
        details_url=details_url,
        backoff=backoff,
        notify=notify,
    )


@dataclass(frozen=True)
class Verdict:
    """What goes to GitHub, already rendered: the comment's markdown (without the marker),
    whether it may start a new comment, the commit status and the check run."""

    markdown: str
    new_comment: bool
    state: str
    description: str
    conclusion: str
    title: str


def post_verdict(
    api: GitHubAPI,
    target: Target,
    verdict: Verdict,
    *,
    mode: str,
    details_url: str | None,
    backoff: Backoff,
    notify: Callable[[str], None] = lambda _m: None,
) -> Outcome:
    """The comment (new only if `verdict.new_comment`; an existing one is always kept up to
    date), the status and the check run on `target`; failures are reported together."""
    outcome = Outcome()
    failures: list[GitHubError] = []
    pr = _verified_pr(api, target, outcome)

    if pr is not None:
        try:
            existing = api.find_comment(pr, MARKER)
            if verdict.new_comment or existing is not None:
                outcome.comment, info = upsert_comment(
                    api, pr, f"{MARKER}\n{verdict.markdown}", existing=existing, backoff=backoff
                )
                outcome.comment_url = info.html_url
            else:
                outcome.comment = f"skipped (--mode {mode}: nothing to report)"
        except GitHubError as exc:
            if exc.status == 401:
                raise
            failures.append(exc)
    else:
        outcome.comment = "skipped (no pull request)"

    try:
        api.create_status(
            target.sha,
            state=verdict.state,
            description=verdict.description,
            target_url=details_url,
        )
        outcome.status = f"{verdict.state}: {verdict.description}"
    except GitHubError as exc:
        if exc.status == 401:
            raise
        failures.append(exc)

    try:
        outcome.check_url = api.create_check_run(
            target.sha,
            conclusion=verdict.conclusion,
            title=verdict.title,
            summary=check_summary(verdict.markdown),
            details_url=details_url,
        )
        outcome.check = verdict.conclusion
    except ChecksUnavailable as exc:
        outcome.check = "skipped"
        outcome.warnings.append(
            f"check run not created ({exc}); the commit status and the comment carry the verdict. "
            "Use GITHUB_TOKEN or a GitHub App token with `checks: write` for a check run"
        )
    except GitHubError as exc:
        failures.append(exc)

    for warning in outcome.warnings:
        notify(warning)
    if failures:
        done = [
            part
            for part, ok in (
                (f"comment {outcome.comment}", outcome.comment_url is not None),
                ("status set", outcome.status is not None),
                ("check run created", outcome.check_url is not None),
            )
            if ok
        ]
        tail = f" ({', '.join(done)})" if done else ""
        raise GitHubError("; ".join(str(f) for f in failures) + tail, status=failures[0].status)
    return outcome
