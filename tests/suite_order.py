"""Which test files start first under xdist: the longest, so that none starts last and runs alone.

`make pytest` runs `--dist loadfile --no-loadscope-reorder`: each file goes whole to one worker,
in collection order (xdist's default order, most tests first, would start a 60 s file with one
test last). tests/conftest.py sorts the collection so these files come first, in this order; the
other files keep pytest's order behind them. The list is a measurement (the suite's per-file
durations on the 2-core development machine, longest first): a file missing from it only starts
later, and tests/test_suite_markers.py checks that every file named here exists.
"""

from __future__ import annotations

# Per-file sums of one full run's durations, in seconds, in this order (4 workers at a load of
# 8-9 from other work, so some 3x CI's figures): 211 162 191 179 175 152 141 127 121 108 98 88
# 75 73 57 52 41 35. The first-PR file is one indivisible minute-long test: it goes second.
SLOWEST_FIRST: tuple[str, ...] = (
    "tests/harness/test_harness_worker_rounds.py",
    "tests/github/test_action_first_pr.py",
    "tests/github/test_action_scripts.py",
    "tests/github/test_action_run_step.py",
    "tests/test_document_properties.py",
    "tests/harness/test_harness_allocations.py",
    "tests/github/test_change_issues.py",
    "tests/bisect/test_bisect_planted.py",
    "tests/test_packaging.py",
    "tests/test_noise_model.py",
    "tests/github/test_action_policy.py",
    "tests/test_store_bulk.py",
    "tests/github/test_action_fork.py",
    "tests/test_calibrate.py",
    "tests/bisect/test_bisect_cli.py",
    "tests/api/test_api_schemathesis.py",
    "tests/api/test_api_read_only.py",
    "tests/harness/test_harness_runner.py",
)


def file_rank(nodeid: str) -> int:
    """Where a test's file starts: its place in SLOWEST_FIRST, else after all of them."""
    path = nodeid.split("::", 1)[0]
    try:
        return SLOWEST_FIRST.index(path)
    except ValueError:
        return len(SLOWEST_FIRST)
