"""`perfgate comment COMPARISON`: the PR comment, commit status and check run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

import click

from perfgate.cli.options import fail_on_option, github_options, resolve
from perfgate.config import ENV_SERVER, GitHubContext
from perfgate.errors import DocumentError, InputError, UsageError
from perfgate.policy import discover_policy, policy_gate

if TYPE_CHECKING:
    from perfgate.github.event import EventInfo


def dashboard_url(
    server: str | None, *, project: str | None, base: str | None, head: str | None
) -> str | None:
    """The service's comparison page for this pair (when a perfgate server is configured)."""
    if not server or not project or not base or not head:
        return None
    query = urlencode({"project": project, "base": base, "head": head})
    return f"{server.rstrip('/')}/compare?{query}"


def _load(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{path}: no such file (write it with "
            f"`perfgate compare BASE HEAD --format json --out {path}`)"
        ) from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    except ValueError as exc:
        raise DocumentError(f"not JSON ({exc})", source=str(path)) from None


def _event_or_none(context: GitHubContext) -> EventInfo | None:
    """The event payload, or None when it cannot be read (that is reported where the target is
    resolved, after the job summary was written)."""
    from perfgate.github.event import read_event

    try:
        return read_event(context.event_path, name=context.event_name)
    except InputError:
        return None


@click.command("comment")
@click.argument("comparison", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--no-baseline",
    is_flag=True,
    help="Instead of a COMPARISON: say that nothing could be compared yet (`perfgate compare` "
    "exited 4): a one-line comment with what to do, a neutral check run, a status that does "
    "not fail.",
)
@click.option("--base", metavar="SHA", help="With --no-baseline: the base commit that had no runs.")
@click.option(
    "--base-branch",
    default="main",
    show_default=True,
    help="With --no-baseline: the branch whose history is the baseline.",
)
@click.option(
    "--alternate",
    is_flag=True,
    help="With --no-baseline: this job tried to measure the base itself and could not.",
)
@github_options
@click.option(
    "--pr", type=click.IntRange(min=1), help="Pull request number [default: from the event]."
)
@click.option("--sha", help="Head commit for the status and check run [default: from the event].")
@click.option(
    "--mode",
    type=click.Choice(["always", "on-change", "on-regression"]),
    default="always",
    show_default=True,
    help="When to post a new comment (an existing one is always kept up to date).",
)
@click.option(
    "--server",
    envvar=ENV_SERVER,
    show_envvar=True,
    metavar="URL",
    help="perfgate server whose dashboard the comment links to.",
)
@fail_on_option
def command(
    *,
    comparison: Path | None,
    no_baseline: bool,
    base: str | None,
    base_branch: str,
    alternate: bool,
    repo: str | None,
    pr: int | None,
    sha: str | None,
    token: str | None,
    api_url: str,
    mode: str,
    server: str | None,
    fail_on: str | None,
) -> None:
    """Post a comparison (perfgate/comparison@1 JSON) to the pull request.

    One comment per PR, edited in place; a commit status (context `perfgate`) and a check run on
    the head commit. Inside GitHub Actions the same markdown goes to the job summary first, and
    each regression becomes a warning annotation. In a `workflow_run` job the links point at the
    run that measured, not at the report's own run.

    With --no-baseline instead of COMPARISON (after `perfgate compare` exited 4): a one-line
    comment saying what to do, a neutral check run and a commit status that does not fail.

    The status and check run fail by the project's policy (docs/policy.md), as `perfgate
    compare` does: what --fail-on (or the policy's fail_on) names fails them, and informational
    benchmarks never do.
    """
    from perfgate.github.actions import warning_command, write_step_summary
    from perfgate.report.checks import regression_annotations
    from perfgate.report.comparison_document import comparison_from_json
    from perfgate.report.markdown import Links, render_markdown

    if (comparison is None) == (not no_baseline):
        raise UsageError("pass either a COMPARISON file or --no-baseline (one of the two)")
    policy = discover_policy()
    gate = policy_gate(policy, resolve(click.get_current_context(), "fail_on", policy).value)
    context = GitHubContext.from_env()
    event = _event_or_none(context)
    # In a workflow_run job (the fork-safe report) the run to link is the one that measured.
    run_url = (event.run_url if event else None) or context.run_url
    found = None
    if comparison is not None:
        found = comparison_from_json(_load(comparison), source=str(comparison))
        links = Links(
            run_url=run_url,
            dashboard_url=dashboard_url(
                server, project=repo, base=found.base.commit, head=found.head.commit
            ),
        )
        markdown = render_markdown(found, links=links)
        details_url = links.dashboard_url or links.run_url
    else:
        from perfgate.github.no_baseline import NoBaseline, no_baseline_markdown

        notice = NoBaseline(base_branch=base_branch, base=base, alternate=alternate)
        on_pr = pr is not None or (event is not None and (event.pr or event.is_workflow_run))
        markdown = no_baseline_markdown(notice, pull_request=bool(on_pr))
        details_url = run_url

    # Written before GitHub is called: a GitHub failure loses nothing.
    if context.step_summary:
        try:
            write_step_summary(context.step_summary, markdown)
            click.echo(f"wrote the job summary ({context.step_summary})", err=True)
        except InputError as exc:  # the comment can still carry the verdict
            click.echo(f"warning: {exc}", err=True)
    if context.actions and found is not None:
        for annotation in regression_annotations(found):
            click.echo(warning_command(annotation))

    if not token:
        raise UsageError(
            "no GitHub token: pass --token or set GITHUB_TOKEN "
            "(in a workflow: `env: GITHUB_TOKEN: ${{ github.token }}`)"
        )
    from perfgate.github.client import GitHub3API
    from perfgate.github.event import read_event
    from perfgate.github.publish import publish, resolve_target
    from perfgate.github.retry import Backoff

    event = read_event(context.event_path, name=context.event_name)
    target = resolve_target(repo=repo, pr=pr, sha=sha, event=event, github_sha=context.sha)
    backoff = Backoff()

    def notify(message: str) -> None:
        click.echo(
            f"::warning::{message}" if context.actions else f"warning: {message}",
            err=not context.actions,
        )

    def progress(message: str) -> None:
        click.echo(message, err=True)

    api = GitHub3API(
        api_url=api_url, token=token, repo=target.repo, backoff=backoff, notify=progress
    )
    if found is not None:
        outcome = publish(
            api,
            found,
            target,
            markdown=markdown,
            mode=mode,
            details_url=details_url,
            backoff=backoff,
            notify=notify,
            gate=gate,
        )
    else:
        from perfgate.github.no_baseline import publish_no_baseline

        outcome = publish_no_baseline(
            api,
            notice,
            target,
            markdown=markdown,
            mode=mode,
            details_url=details_url,
            backoff=backoff,
            notify=notify,
        )
    click.echo(
        f"comment: {outcome.comment}" + (f" {outcome.comment_url}" if outcome.comment_url else "")
    )
    click.echo(f"status: {outcome.status}")
    click.echo(
        f"check run: {outcome.check}" + (f" {outcome.check_url}" if outcome.check_url else "")
    )
