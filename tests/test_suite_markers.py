"""How the suite is collected: `-m "not postgres"` leaves out every test that needs the PostgreSQL
server; the longest files come first (suite_order.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _collected(*args: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return [line for line in done.stdout.splitlines() if "::" in line]


def test_backend_parametrised_tests_carry_the_postgres_marker() -> None:
    files = ["tests/test_migrations.py", "tests/test_store_upload.py"]
    everything = _collected(*files)
    without = _collected("-m", "not postgres", *files)
    on_postgres = [t for t in everything if "postgres" in t]
    assert on_postgres, "these files run on both backends"
    assert not [t for t in without if "postgres" in t]
    assert sorted(without + on_postgres) == sorted(everything)


def test_the_longest_files_are_collected_first() -> None:
    """Under `--dist loadfile --no-loadscope-reorder` xdist starts files in collection order."""
    from suite_order import SLOWEST_FIRST

    missing = [path for path in SLOWEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"suite_order.py names files that do not exist: {missing}"
    # Three of the named files given in the reverse of their order, and one file it does not
    # name first: collected, the named ones lead in their order, the other follows.
    named = list(SLOWEST_FIRST[-3:])
    given = ["tests/test_json_text.py", *reversed(named)]
    files = list(dict.fromkeys(t.split("::", 1)[0] for t in _collected(*given)))
    assert files == [*named, "tests/test_json_text.py"]
