"""Use case: the action's compare step, from its inputs to its outputs (ci/action.yml).

The base is INPUT_BASE when given; else, on a pull request, the merge-base of the PR's head and
its base branch (computed with git, deepening a shallow clone as needed); on a push, the previous
tip. With INPUT_BASE_RESULTS (the base's rounds, measured in this job alternately with the
head's) the two folders are compared directly and no merge-base is needed. When nothing can stand
in for the base (a NoBaselineError from the store, a server's 404 with its code) there is no
baseline yet: not a failure; the outputs say `no-baseline=true` and the report step says so.

In the fork-safe report the results (and a `base` folder beside them) are a fork's artifact:
they are read through the validator, and every value taken from them is checked before it is
printed, written to $GITHUB_OUTPUT or passed on (exit 2 otherwise).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from perfgate.ci.merge_base import merge_base
from perfgate.ci.pr_claim import read_pr_claim
from perfgate.ci.server_compare import compare_on_server
from perfgate.ci.step_io import (
    StepOutputs,
    notice,
    require_commit,
    require_name,
    require_pr,
    warning,
)
from perfgate.config import CompareStepInputs
from perfgate.errors import DocumentError, InputError, NoBaselineError, UsageError
from perfgate.results import ResultsDocument, load_document
from perfgate.stats.model import Comparison

_ZEROS = re.compile(r"0+")


@dataclass(frozen=True)
class LocalOutcome:
    comparison: Comparison
    # The project's policy gate failed (what `perfgate compare --fail-on-regression` exits 1 on).
    gate_failed: bool


class LocalCompare(Protocol):
    def __call__(
        self, *, base: str, head: str, base_branch: str, out: Path, db_url: str | None
    ) -> LocalOutcome:
        """Compare like `perfgate compare BASE HEAD --format json --out OUT` (with the store at
        `db_url`, None for perfgate's own setting), or raise NoBaselineError when the store has
        nothing for the base side."""


@dataclass(frozen=True)
class StepEnvironment:
    """What the step works with besides its inputs."""

    cwd: Path
    outputs: StepOutputs
    say: Callable[[str], None]
    compare_locally: LocalCompare
    # The threshold and alpha a flag, variable or the policy set (sent to a server); a bad
    # policy raises UsageError.
    server_settings: Callable[[], dict[str, float]]
    max_bytes: int


class _NothingToCompareError(Exception):
    """Nothing is compared, for the reason given (not a failure)."""


def first_document(path: Path, label: str, *, max_bytes: int) -> ResultsDocument:
    """The results document at `path` (the first of a folder of rounds), validated."""
    if path.is_dir():
        files = sorted(path.glob("*.json"))
        if not files:
            raise InputError(f"{label}: {path} holds no results documents (*.json)")
        path = files[0]
    try:
        return load_document(path, max_bytes=max_bytes)
    except DocumentError as exc:
        where = f"{label} {exc.path}" if exc.path else label
        raise InputError(f"{where}: {exc.detail} ({exc.source or path})") from None


def event_field(event: dict[str, Any], *keys: str) -> str:
    """One field of the event payload, read as data: "" unless a string or an integer."""
    value: object = event
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    return ""


def read_event(path: str) -> dict[str, Any]:
    if not path or not Path(path).is_file():
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise InputError(f"GITHUB_EVENT_PATH: {path} is not a JSON event payload") from None
    return data if isinstance(data, dict) else {}


def embedded_store(inputs: CompareStepInputs) -> Path:
    """Where the embedded SQLite store lives when neither db nor server is given: outside the
    workspace (which actions/checkout cleans), one store per repository."""
    repo = re.sub(r"[^A-Za-z0-9_./-]", "_", inputs.repository or "default")
    return Path(inputs.data_home) / "perfgate" / repo / "perfgate.db"


def store_url(inputs: CompareStepInputs, say: Callable[[str], None]) -> str | None:
    """The database the step reads (None: perfgate's own setting, e.g. with a server)."""
    if inputs.db:
        return inputs.db
    if inputs.server:
        return None
    file = embedded_store(inputs)
    file.parent.mkdir(parents=True, exist_ok=True)
    if inputs.runner_environment == "github-hosted":
        say(
            warning(
                f"no db or server: the embedded store ({file}) is lost when this GitHub-hosted "
                "job ends, so no history builds up; set db (a database URL from a secret) or server"
            )
        )
    else:
        say(
            f"store: the embedded SQLite store {file} (kept on this runner only; set db or "
            "server to share it)"
        )
    return f"sqlite:///{file}"


def regressions_of(comparison: Comparison) -> int:
    """Regressions, informational benchmarks included, plus one for a suite-wide slowdown."""
    common = comparison.common_factor
    return len(comparison.regressions()) + (common is not None and common.verdict == "regression")


def _nothing_outputs(outputs: StepOutputs) -> None:
    outputs.set("comparison", "")
    outputs.set("regressions", 0)
    outputs.set("gate", "pass")


def run_compare_step(inputs: CompareStepInputs, env: StepEnvironment) -> None:
    """Decide the base, compare, and write the step's outputs: comparison, regressions, gate,
    base, base-branch, pr and (when the store has nothing for the base) no-baseline."""
    try:
        _compare_step(inputs, env)
    except _NothingToCompareError as reason:
        env.say(notice(str(reason)))
        _nothing_outputs(env.outputs)


def _compare_step(inputs: CompareStepInputs, env: StepEnvironment) -> None:
    outputs, say = env.outputs, env.say
    if not inputs.results_file:
        raise UsageError("INPUT_RESULTS_FILE: no results document (the run step's `results`)")
    results = Path(inputs.results_file)
    out = Path(inputs.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    comparison_path = out / "comparison.json"
    db_url = store_url(inputs, say)

    if inputs.head_sha:
        require_commit("head-sha", inputs.head_sha)
    event = read_event(inputs.event_path)
    head_sha = (
        inputs.head_sha
        or event_field(event, "pull_request", "head", "sha")
        or event_field(event, "workflow_run", "head_sha")
        or inputs.github_sha
    )
    measured = first_document(results, "results", max_bytes=env.max_bytes).run.commit
    if inputs.head_sha and measured.lower() != inputs.head_sha.lower():
        raise InputError(
            f"the results are for commit {measured}, not {inputs.head_sha}: refusing to report them"
        )
    head_sha = require_commit("head commit", measured or head_sha)

    pr = inputs.pr
    claim = results.parent / "pr.json"
    if not pr and inputs.results and claim.is_file():
        pr = read_pr_claim(claim)
    if pr:
        require_pr("pr", pr)
    outputs.set("pr", pr)

    base_branch = (
        inputs.base_branch
        or event_field(event, "pull_request", "base", "ref")
        or inputs.github_base_ref
        or "main"
    )
    require_name("base-branch", base_branch)
    outputs.set("base-branch", base_branch)

    base = inputs.base
    if base:
        require_name("base", base)
    if inputs.base_results:
        # Alternating mode: the run step measured the base itself (or, in the fork-safe report,
        # the fork's artifact says it did).
        base_doc = first_document(
            Path(inputs.base_results), "base results", max_bytes=env.max_bytes
        )
        base = require_commit("base results run.commit", base_doc.run.commit)
    elif not base:
        base = _default_base(inputs, env, event, head_sha=head_sha, pr=pr, base_branch=base_branch)
    outputs.set("base", base)
    say(f"comparing {results} (head {head_sha[:12]}) with base {base[:12]} (branch {base_branch})")

    try:
        if not inputs.base_results and inputs.server and not inputs.db:
            # The server compares with its store's history; the upload step sent the head.
            project = first_document(results, "results", max_bytes=env.max_bytes).run.project
            answer = compare_on_server(
                inputs.server,
                token=inputs.server_token,
                project=project,
                base=base,
                head=head_sha,
                settings=env.server_settings(),
            )
            comparison_path.write_bytes(answer.raw)
            comparison = answer.comparison
            # Through a server the gate is its regressions (the policy's gate needs the store).
            gate_failed = regressions_of(comparison) > 0
        else:
            outcome = env.compare_locally(
                base=inputs.base_results or base,
                head=str(results),
                base_branch=base_branch,
                out=comparison_path,
                db_url=db_url,
            )
            comparison, gate_failed = outcome.comparison, outcome.gate_failed
    except NoBaselineError:
        outputs.set("no-baseline", "true")
        raise _NothingToCompareError(
            f"no baseline: the store has no runs of {base[:12]} or of {base_branch} before it; "
            f"nothing compared (runs of {base_branch} build the baseline, or use alternate: true)"
        ) from None

    regressions = regressions_of(comparison)
    outputs.set("comparison", str(comparison_path))
    outputs.set("regressions", regressions)
    outputs.set("gate", "fail" if gate_failed else "pass")
    say(f"{regressions} regression(s); comparison in {comparison_path}")


def _default_base(
    inputs: CompareStepInputs,
    env: StepEnvironment,
    event: dict[str, Any],
    *,
    head_sha: str,
    pr: str,
    base_branch: str,
) -> str:
    """The merge-base on a pull request, the previous tip on a push."""
    if pr or event_field(event, "pull_request", "number"):
        found = merge_base(env.cwd, head_sha=head_sha, base_branch=base_branch, pr=pr)
        if found:
            return found
        tip = event_field(event, "pull_request", "base", "sha")
        if not tip:
            raise _NothingToCompareError(
                f"cannot compute the merge-base with {base_branch} (check out with "
                "fetch-depth: 0); nothing compared"
            )
        env.say(
            warning(
                f"cannot compute the merge-base with {base_branch}: comparing with the base "
                f"branch's tip {tip}"
            )
        )
        return tip
    before = event_field(event, "before")
    if not before or _ZEROS.fullmatch(before):
        raise _NothingToCompareError(
            "no base to compare with (not a pull request, no previous commit)"
        )
    return before
