"""A step's voice to the runner: workflow commands and $GITHUB_OUTPUT, never forgeable.

Values may come from a fork's artifact. A workflow command ends at a line break, so its text is
escaped the way the runner decodes it (% CR LF); a step output is one `name=value` line, so a
value with a line break (which would add an output of the attacker's) is refused with exit 2.
Values are checked (a commit is hex, a PR number digits, a name one line and not an option)
before anything uses them.
"""

from __future__ import annotations

import re
from pathlib import Path

from perfgate.errors import InputError, UsageError

_COMMIT = re.compile(r"[0-9a-fA-F]{7,64}")
_PR = re.compile(r"[1-9][0-9]{0,9}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
SHOWN_MAX = 80


def command_text(text: str) -> str:
    """`text` as one workflow command's message (the runner decodes %25, %0D, %0A)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def notice(text: str) -> str:
    return f"::notice title=perfgate::{command_text(text)}"


def warning(text: str) -> str:
    return f"::warning title=perfgate::{command_text(text)}"


def error(text: str) -> str:
    return f"::error title=perfgate::{command_text(text)}"


def shown(value: str) -> str:
    """A rejected value in a message: quoted, control characters spelled out, at most 80
    characters."""
    quoted = repr(value)
    return quoted if len(quoted) <= SHOWN_MAX else quoted[: SHOWN_MAX - 3] + "..."


def require_commit(what: str, value: str) -> str:
    """A commit id: 7 to 64 hex digits (SHA-1 or SHA-256)."""
    if _COMMIT.fullmatch(value):
        return value
    raise InputError(f"{what}: {shown(value)} is not a commit id (7 to 64 hex digits)")


def require_pr(what: str, value: str) -> str:
    if _PR.fullmatch(value):
        return value
    raise InputError(f"{what}: {shown(value)} is not a pull request number")


def require_name(what: str, value: str) -> str:
    """A branch or commit name: one line, not empty, not an option."""
    if value and not value.startswith("-") and not _CONTROL.search(value):
        return value
    raise InputError(f"{what}: {shown(value)} is not a branch or commit name")


def has_control(value: str) -> bool:
    return bool(_CONTROL.search(value))


class StepOutputs:
    """Appends `name=value` lines to $GITHUB_OUTPUT and remembers them (for tests and echoes)."""

    def __init__(self, path: str) -> None:
        if not path:
            raise UsageError("GITHUB_OUTPUT is not set: run this as a step of the perfgate action")
        self.path = Path(path)
        self.written: dict[str, str] = {}

    def set(self, name: str, value: str | int) -> None:
        text = str(value)
        if "\n" in text or "\r" in text:
            raise InputError(f"output {name}: refusing a value with a line break: {shown(text)}")
        with self.path.open("a", encoding="utf-8") as out:
            out.write(f"{name}={text}\n")
        self.written[name] = text
