"""`perfgate comment COMPARISON`: the PR comment, commit status and check run."""

from __future__ import annotations

from pathlib import Path

import click

from perfgate.errors import NotImplementedYetError


@click.command("comment")
@click.argument("comparison", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--repo", envvar="GITHUB_REPOSITORY", show_envvar=True, help="owner/name.")
@click.option(
    "--pr", type=click.IntRange(min=1), help="Pull request number [default: from the event]."
)
@click.option("--sha", help="Head commit for the status and check run [default: from the event].")
@click.option("--token", envvar="GITHUB_TOKEN", show_envvar=True, help="GitHub token.")
@click.option(
    "--api-url",
    envvar="GITHUB_API_URL",
    show_envvar=True,
    default="https://api.github.com",
    show_default=True,
    help="GitHub REST API root.",
)
@click.option(
    "--mode",
    type=click.Choice(["always", "on-change", "on-regression"]),
    default="always",
    show_default=True,
    help="When to post the comment.",
)
def command(**_options: object) -> None:
    """Post a comparison (perfgate/comparison@1 JSON) to the pull request."""
    raise NotImplementedYetError("perfgate comment is not implemented yet")
