"""The comparator evaluation's sides: what a recorded pair hands the comparator."""

from __future__ import annotations

import eval_comparator as ec
from recordings import find

SEQUENTIAL, ALTERNATING, ONE = (
    next(s for s in ec.SETTINGS if s.short == short) for short in ("3seq", "3alt", "1")
)


def test_three_sequential_rounds_on_a_three_round_set_are_whole_jobs() -> None:
    source = ec.RecordedSource(find("rounds3"))
    assert len(source.rounds) == 3 * len(source.jobs)
    assert source.whole_jobs(SEQUENTIAL)
    placements = source.placements(SEQUENTIAL)
    # Every pair of jobs, base before head: 7 jobs give 21.
    assert len(placements) == 21
    for index in range(len(placements)):
        pair = source.pair(SEQUENTIAL, index, pairs=len(placements), seed=0)
        # One document a side, holding its job's three rounds, as `perfgate run --rounds 3`
        # wrote it: the comparator sees one job of three rounds, not three jobs.
        assert len(pair.base) == len(pair.head) == 1
        for side in (pair.base[0], pair.head[0]):
            time = side.benchmarks[0].metrics["time"]
            assert time.rounds is not None and len(time.rounds) == 3
        assert pair.base[0].run.started_at < pair.head[0].run.started_at


def test_other_settings_and_one_round_sets_keep_single_round_documents() -> None:
    three = ec.RecordedSource(find("rounds3"))
    assert not three.whole_jobs(ALTERNATING) and not three.whole_jobs(ONE)
    alternating = three.pair(ALTERNATING, 0, pairs=1, seed=0)
    assert len(alternating.base) == len(alternating.head) == 3
    one = ec.RecordedSource(find("threads1"))
    assert not one.whole_jobs(SEQUENTIAL)
    assert len(one.placements(SEQUENTIAL)) > len(one.jobs)  # any three consecutive jobs
    assert len(one.pair(SEQUENTIAL, 0, pairs=1, seed=0).base) == 3
