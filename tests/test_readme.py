"""The README and docs/cli.md stay true: the reference is the commands' own --help, the commands
in the README exist, and every docs page the README links to is there."""

from __future__ import annotations

import re
from pathlib import Path

from perfgate.cli.reference import render_reference, replace_section

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
CLI_PAGE = (ROOT / "docs" / "cli.md").read_text()


def test_cli_reference_matches_help() -> None:
    expected = replace_section(CLI_PAGE, render_reference())
    assert expected == CLI_PAGE, "run: python -m perfgate.cli.reference --write docs/cli.md"


def test_readme_is_short_and_its_links_resolve() -> None:
    assert len(README.splitlines()) <= 160
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target


def test_quick_start_commands_are_make_targets() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in re.findall(r"^make (\w+)", README, flags=re.MULTILINE):
        assert re.search(rf"^{target}:", makefile, flags=re.MULTILINE), target


def test_ci_runs_the_readme_test_command() -> None:
    assert "make test" in README
    assert re.search(r"^make test$", (ROOT / ".ci" / "run").read_text(), flags=re.MULTILINE)
