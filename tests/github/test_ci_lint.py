"""ci/ passes shellcheck and actionlint with no finding at all (both come with the dev extra).

actionlint reads workflows from a repository's `.github/workflows`, so the shipped workflows are
laid out in a scratch repository with `OWNER/perfgate/ci@v1` pointing at a copy of `ci/`: every
`with:` is then checked against action.yml's inputs. actionlint does not look inside composite
actions, so action.yml's own steps are checked too, as the steps of a reusable workflow whose
inputs are the action's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CI = ROOT / "ci"
SCRIPTS = sorted((CI / "scripts").glob("*.sh"))
ACTION_REF = "OWNER/perfgate/ci@v1"


def _tool(name: str) -> str:
    """The linter next to this Python (the dev extra installs it), else on PATH."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]' (see pyproject.toml)")
    return found


def test_shellcheck_finds_nothing_in_the_action_scripts() -> None:
    assert SCRIPTS, "no scripts found under ci/scripts"
    done = subprocess.run(
        [_tool("shellcheck"), "--external-sources", "--format=gcc", *map(str, SCRIPTS)],
        cwd=CI / "scripts",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and not done.stdout, done.stdout + done.stderr


def _action_as_workflow(action: dict[str, Any]) -> dict[str, Any]:
    """action.yml's steps as a reusable workflow's one job, with the action's inputs."""
    return {
        "name": "perfgate action steps",
        "on": {
            "workflow_call": {
                "inputs": {name: {"type": "string", "required": False} for name in action["inputs"]}
            }
        },
        "permissions": {},
        "jobs": {"action": {"runs-on": "ubuntu-latest", "steps": action["runs"]["steps"]}},
    }


def test_actionlint_finds_nothing_in_the_workflows_and_the_action(tmp_path: Path) -> None:
    project = tmp_path / "project"
    workflows = project / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copytree(CI, project / "ci")
    for path in sorted((CI / "workflows").glob("*.yml")):
        text = path.read_text()
        assert ACTION_REF in text, f"{path.name} does not use {ACTION_REF}"
        (workflows / path.name).write_text(text.replace(ACTION_REF, "./ci"))
    action = yaml.safe_load((CI / "action.yml").read_text())
    (workflows / "action-steps.yml").write_text(
        yaml.safe_dump(_action_as_workflow(action), sort_keys=False)
    )
    # actionlint finds its project through git.
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=60)
    done = subprocess.run(
        [
            _tool("actionlint"),
            "-config-file",
            str(CI / "actionlint.yaml"),
            "-shellcheck",
            _tool("shellcheck"),
            "-pyflakes",
            "",
            "-oneline",
            "-no-color",
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # action-steps.yml is action.yml's steps; the other files keep their names.
    assert done.returncode == 0 and not done.stdout, done.stdout + done.stderr
