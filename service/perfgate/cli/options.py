"""Option bundles shared by several commands; each names its environment variable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from perfgate import config
from perfgate.policy import Policy, Setting, from_policy, parse_fail_on

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
        "--server-timeout",
        "server_timeout",
        envvar=config.ENV_SERVER_TIMEOUT,
        show_envvar=True,
        type=click.FloatRange(min=0, min_open=True),
        default=config.DEFAULT_SERVER_TIMEOUT_S,
        show_default=True,
        metavar="S",
        help="Give up on --server after this many seconds, every attempt and retry included.",
    )(func)
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


def github_options(func: F) -> F:
    """--repo, --token and --api-url: the GitHub REST API, as Actions names it in its variables."""
    func = click.option(
        "--api-url",
        envvar="GITHUB_API_URL",
        show_envvar=True,
        default="https://api.github.com",
        show_default=True,
        help="GitHub REST API root.",
    )(func)
    func = click.option("--token", envvar="GITHUB_TOKEN", show_envvar=True, help="GitHub token.")(
        func
    )
    return click.option("--repo", envvar="GITHUB_REPOSITORY", show_envvar=True, help="owner/name.")(
        func
    )


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


def filter_option(func: F) -> F:
    return click.option(
        "-k",
        "--filter",
        "filter_expr",
        metavar="EXPR",
        help="Only instances whose key matches (substrings with and/or/not, like pytest -k).",
    )(func)


def device_option(func: F) -> F:
    return click.option(
        "--device",
        default="auto",
        show_default=True,
        metavar="auto|cpu|cuda[:N]",
        help="Where benchmarks run; auto picks CUDA when available.",
    )(func)


def max_time_option(func: F) -> F:
    return click.option(
        "--max-time",
        type=click.FloatRange(min=0, min_open=True),
        metavar="S",
        help="Timing budget per benchmark instance, in seconds.",
    )(func)


def sampling_options(func: F) -> F:
    """--threads, --system-malloc and --interleave/--sequential: how a process measures."""
    func = click.option(
        "--interleave/--sequential",
        default=None,
        help="Take samples in slices, round-robin across instances, so a burst of load spoils a "
        "slice of each instead of one instance [default: interleave on CPU, sequential on CUDA].",
    )(func)
    func = click.option(
        "--system-malloc",
        is_flag=True,
        help="Leave glibc's malloc thresholds dynamic (noisier: see docs/harness.md).",
    )(func)
    return click.option(
        "--threads",
        type=click.IntRange(min=1),
        envvar=config.ENV_THREADS,
        show_envvar=True,
        help="torch intra-op threads [default: torch's]; 1 keeps CPU timings steady on shared "
        "runners.",
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


# Settings a project's policy file may also give: no click default, so that a value the command
# line and the environment left unset falls through to the policy, then to the built-in default
# (`resolve`). The help names the built-in default.
def policy_device_option(func: F) -> F:
    return click.option(
        "--device",
        envvar=config.ENV_RUN_DEVICE,
        show_envvar=True,
        metavar="auto|cpu|cuda[:N]",
        help="Where benchmarks run; auto picks CUDA when available [default: the policy's, "
        "else auto].",
    )(func)


def rounds_option(func: F) -> F:
    return click.option(
        "--rounds",
        type=click.IntRange(min=1),
        envvar=config.ENV_RUN_ROUNDS,
        show_envvar=True,
        help="Run the selection N times, each round in a fresh process [default: the policy's, "
        "else 1].",
    )(func)


def threshold_option(func: F) -> F:
    return click.option(
        "--threshold",
        type=click.FloatRange(min=0),
        envvar=config.ENV_COMPARE_THRESHOLD,
        show_envvar=True,
        help="Smallest relative change that counts (0.03 = 3%) [default: the policy's, else 0.03].",
    )(func)


def alpha_option(func: F) -> F:
    return click.option(
        "--alpha",
        type=click.FloatRange(min=0, max=1, min_open=True, max_open=True),
        envvar=config.ENV_COMPARE_ALPHA,
        show_envvar=True,
        help="False discovery rate for significance [default: the policy's, else 0.05].",
    )(func)


def fail_on_option(func: F) -> F:
    return click.option(
        "--fail-on",
        metavar="LIST",
        envvar=config.ENV_COMPARE_FAIL_ON,
        show_envvar=True,
        help="What fails the gate, comma-separated: regression, possible-regression, missing "
        "[default: the policy's, else regression].",
    )(func)


def resolve(ctx: click.Context, name: str, policy: Policy, *, param: str | None = None) -> Setting:
    """Setting `name` (option `param`, default the same): a flag, else its environment
    variable, else the policy file, else the built-in default."""
    param = param or name
    value = ctx.params.get(param)
    if value is None or value == ():
        return from_policy(policy, name)
    option = next(p for p in ctx.command.params if p.name == param)
    if ctx.get_parameter_source(param) is ParameterSource.ENVIRONMENT:
        kind, origin = "env", str(option.envvar)
    else:
        kind, origin = "flag", option.opts[0] if isinstance(option, click.Option) else param
    if name == "fail_on":
        value = parse_fail_on(value, where=origin)
    return Setting(name, value, kind, origin)
