"""The wheel carries the migrations, so `perfgate db upgrade` works from a plain install."""

from __future__ import annotations

import os
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
    assert "upgraded (empty) -> 0004" in done.stdout
