"""`perfgate ci`: the GitHub Action's steps (ci/action.yml runs them through ci/scripts/)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from perfgate.cli.options import (
    alpha_option,
    fail_on_option,
    policy_device_option,
    resolve,
    rounds_option,
    threshold_option,
)
from perfgate.config import CompareStepInputs, RunStepInputs, Settings
from perfgate.errors import PerfgateError, UsageError
from perfgate.policy import Setting, discover_policy

if TYPE_CHECKING:
    from perfgate.ci.compare_step import LocalCompare, LocalOutcome


@click.group("ci")
def command() -> None:
    """The GitHub Action's steps, run by its shell shims (docs/github.md, The Action).

    Each reads its inputs from INPUT_* variables, as ci/action.yml passes them, and writes step
    outputs to $GITHUB_OUTPUT. Errors are one `::error` workflow command on stdout and one line
    on stderr, with perfgate's exit codes.
    """


def _threshold(ctx: click.Context, given: str) -> Setting:
    """INPUT_THRESHOLD counts as the flag; empty: PERFGATE_COMPARE_THRESHOLD, the policy, the
    default."""
    if not given:
        return resolve(ctx, "threshold", discover_policy())
    try:
        value = float(given)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"threshold: {given!r} is not a relative change (0 or more, 0.03 = 3%)")
    return Setting("threshold", value, "flag", "threshold")


@command.command("compare")
@threshold_option
@alpha_option
@fail_on_option
def compare(*, threshold: float | None, alpha: float | None, fail_on: str | None) -> None:
    """The action's compare step: the results against the base, into comparison.json.

    The base is INPUT_BASE; else, on a pull request, the merge-base of the PR's head and
    INPUT_BASE_BRANCH (the PR's base branch, else main), computed with git, deepening a shallow
    clone as needed; on a push, the previous tip. INPUT_BASE_RESULTS (the base's rounds measured
    in this job) is compared directly. INPUT_SERVER without INPUT_DB compares on that perfgate
    server (GET /api/v1/compare, INPUT_SERVER_TOKEN in a header). INPUT_THRESHOLD, when given,
    is the --threshold; the project's policy file gives the rest, as for `perfgate compare`.

    Values from the results (possibly a fork's artifact) are validated before any use.

    \b
    Outputs: comparison (path, empty when nothing was compared), regressions (count,
    informational benchmarks included), gate (fail or pass, by the policy), base, base-branch,
    pr, no-baseline (true when the store had nothing for the base).

    \b
    Exit codes:
      0  compared, or nothing to compare (no baseline yet, no base): the outputs say which
      2  bad input: an invalid or forged value or document, a bad policy, a base not in the store
      3  the store or the perfgate server failed
    """
    from perfgate.ci.compare_step import StepEnvironment, run_compare_step
    from perfgate.ci.step_io import StepOutputs, error

    ctx = click.get_current_context()
    inputs = CompareStepInputs.from_env()
    settings = Settings.from_env()
    try:
        env = StepEnvironment(
            cwd=Path.cwd(),
            outputs=StepOutputs(inputs.github_output),
            say=click.echo,
            compare_locally=_local_comparer(ctx, inputs, settings),
            server_settings=lambda: _server_settings(ctx, inputs),
            max_bytes=settings.max_document_bytes,
        )
        run_compare_step(inputs, env)
    except PerfgateError as exc:
        # The annotation for the run's page, and the line the log shows where errors go.
        click.echo(error(str(exc)))
        click.echo(f"error: {' '.join(str(exc).split())}", err=True)
        sys.exit(exc.exit_code)


def _server_settings(ctx: click.Context, inputs: CompareStepInputs) -> dict[str, float]:
    """The threshold and alpha that something other than perfgate's default set: the server's
    defaults are perfgate's, so only those travel."""
    found = [
        _threshold(ctx, inputs.threshold),
        resolve(ctx, "alpha", discover_policy()),
    ]
    return {s.name: float(s.value) for s in found if s.kind != "default"}


def _local_comparer(
    ctx: click.Context, inputs: CompareStepInputs, settings: Settings
) -> LocalCompare:
    """`perfgate compare BASE HEAD --format json --out OUT --fail-on-regression`, in process."""

    def compare_locally(
        *, base: str, head: str, base_branch: str, out: Path, db_url: str | None
    ) -> LocalOutcome:
        from perfgate.ci.compare_step import LocalOutcome
        from perfgate.cli.compare import build_comparison, emit, with_policy_notes
        from perfgate.policy import policy_gate
        from perfgate.report.gate import fails
        from perfgate.stats.two_sample import CompareSettings

        policy = discover_policy()
        gate = policy_gate(policy, resolve(ctx, "fail_on", policy).value)
        comparison = build_comparison(
            base=base,
            head=head,
            settings=CompareSettings(
                alpha=resolve(ctx, "alpha", policy).value,
                threshold=_threshold(ctx, inputs.threshold).value,
            ),
            project=None,
            base_branch=base_branch,
            db_url=db_url or settings.db_url,
            max_bytes=settings.max_document_bytes,
            policy=policy,
        )
        comparison = with_policy_notes(comparison, policy=policy, gate=gate)
        emit(comparison, fmt="json", out=out)
        return LocalOutcome(comparison=comparison, gate_failed=fails(comparison, gate))

    return compare_locally


@command.command("merge-base")
@click.argument("head_sha", metavar="HEAD_SHA")
@click.argument("base_branch", metavar="BASE_BRANCH")
@click.argument("pr", metavar="[PR]", required=False, default="")
def merge_base_command(*, head_sha: str, base_branch: str, pr: str) -> None:
    """Print the merge-base of HEAD_SHA with origin/BASE_BRANCH (pull request PR, whose head
    ref is fetched when the commit is missing), deepening a shallow clone as needed.

    \b
    Exit codes:
      0  found (printed)
      2  a bad argument, or no merge-base (no checkout, no such branch, unrelated histories)
    """
    from perfgate.ci.merge_base import merge_base
    from perfgate.ci.step_io import require_commit, require_name, require_pr
    from perfgate.errors import NotFoundError

    require_commit("head commit", head_sha)
    require_name("base-branch", base_branch)
    if pr:
        require_pr("pr", pr)
    found = merge_base(Path.cwd(), head_sha=head_sha, base_branch=base_branch, pr=pr)
    if not found:
        raise NotFoundError(
            f"no merge-base of {head_sha[:12]} with origin/{base_branch} in this checkout "
            "(check out with fetch-depth: 0)"
        )
    click.echo(found)


@command.command("event")
@click.argument("keys", nargs=-1, required=True)
def event_command(*, keys: tuple[str, ...]) -> None:
    """Print one field of the job's event payload ($GITHUB_EVENT_PATH), read as data: the
    value at KEYS (say, `pull_request head sha`) when it is a string or an integer, else
    nothing."""
    from perfgate.ci.compare_step import event_field, read_event

    value = event_field(read_event(CompareStepInputs.from_env().event_path), *keys)
    if value:
        click.echo(value)


@command.command("pr-claim")
@click.argument("pr", type=click.IntRange(min=1))
@click.argument("head_sha", metavar="HEAD_SHA", default="")
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
def pr_claim_command(*, pr: int, head_sha: str, out: Path) -> None:
    """Write OUT (pr.json): the pull request PR and its HEAD_SHA, for the fork-safe report,
    which reads it back as a claim to check."""
    from perfgate.ci.pr_claim import write_pr_claim
    from perfgate.ci.step_io import require_commit

    if head_sha:
        require_commit("head commit", head_sha)
    write_pr_claim(out, pr=pr, head_sha=head_sha)


# The action measures 3 rounds where `perfgate run` measures 1, unless something set them.
ACTION_ROUNDS = 3


@command.command("run-settings")
@policy_device_option
@rounds_option
def run_settings_command(*, device: str | None, rounds: int | None) -> None:
    """Print the run step's benchmarks path, device and rounds, one a line.

    Each is its input (INPUT_BENCHMARKS, INPUT_DEVICE, INPUT_ROUNDS) when given, else what
    `perfgate config` resolves: the variable, the project's policy file, the default; rounds
    are 3 when only perfgate's default (1) set them. Both sides of an alternating run get these
    values explicitly (the base's checkout may hold another policy).
    """
    from perfgate.policy import from_policy

    ctx = click.get_current_context()
    inputs = RunStepInputs.from_env()
    policy = discover_policy()
    benchmarks = inputs.benchmarks or str(from_policy(policy, "benchmarks").value)
    chosen_device = inputs.device or str(resolve(ctx, "device", policy).value)
    if inputs.rounds:
        if not inputs.rounds.isdigit() or int(inputs.rounds) < 1:
            raise UsageError(f"rounds: {inputs.rounds!r} is not a whole number of 1 or more")
        chosen_rounds = int(inputs.rounds)
    else:
        found = resolve(ctx, "rounds", policy)
        chosen_rounds = ACTION_ROUNDS if found.kind == "default" else int(found.value)
    for name, value in (("benchmarks", benchmarks), ("device", chosen_device)):
        if "\n" in value or "\r" in value:
            raise UsageError(f"{name}: {value!r} holds a line break")
    click.echo(f"{benchmarks}\n{chosen_device}\n{chosen_rounds}")
