"""Option bundles shared by several commands; each names its environment variable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from perfgate import config

F = TypeVar("F", bound=Callable[..., Any])


def db_option(func: F) -> F:
    return click.option(
        "--db",
        "db_url",
        envvar=config.ENV_DB,
        default=config.DEFAULT_DB_URL,
        show_default=True,
        show_envvar=True,
        metavar="URL",
        help="Database URL: sqlite:///path.db (embedded) or postgresql+psycopg://user@host/db.",
    )(func)


def server_options(func: F) -> F:
    func = click.option(
        "--token",
        envvar=config.ENV_TOKEN,
        show_envvar=True,
        metavar="TOKEN",
        help="API token for --server (upload scope).",
    )(func)
    return click.option(
        "--server",
        envvar=config.ENV_SERVER,
        show_envvar=True,
        metavar="URL",
        help="Send results to a perfgate server instead of a database.",
    )(func)


def max_size_option(func: F) -> F:
    return click.option(
        "--max-size",
        envvar=config.ENV_MAX_DOCUMENT_BYTES,
        show_envvar=True,
        default=str(config.DEFAULT_MAX_DOCUMENT_BYTES),
        show_default=True,
        metavar="BYTES",
        help="Refuse results documents larger than this (e.g. 65536, 512KiB, 64MiB).",
    )(func)


def git_options(func: F) -> F:
    """--commit/--branch/--project/--pr: override what git and GitHub Actions say."""
    func = click.option(
        "--pr",
        type=click.IntRange(min=1),
        envvar=config.ENV_PR,
        show_envvar=True,
        help="Pull request number.",
    )(func)
    func = click.option(
        "--project",
        envvar=config.ENV_PROJECT,
        show_envvar=True,
        help="Project name, usually owner/repo.",
    )(func)
    func = click.option(
        "--branch", envvar=config.ENV_BRANCH, show_envvar=True, help="Branch the commit belongs to."
    )(func)
    return click.option(
        "--commit",
        envvar=config.ENV_COMMIT,
        show_envvar=True,
        help="Commit id of the code being measured.",
    )(func)


def format_option(*choices: str, default: str) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(choices),
            default=default,
            show_default=True,
            help="Output format.",
        )(func)

    return decorate
