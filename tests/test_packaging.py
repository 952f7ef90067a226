"""The wheel carries the migrations and the demo's benchmarks: a plain install works anywhere."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_ships_migrations_and_upgrades(tmp_path: Path, built_wheel: Path) -> None:
    wheel = built_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "perfgate/migrations/env.py" in names
    assert any(n.startswith("perfgate/migrations/versions/0001") for n in names)
    assert any(n.startswith("perfgate/migrations/versions/0002") for n in names)
    assert any(n.startswith("perfgate/migrations/versions/0003") for n in names)
    assert any(n.startswith("perfgate/migrations/versions/0004") for n in names)
    assert any(n.startswith("perfgate/migrations/versions/0005") for n in names)
    assert "perfgate/store/models.py" in names

    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    where = subprocess.run(
        [sys.executable, "-c", "import perfgate.store.migrate as m; print(m.migrations_dir())"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    ).stdout.strip()
    assert where == str(target / "perfgate" / "migrations")
    db = tmp_path / "fresh.db"
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", "db", "upgrade", "--db", f"sqlite:///{db}"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "upgraded (empty) -> 0005" in done.stdout


def _install(wheel: Path, target: Path) -> dict[str, str]:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), wheel],
        check=True,
        capture_output=True,
        text=True,
    )
    return {**os.environ, "PYTHONPATH": str(target), "CI": "1"}


@pytest.mark.slow
def test_installed_demo_runs_in_any_folder_and_finds_the_planted_op(
    tmp_path: Path, built_wheel: Path
) -> None:
    pytest.importorskip("torch")
    env = _install(built_wheel, tmp_path / "site")
    work = tmp_path / "elsewhere"  # no examples/ here: the wheel's own are used
    work.mkdir()
    demo = ["demo", "-k", "layer_norm", "--rounds", "2", "--max-time", "0.05"]
    done = subprocess.run(
        [sys.executable, "-m", "perfgate", *demo, "--db", "sqlite:///demo.db"],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
    )
    assert done.returncode == 0, done.stderr
    # A live run asserts exact facts only: the planted copy is one more aten op per call, a
    # regression whatever the machine's noise, with the op behind it named. Timing verdicts
    # depend on how busy the machine is; the comparator's statistics are tested on recorded
    # and simulated data.
    comparison = json.loads((work / ".perfgate" / "demo" / "comparison.json").read_text())
    ops = [r for r in comparison["results"] if r["metric"] == "op_count"]
    assert [(r["key"], r["verdict"]) for r in ops] == [
        ("layer_norm[hidden=768,tokens=512]", "regression")
    ]
    assert "aten::copy_" in [op["op"] for op in ops[0]["attribution"]]
    assert "### ⚠️" in done.stdout and "aten::copy_" in done.stdout
    with sqlite3.connect(work / "demo.db") as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (4,)  # 2 rounds a side
