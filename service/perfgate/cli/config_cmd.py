"""`perfgate config`: the effective settings of run, compare and comment, and their sources."""

from __future__ import annotations

from typing import Any

import click

from perfgate import json_text
from perfgate.cli.options import (
    alpha_option,
    fail_on_option,
    policy_device_option,
    resolve,
    rounds_option,
    threshold_option,
)
from perfgate.policy import SETTINGS, Override, Policy, Setting, discover_policy


@click.command("config")
@click.option(
    "--benchmarks",
    metavar="PATH",
    help="As `perfgate run PATH`: the benchmarks path [default: the policy's, else benchmarks].",
)
@policy_device_option
@rounds_option
@threshold_option
@alpha_option
@fail_on_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
def command(
    *,
    benchmarks: str | None,
    device: str | None,
    rounds: int | None,
    threshold: float | None,
    alpha: float | None,
    fail_on: str | None,
    as_json: bool,
) -> None:
    """Print the effective settings and where each came from.

    Each setting is a flag (of this command, as run and compare take it), else its environment
    variable, else the project's policy file (pyproject.toml's [tool.perfgate] or perfgate.toml,
    the nearest from here up to the repository root), else the built-in default. The policy's
    per-benchmark overrides follow. An invalid policy file exits 2 naming the key; see
    docs/policy.md.
    """
    ctx = click.get_current_context()
    policy = discover_policy()
    settings = [resolve(ctx, name, policy) for name in SETTINGS]
    if as_json:
        click.echo(json_text.dumps(config_json(policy, settings), indent=1))
        return
    click.echo(f"policy file: {policy.label}")
    width = max(len(s.name) for s in settings)
    values = [_text(s.value) for s in settings]
    value_width = max(len(v) for v in values)
    for setting, value in zip(settings, values, strict=True):
        click.echo(f"{setting.name:<{width}}  {value:<{value_width}}  {_source(setting)}")
    if policy.overrides:
        click.echo(f"overrides ({policy.label}):")
        for override in policy.overrides:
            click.echo(f"  {json_text.dumps(override.pattern)}: {_override_text(override)}")
    issues = policy.issues
    click.echo(
        f"issues: labels {json_text.dumps(list(issues.labels))}, assignees "
        f"{json_text.dumps(list(issues.assignees))}, horizon {issues.horizon} runs"
    )


def config_json(policy: Policy, settings: list[Setting]) -> dict[str, Any]:
    return {
        "policy": str(policy.path) if policy.path else None,
        "settings": {
            s.name: {
                "value": list(s.value) if isinstance(s.value, tuple) else s.value,
                "source": s.kind,
                "origin": s.origin,
            }
            for s in settings
        },
        "overrides": [
            {"match": o.pattern, **_override_fields(o), "source": policy.label}
            for o in policy.overrides
        ],
        # `perfgate changes --sync-issues` (docs/github.md, Change-point issues).
        "issues": {
            "labels": list(policy.issues.labels),
            "assignees": list(policy.issues.assignees),
            "horizon": policy.issues.horizon,
        },
    }


def _override_fields(override: Override) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "threshold": override.threshold,
        "ignore": override.ignore,
        "required": list(override.required) if override.required is not None else None,
        "informational": override.informational,
    }
    return {k: v for k, v in fields.items() if v is not None}


def _override_text(override: Override) -> str:
    parts = []
    for key, value in _override_fields(override).items():
        if value is True:
            parts.append(key)
        elif value is False:
            parts.append(f"not {key}")
        else:
            parts.append(f"{key} {_text(value)}")
    return ", ".join(parts) or "nothing"


def _source(setting: Setting) -> str:
    """`flag --threshold`, `env PERFGATE_RUN_ROUNDS`, `policy file pyproject.toml`, `default`."""
    if setting.kind == "default":
        return "default"
    kind = "policy file" if setting.kind == "policy" else setting.kind
    return f"{kind} {setting.origin}"


def _text(value: object) -> str:
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value) or "(none)"
    return str(value)
