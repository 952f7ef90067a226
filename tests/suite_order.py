"""Which test files start first under xdist: the longest, so that none starts last and runs alone.

`make pytest` runs `--dist loadfile --no-loadscope-reorder`: each file goes whole to one worker,
in collection order (xdist's default order, most tests first, would start a 60 s file with one
test last). tests/conftest.py sorts the collection so these files come first, in this order; the
other files keep pytest's order behind them. The list is a measurement (the suite's per-file
durations on the 2-core development machine, longest first): a file missing from it only starts
later, and tests/test_suite_markers.py checks that every file named here exists.
"""

from __future__ import annotations

SLOWEST_FIRST: tuple[str, ...] = (
    "tests/github/test_action_first_pr.py",
    "tests/harness/test_harness_worker_rounds.py",
    "tests/test_document_properties.py",
    "tests/bisect/test_bisect_planted.py",
    "tests/github/test_action_run_step.py",
    "tests/github/test_action_scripts.py",
    "tests/github/test_action_fork.py",
    "tests/test_packaging.py",
    "tests/harness/test_harness_allocations.py",
    "tests/github/test_action_policy.py",
    "tests/test_calibrate.py",
    "tests/harness/test_harness_runner.py",
    "tests/test_deployment.py",
    "tests/bisect/test_bisect_cli.py",
    "tests/api/test_api_schemathesis.py",
    "tests/test_policy.py",
)


def file_rank(nodeid: str) -> int:
    """Where a test's file starts: its place in SLOWEST_FIRST, else after all of them."""
    path = nodeid.split("::", 1)[0]
    try:
        return SLOWEST_FIRST.index(path)
    except ValueError:
        return len(SLOWEST_FIRST)
