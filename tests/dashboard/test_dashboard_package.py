"""The wheel carries the dashboard's templates and static files, the vendored chart included."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "service" / "perfgate" / "api" / "dashboard"


@pytest.mark.slow
def test_wheel_ships_templates_and_static_assets(built_wheel: Path) -> None:
    wheel = built_wheel
    names = set(zipfile.ZipFile(wheel).namelist())
    assets = [
        p
        for folder in ("templates", "static")
        for p in (DASHBOARD / folder).rglob("*")
        if p.is_file()
    ]
    assert len(assets) >= 10
    for asset in assets:
        inside = "perfgate/" + asset.relative_to(ROOT / "service" / "perfgate").as_posix()
        assert inside in names, f"{inside} is missing from the wheel"
    assert "perfgate/api/dashboard/static/vendor/uplot/LICENSE" in names
