"""`perfgate changes`: change points detected on a branch, and (`--sync-issues`) their issues."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from perfgate import json_text
from perfgate.cli.options import db_option, format_option, github_options
from perfgate.config import ENV_SERVER
from perfgate.errors import UsageError
from perfgate.policy import Policy, discover_policy, from_policy, parse_labels

if TYPE_CHECKING:
    from perfgate.github.change_issues import SyncOutcome
    from perfgate.report.change_issue import BranchChanges


@click.command("changes")
@click.option(
    "--status",
    type=click.Choice(["open", "acknowledged", "dismissed", "all"]),
    default="open",
    show_default=True,
    help="Which change points to list.",
)
@click.option(
    "--branch", help="Branch to look at [default: the project's main branch: main, else master]."
)
@click.option(
    "--metric",
    default="time",
    show_default=True,
    help="Metric whose change points to list ('all': every metric; --sync-issues needs one).",
)
@click.option("--project", help="Project [default: the only one in the store].")
@format_option("table", "json", default="table")
@db_option
@click.option(
    "--sync-issues",
    is_flag=True,
    help="Instead of listing: open, update and close the GitHub issues of the branch's "
    "slowdowns (one per benchmark; docs/github.md, Change-point issues).",
)
@github_options
@click.option(
    "--server",
    envvar=ENV_SERVER,
    show_envvar=True,
    metavar="URL",
    help="perfgate server whose dashboard the issues link to (its trend page).",
)
@click.option(
    "--label",
    "extra_labels",
    multiple=True,
    metavar="NAME",
    help="With --sync-issues: a label for new issues, added to the policy's issues.labels "
    "(repeatable).",
)
def command(
    *,
    status: str,
    branch: str | None,
    metric: str,
    project: str | None,
    fmt: str,
    db_url: str,
    sync_issues: bool,
    repo: str | None,
    token: str | None,
    api_url: str,
    server: str | None,
    extra_labels: tuple[str, ...],
) -> None:
    """List change points (lasting shifts in a benchmark's history) on a branch.

    Change points are detected when runs are stored (`perfgate upload`, `perfgate run`); this
    only reads them.

    With --sync-issues: one GitHub issue per benchmark with a slowdown on the branch (step, CI,
    commit range, the ops that moved, a `perfgate bisect` line, the trend), found again by a
    hidden marker, updated when the step moves and closed with a comment when it is dismissed,
    no longer detected or undone. Labels, assignees and the horizon (change points older than
    that many runs open no issue) come from the policy's [issues] table (docs/policy.md).
    Exit 3 when GitHub fails after retries.
    """
    if sync_issues:
        ctx = click.get_current_context()
        if ctx.get_parameter_source("status") is not ParameterSource.DEFAULT:
            raise UsageError("--status lists change points; --sync-issues reads all of them")
        if metric == "all":
            raise UsageError("--sync-issues needs one metric (--metric time, the default)")
        outcome = _sync(
            branch=branch,
            metric=metric,
            project=project,
            db_url=db_url,
            repo=repo,
            token=token,
            api_url=api_url,
            server=server,
            extra_labels=extra_labels,
            quiet=fmt == "json",
        )
        if fmt == "json":
            actions = [
                {
                    "action": a.kind,
                    "key": a.series.key,
                    "metric": a.series.metric,
                    "issue": a.number,
                    "url": a.url,
                    "detail": a.detail,
                }
                for a in outcome.actions
            ]
            click.echo(json_text.dumps({"issues": actions}, indent=1))
        elif not outcome.actions:
            click.echo("no change points to report and no perfgate issue open")
        return
    _list(status=status, branch=branch, metric=metric, project=project, fmt=fmt, db_url=db_url)


def _list(
    *, status: str, branch: str | None, metric: str, project: str | None, fmt: str, db_url: str
) -> None:
    from perfgate.store.connect import open_store
    from perfgate.store.run_lookup import default_branch, resolve_project
    from perfgate.store.trends import list_changes

    with open_store(db_url) as store, store.sessions() as session:
        if branch is None:
            found = resolve_project(session, name=project)
            branch = default_branch(session, project_id=found.id) or "main"
        changes = list_changes(
            session,
            project=project,
            branch=branch,
            metric=None if metric == "all" else metric,
            status=None if status == "all" else status,
        )
    if fmt == "json":
        click.echo(
            json_text.dumps(
                {"change_points": [c.as_json() for c in changes]},
                indent=1,
            )
        )
        return
    if not changes:
        click.echo(
            f"no {status if status != 'all' else ''} change points on {branch}".replace("  ", " ")
        )
        return
    for c in changes:
        click.echo(
            f"{c.time:%Y-%m-%d %H:%M}  {c.commit[:10]}  {c.ratio - 1:+7.1%}  "
            f"{c.status:12s} {c.key} ({c.metric})"
        )


def _labels(policy: Policy, extra: tuple[str, ...]) -> list[str]:
    def fail(key: str, message: str) -> UsageError:
        return UsageError(f"{key}: {message}")

    given = parse_labels(list(extra), where="--label", fail=fail)
    return list(dict.fromkeys([*policy.issues.labels, *given]))


def _changes(
    *, db_url: str, project: str | None, branch: str | None, metric: str, policy: Policy
) -> BranchChanges:
    from perfgate.store.change_issues import change_issue_states
    from perfgate.store.connect import open_store

    default = float(from_policy(policy, "threshold").value)

    def threshold_for(key: str) -> float:
        own = policy.rules_for(key).threshold
        return own if own is not None else default

    with open_store(db_url) as store, store.sessions() as session:
        return change_issue_states(
            session,
            project=project,
            branch=branch,
            metric=metric,
            horizon=policy.issues.horizon,
            threshold_for=threshold_for,
            ignored=lambda key: policy.rules_for(key).ignore,
        )


def _sync(
    *,
    branch: str | None,
    metric: str,
    project: str | None,
    db_url: str,
    repo: str | None,
    token: str | None,
    api_url: str,
    server: str | None,
    extra_labels: tuple[str, ...],
    quiet: bool,
) -> SyncOutcome:
    policy = discover_policy()
    labels = _labels(policy, extra_labels)
    if not repo or "/" not in repo:
        raise UsageError("no repository: pass --repo OWNER/NAME or set GITHUB_REPOSITORY")
    if not token:
        raise UsageError(
            "no GitHub token: pass --token or set GITHUB_TOKEN "
            "(in a workflow: `env: GITHUB_TOKEN: ${{ github.token }}`, with `issues: write`)"
        )
    changes = _changes(db_url=db_url, project=project, branch=branch, metric=metric, policy=policy)
    from perfgate.github.change_issues import sync_change_issues
    from perfgate.github.issues import GitHub3Issues
    from perfgate.github.retry import Backoff

    def progress(message: str) -> None:
        click.echo(message, err=True)

    api = GitHub3Issues(api_url=api_url, token=token, repo=repo, backoff=Backoff(), notify=progress)
    return sync_change_issues(
        api,
        changes,
        labels=labels,
        assignees=policy.issues.assignees,
        server=server,
        # With --format json, stdout is the JSON alone.
        notify=lambda line: click.echo(line, err=quiet),
        warn=lambda line: click.echo(f"warning: {line}", err=True),
    )
