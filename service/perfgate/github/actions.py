"""GitHub Actions' own channels: the job summary file and workflow commands (`::warning ...::`)."""

from __future__ import annotations

from pathlib import Path

from perfgate.errors import InputError
from perfgate.report.checks import STEP_SUMMARY_LIMIT, Annotation


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def warning_command(annotation: Annotation) -> str:
    """`::warning title=...::message`, escaped as the runner expects."""
    return (
        f"::warning title={_escape_property(annotation.title)}::{_escape_data(annotation.message)}"
    )


def write_step_summary(path: str, markdown: str) -> int:
    """Append `markdown` to the step summary, cut to stay under its 1 MiB limit; bytes written."""
    target = Path(path)
    try:
        used = target.stat().st_size if target.exists() else 0
        room = STEP_SUMMARY_LIMIT - used - 1
        data = markdown.encode("utf-8")
        if len(data) > room:
            note = b"\n\n_Cut to fit the job summary's 1 MiB limit._\n"
            data = data[: max(0, room - len(note))].decode("utf-8", errors="ignore").encode() + note
            if len(data) > room:
                return 0
        with target.open("ab") as stream:
            stream.write(data if data.endswith(b"\n") else data + b"\n")
    except OSError as exc:
        raise InputError(f"GITHUB_STEP_SUMMARY {path}: cannot write ({exc.strerror})") from None
    return len(data)
