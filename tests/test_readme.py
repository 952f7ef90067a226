"""The README stays true: its CLI reference is the commands' own --help, its commands exist."""

from __future__ import annotations

import re
from pathlib import Path

from perfgate.cli.reference import render_reference, replace_section

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_cli_reference_matches_help() -> None:
    expected = replace_section(README, render_reference())
    assert expected == README, "run: python -m perfgate.cli.reference --write README.md"


def test_quick_start_commands_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", README, flags=re.MULTILINE):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), target


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in README
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), flags=re.MULTILINE)
