"""`perfgate compare BASE HEAD`: what got slower, with statistics that hold on noisy runners."""

from __future__ import annotations

import io
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from perfgate import json_text
from perfgate.cli.options import (
    alpha_option,
    db_option,
    fail_on_option,
    format_option,
    max_size_option,
    resolve,
    threshold_option,
)
from perfgate.config import DEFAULT_DB_URL, parse_byte_size
from perfgate.errors import EXIT_REGRESSION
from perfgate.policy import Policy, discover_policy, policy_gate
from perfgate.report.gate import Gate, exempt_findings
from perfgate.report.gate import fails as gate_fails

if TYPE_CHECKING:
    from perfgate.sides import Side
    from perfgate.stats.model import Comparison
    from perfgate.stats.two_sample import CompareSettings

# Benchmarks a policy note names before "and N more".
NAMED = 8


@click.command("compare")
@click.argument("base")
@click.argument("head")
@format_option("table", "markdown", "json", default="table")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the output to a file instead of stdout.",
)
@threshold_option
@alpha_option
@fail_on_option
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when the gate fails: a regression, or what --fail-on adds (informational "
    "benchmarks never fail it).",
)
@click.option("--project", help="Project in the store [default: the only one, or the files'].")
@click.option(
    "--base-branch",
    help="Branch whose nearest earlier run stands in for a base commit without data "
    "[default: main, else master, else the project's branch with the most runs].",
)
@db_option
@max_size_option
def command(
    *,
    base: str,
    head: str,
    fmt: str,
    out: Path | None,
    threshold: float | None,
    alpha: float | None,
    fail_on: str | None,
    fail_on_regression: bool,
    project: str | None,
    base_branch: str | None,
    db_url: str,
    max_size: str,
) -> None:
    """Compare BASE with HEAD: each a results file, a folder of them, a commit or a branch.

    A folder holds the results files of one commit (say, rounds measured alternately with the
    other side's); they are pooled like runs stored for the same commit. A commit may be a unique
    prefix. Each benchmark's noise is learnt from the rounds compared, the store's earlier runs
    of the base branch on the same runner (5 or more also raise its threshold to its run-to-run
    spread) and the runner's calibration record (perfgate calibrate); see docs/comparator.md.
    Two files (or folders) are compared on their own unless --db (or PERFGATE_DB) names a store
    to take that evidence from.

    The project's policy file (pyproject.toml's [tool.perfgate] or perfgate.toml, found from
    here upward) gives the threshold, alpha and fail_on that no flag or variable sets, each
    benchmark's own threshold, the benchmarks to ignore and the informational ones; see
    docs/policy.md and `perfgate config`.

    \b
    Exit codes:
      0  compared (regressions or not, without --fail-on-regression)
      1  the gate failed (a regression, by default) and --fail-on-regression was given
      2  bad usage or input: an unreadable file, a HEAD or branch not in the store
      3  the store (database) failed
      4  no baseline: the store has no runs of BASE, nor of --base-branch before HEAD
         (a first PR, an empty store); CI posts a neutral check instead of a verdict
    """
    # Imported here: scipy costs a second, and `perfgate --help` should not pay it.
    from perfgate.stats.two_sample import CompareSettings

    ctx = click.get_current_context()
    policy = discover_policy()
    settings = CompareSettings(
        alpha=resolve(ctx, "alpha", policy).value,
        threshold=resolve(ctx, "threshold", policy).value,
    )
    gate = policy_gate(policy, resolve(ctx, "fail_on", policy).value)
    # Two files read a store only when one is named (--db or its variable), never the default.
    named_store = ctx.get_parameter_source("db_url") is not ParameterSource.DEFAULT
    comparison = build_comparison(
        base=base,
        head=head,
        settings=settings,
        project=project,
        base_branch=base_branch,
        db_url=db_url if named_store else None,
        max_bytes=parse_byte_size(max_size, source="--max-size"),
        policy=policy,
    )
    comparison = with_policy_notes(comparison, policy=policy, gate=gate)
    emit(comparison, fmt=fmt, out=out)
    if fail_on_regression and gate_fails(comparison, gate):
        sys.exit(EXIT_REGRESSION)


def build_comparison(
    *,
    base: str,
    head: str,
    settings: CompareSettings,
    project: str | None,
    base_branch: str | None,
    db_url: str | None,
    max_bytes: int,
    policy: Policy | None = None,
) -> Comparison:
    """The comparison of BASE and HEAD, with the policy's ignored benchmarks left out of both
    sides and its per-benchmark thresholds in `settings`.

    A side that is a file or folder is loaded from it; a side that is not is a ref in the store
    at `db_url`. With two files and no `db_url` no store is opened (nor imported): the verdict
    depends on the files alone, not on a store that happens to sit in the working directory.
    """
    from perfgate.sides import compare_sides, load_side_file

    # A folder is the runs of one commit, like several stored runs of it.
    loaded: dict[str, Side] = {
        ref: load_side_file(Path(ref), max_bytes=max_bytes)
        for ref in (base, head)
        if Path(ref).exists()
    }
    if len(loaded) == 2 and (db_url is None or _missing_sqlite_file(db_url)):
        base_side, head_side, settings = apply_policy(
            loaded[base], loaded[head], settings=settings, policy=policy
        )
        return compare_sides(base_side, head_side, settings=settings, history=[])
    from perfgate.store import compare_in_store
    from perfgate.store.connect import open_store

    with open_store(db_url or DEFAULT_DB_URL) as store, store.sessions() as session:
        base_side, head_side = compare_in_store.resolve_sides(
            session,
            base=loaded.get(base, base),
            head=loaded.get(head, head),
            project=project,
            base_branch=base_branch,
        )
        base_side, head_side, settings = apply_policy(
            base_side, head_side, settings=settings, policy=policy
        )
        return compare_in_store.compare_with_evidence(
            session, base_side, head_side, settings=settings
        )


def _missing_sqlite_file(db_url: str) -> bool:
    # A named store that does not exist yet has no evidence, and reading is no reason to make it.
    from perfgate.store.engine import is_missing_sqlite_file

    return is_missing_sqlite_file(db_url)


def apply_policy(
    base: Side, head: Side, *, settings: CompareSettings, policy: Policy | None
) -> tuple[Side, Side, CompareSettings]:
    """Both sides without the policy's ignored benchmarks (a note on the head side counts
    them), and `settings` with each remaining benchmark's own threshold."""
    if policy is None or not policy.overrides:
        return base, head, settings
    keys = {b.key for side in (base, head) for d in side.documents for b in d.benchmarks}
    rules = {key: policy.rules_for(key) for key in keys}
    ignored = sorted(key for key, rule in rules.items() if rule.ignore)
    thresholds = tuple(
        (key, rule.threshold)
        for key, rule in sorted(rules.items())
        if rule.threshold is not None and not rule.ignore
    )
    if ignored:

        def without(side: Side) -> Side:
            documents = [
                d.model_copy(
                    update={"benchmarks": [b for b in d.benchmarks if b.key not in ignored]}
                )
                for d in side.documents
            ]
            return replace(side, documents=documents)

        base, head = without(base), without(head)
        head = replace(
            head,
            warnings=[
                *head.warnings,
                f"policy ({policy.label}): {_benchmarks(ignored)} ignored, left out of the "
                "comparison",
            ],
        )
    return base, head, replace(settings, key_thresholds=thresholds)


def with_policy_notes(comparison: Comparison, *, policy: Policy, gate: Gate) -> Comparison:
    """The comparison with a note naming the changes the gate lets pass (informational
    benchmarks, metrics outside a benchmark's required ones)."""
    exempt = sorted({r.key for r in exempt_findings(comparison, gate)})
    if not exempt:
        return comparison
    note = (
        f"policy ({policy.label}): {_benchmarks(exempt)} changed but "
        f"{'is' if len(exempt) == 1 else 'are'} informational (shown, never failing the gate)"
    )
    return replace(comparison, warnings=[*comparison.warnings, note])


def _benchmarks(keys: list[str]) -> str:
    more = len(keys) - NAMED
    named = ", ".join(keys[:NAMED]) + (f" and {more} more" if more > 0 else "")
    return f"{len(keys)} benchmark{'s' if len(keys) != 1 else ''} ({named})"


def emit(comparison: Comparison, *, fmt: str, out: Path | None) -> None:
    """Render in `fmt` to `out` (or stdout)."""
    if fmt == "json":
        from perfgate.report.comparison_document import comparison_to_json

        text = json_text.dumps(comparison_to_json(comparison), indent=1) + "\n"
    elif fmt == "markdown":
        from perfgate.report.markdown import render_markdown

        text = render_markdown(comparison)
    else:
        from rich.console import Console

        from perfgate.report.terminal import render_terminal

        if out is None:
            render_terminal(comparison, Console())
            return
        # Recorded, not shown: the file gets the same table without terminal colours.
        console = Console(record=True, width=160, file=io.StringIO())
        render_terminal(comparison, console)
        text = console.export_text()
    if out is None:
        click.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        click.echo(f"wrote {out}", err=True)
