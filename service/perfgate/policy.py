"""The project's policy file: pyproject.toml's `[tool.perfgate]` or perfgate.toml (docs/policy.md).

Found from a directory upward to the repository root; in each directory perfgate.toml comes
before pyproject.toml, and a pyproject.toml without a `[tool.perfgate]` table is passed over.
Every key is checked: an unknown one or a wrong type is a UsageError (exit 2) naming the file and
the key. The file only supplies values: flags and environment variables come first (see
`perfgate.cli.settings`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfgate.errors import UsageError
from perfgate.report.gate import Gate

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

POLICY_FILE = "perfgate.toml"
PYPROJECT = "pyproject.toml"

#: What `fail_on` may name; a regression of a non-informational benchmark always can fail.
FAIL_ON_CHOICES = ("regression", "possible-regression", "missing")
DEFAULT_FAIL_ON: tuple[str, ...] = ("regression",)
#: The built-in defaults of the settings a policy may give (the commands' own defaults).
DEFAULTS: dict[str, object] = {
    "benchmarks": "benchmarks",
    "device": "auto",
    "rounds": 1,
    "threshold": 0.03,
    "alpha": 0.05,
    "fail_on": DEFAULT_FAIL_ON,
}
SETTINGS = tuple(DEFAULTS)
_OVERRIDE_KEYS = ("threshold", "ignore", "required", "informational")
_ISSUE_KEYS = ("labels", "assignees", "horizon")
#: Change points this many runs old or older open no new issue (docs/github.md).
DEFAULT_ISSUE_HORIZON = 30
# GitHub's limits: a label name is at most 50 characters; a login is 1-39 letters, digits and
# single hyphens, not at either end. A comma would split the label filter of the issue list.
_LABEL_CHARS = 50
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}")
_DEVICE = re.compile(r"auto|cpu|cuda(:\d+)?")
# fail(key, message): the error naming the file and the key.
_Fail = Callable[[str, str], UsageError]


@dataclass(frozen=True)
class Override:
    """`[overrides."GLOB"]`: rules for the benchmarks whose key matches GLOB."""

    pattern: str
    threshold: float | None = None
    ignore: bool | None = None
    required: tuple[str, ...] | None = None
    informational: bool | None = None

    def matches(self, key: str) -> bool:
        return glob_matches(self.pattern, key)


@dataclass(frozen=True)
class KeyRules:
    """What the policy says about one benchmark key, all matching overrides applied."""

    threshold: float | None = None
    ignore: bool = False
    # The metrics that decide the gate for this benchmark; None: all of them.
    required: frozenset[str] | None = None
    informational: bool = False

    def gates(self, metric: str) -> bool:
        """Whether a result of `metric` on this benchmark may fail the gate."""
        return not self.informational and (self.required is None or metric in self.required)


@dataclass(frozen=True)
class IssueSettings:
    """`[issues]`: the GitHub issues opened for change points on main (docs/github.md)."""

    labels: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    horizon: int = DEFAULT_ISSUE_HORIZON


@dataclass(frozen=True)
class Policy:
    """A policy file's values (None where the file does not set one); `path` None: no file."""

    path: Path | None = None
    # The path as messages show it: relative to the working directory when under it.
    shown: str = ""
    # Where the values sit in the file, for messages: "[tool.perfgate]" in a pyproject.toml.
    table: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    overrides: tuple[Override, ...] = ()
    issues: IssueSettings = field(default_factory=IssueSettings)

    @property
    def label(self) -> str:
        """How `perfgate config` names this source: the path, with the table in a pyproject."""
        if self.path is None:
            return "no policy file"
        shown = self.shown or str(self.path)
        return f"{shown} {self.table}" if self.table else shown

    def get(self, name: str) -> Any:
        return self.values.get(name)

    def rules_for(self, key: str) -> KeyRules:
        """Every override whose glob matches `key`, in file order, later ones winning per field."""
        rules = KeyRules()
        for override in self.overrides:
            if not override.matches(key):
                continue
            rules = KeyRules(
                threshold=override.threshold if override.threshold is not None else rules.threshold,
                ignore=override.ignore if override.ignore is not None else rules.ignore,
                required=frozenset(override.required)
                if override.required is not None
                else rules.required,
                informational=override.informational
                if override.informational is not None
                else rules.informational,
            )
        return rules


def glob_matches(pattern: str, key: str) -> bool:
    """`*` any run of characters, `?` one; everything else literal (so `softmax[n=8]` is a key,
    not a character class)."""
    regex = "".join(
        ".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern
    )
    return re.fullmatch(regex, key, flags=re.DOTALL) is not None


def find_policy_file(start: Path) -> Path | None:
    """The policy file for `start`: the nearest perfgate.toml, or pyproject.toml with a
    `[tool.perfgate]` table, from `start` up to the repository root (the first directory with
    `.git`), or up to the filesystem root outside a repository."""
    here = start.resolve()
    for directory in (here, *here.parents):
        dedicated = directory / POLICY_FILE
        if dedicated.is_file():
            return dedicated
        pyproject = directory / PYPROJECT
        if pyproject.is_file() and "perfgate" in _read_toml(pyproject).get("tool", {}):
            return pyproject
        if (directory / ".git").exists():
            return None
    return None


def discover_policy(start: Path | None = None) -> Policy:
    """The policy that applies in `start` (default: the current directory); empty when none."""
    found = find_policy_file(start or Path.cwd())
    return load_policy(found) if found is not None else Policy()


def load_policy(path: Path) -> Policy:
    """Read and check one policy file (perfgate.toml, or pyproject.toml's `[tool.perfgate]`)."""
    data = _read_toml(path)
    shown = _shown_path(path)
    if path.name == PYPROJECT:
        table: object = data.get("tool", {}).get("perfgate", {})
        prefix = "tool.perfgate."
        if not isinstance(table, dict):
            raise UsageError(f"{shown}: tool.perfgate must be a table")
    else:
        table, prefix = data, ""
    return _parse(table, source=shown, prefix=prefix, path=path)


def _shown_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{_shown_path(path)}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError:
        raise UsageError(f"{_shown_path(path)}: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{_shown_path(path)}: not valid TOML ({exc})") from None


def _parse(table: dict[str, Any], *, source: str, prefix: str, path: Path) -> Policy:
    def fail(key: str, message: str) -> UsageError:
        return UsageError(f"{source}: {prefix}{key}: {message}")

    values: dict[str, Any] = {}
    overrides: list[Override] = []
    issues = IssueSettings()
    for key, value in table.items():
        if key == "benchmarks":
            given = _string(value, fail(key, f"expected a path (a string), got {value!r}"))
            # Relative to the policy file, wherever perfgate runs from.
            values[key] = _shown_path(path.parent / given)
        elif key == "device":
            device = _string(value, fail(key, f"expected a string, got {value!r}"))
            if not _DEVICE.fullmatch(device):
                raise fail(key, f"{device!r} is not auto, cpu, cuda or cuda:N")
            values[key] = device
        elif key == "rounds":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise fail(key, f"expected a whole number of at least 1, got {value!r}")
            values[key] = value
        elif key == "threshold":
            values[key] = _threshold(value, key=key, fail=fail)
        elif key == "alpha":
            alpha = _number(value, fail(key, f"expected a number, got {value!r}"))
            if not 0 < alpha < 1:
                raise fail(key, f"must be between 0 and 1 (exclusive), got {value!r}")
            values[key] = alpha
        elif key == "fail_on":
            values[key] = parse_fail_on(value, where=f"{source}: {prefix}{key}")
        elif key == "overrides":
            if not isinstance(value, dict):
                raise fail(key, 'expected tables, e.g. [overrides."matmul*"]')
            for pattern, rules in value.items():
                overrides.append(_override(pattern, rules, fail=fail))
        elif key == "issues":
            issues = _issues(value, fail=fail)
        else:
            known = ", ".join(sorted([*SETTINGS, "issues", "overrides"]))
            raise fail(key, f"unknown key (known: {known})")
    return Policy(
        path=path,
        shown=source,
        table="[tool.perfgate]" if prefix else "",
        values=values,
        overrides=tuple(overrides),
        issues=issues,
    )


def _issues(table: object, *, fail: _Fail) -> IssueSettings:
    if not isinstance(table, dict):
        raise fail("issues", "expected a table of labels, assignees, horizon")
    found: dict[str, Any] = {}
    for key, value in table.items():
        name = f"issues.{key}"
        if key == "labels":
            found[key] = parse_labels(value, where=name, fail=fail)
        elif key == "assignees":
            if not isinstance(value, list) or not all(
                isinstance(v, str) and _LOGIN.fullmatch(v) for v in value
            ):
                raise fail(
                    name, f'expected a list of GitHub logins, e.g. ["octocat"], got {value!r}'
                )
            found[key] = tuple(dict.fromkeys(value))
        elif key == "horizon":
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise fail(name, f"expected a whole number of runs, at least 1, got {value!r}")
            found[key] = value
        else:
            raise fail(name, f"unknown key (known: {', '.join(_ISSUE_KEYS)})")
    return IssueSettings(**found)


def parse_labels(value: object, *, where: str, fail: _Fail) -> tuple[str, ...]:
    """A list of GitHub label names (from the policy, or `--label` flags), checked."""
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(where, f'expected a list of label names, e.g. ["performance"], got {value!r}')
    for label in value:
        if (
            not label.strip()
            or len(label) > _LABEL_CHARS
            or "," in label
            or any(ord(char) < 32 or ord(char) == 127 for char in label)
        ):
            raise fail(
                where,
                f"{label!r} is not a label name "
                f"(1 to {_LABEL_CHARS} characters, no comma or control character)",
            )
    return tuple(dict.fromkeys(value))


def _override(pattern: str, rules: object, *, fail: _Fail) -> Override:
    where = f'overrides."{pattern}"'
    if not isinstance(rules, dict):
        raise fail(where, "expected a table of threshold, ignore, required, informational")
    found: dict[str, Any] = {}
    for key, value in rules.items():
        name = f"{where}.{key}"
        if key == "threshold":
            found[key] = _threshold(value, key=name, fail=fail)
        elif key in ("ignore", "informational"):
            if not isinstance(value, bool):
                raise fail(name, f"expected true or false, got {value!r}")
            found[key] = value
        elif key == "required":
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise fail(name, f'expected a list of metric names, e.g. ["time"], got {value!r}')
            found[key] = tuple(value)
        else:
            raise fail(name, f"unknown key (known: {', '.join(_OVERRIDE_KEYS)})")
    return Override(pattern=pattern, **found)


def _string(value: object, error: UsageError) -> str:
    if not isinstance(value, str) or not value:
        raise error
    return value


def _number(value: object, error: UsageError) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error
    return float(value)


def _threshold(value: object, *, key: str, fail: _Fail) -> float:
    number = _number(value, fail(key, f"expected a number (0.03 = 3%), got {value!r}"))
    if number < 0:
        raise fail(key, f"must be 0 or more, got {value!r}")
    return number


def parse_fail_on(value: object, *, where: str) -> tuple[str, ...]:
    """`fail_on` from a file (a list) or a flag/env var (comma-separated text), checked."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
        raise UsageError(f"{where}: expected a list of {', '.join(FAIL_ON_CHOICES)}")
    names = tuple(dict.fromkeys(v.strip() for v in items if v.strip()))
    for name in names:
        if name not in FAIL_ON_CHOICES:
            raise UsageError(f"{where}: {name!r} is not one of {', '.join(FAIL_ON_CHOICES)}")
    return names


@dataclass(frozen=True)
class Setting:
    """One effective setting and where it came from: `kind` is flag, env, policy or default;
    `origin` names it (`--threshold`, `PERFGATE_COMPARE_THRESHOLD`, the policy file)."""

    name: str
    value: Any
    kind: str
    origin: str


def from_policy(policy: Policy, name: str) -> Setting:
    """`name` from the policy file, else its built-in default (what no flag or variable set)."""
    value = policy.get(name)
    if value is not None:
        return Setting(name, value, "policy", policy.label)
    return Setting(name, DEFAULTS[name], "default", "default")


def policy_gate(policy: Policy, fail_on: tuple[str, ...]) -> Gate:
    """The gate for `fail_on`, exempting what the policy makes informational or not required."""
    if not policy.overrides:
        return Gate(fail_on=fail_on)
    return Gate(fail_on=fail_on, gates=lambda key, metric: policy.rules_for(key).gates(metric))
