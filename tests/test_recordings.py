"""The recorded datasets the comparator evaluation reads: intact, and valid results@1 documents."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

import recordings  # bench/ is on pytest's pythonpath

SETS = recordings.recordings()


def test_every_archive_is_listed_with_its_sha256() -> None:
    sums = (recordings.RECORDED / recordings.SUMS).read_text().splitlines()
    listed = dict(reversed(line.split("  ", 1)) for line in sums)
    assert sorted(listed) == sorted(r.path.name for r in SETS)
    for rec in SETS:
        assert hashlib.sha256(rec.path.read_bytes()).hexdigest() == listed[rec.path.name]


@pytest.mark.parametrize("rec", SETS, ids=[r.name for r in SETS])
def test_every_job_is_a_valid_document_of_one_suite(rec: recordings.Recording) -> None:
    jobs = list(rec.jobs())
    assert len(jobs) >= 7
    keys = {tuple(sorted(b.key for b in job.benchmarks)) for job in jobs}
    assert len(keys) == 1, "every job of a set runs the same benchmarks"
    assert len({job.run.commit for job in jobs}) == 1, "identical code: one commit"


def test_packing_is_reproducible(tmp_path: Path) -> None:
    rec = recordings.find("rounds3")
    folder = tmp_path / "rounds3"
    for name, data in rec.members.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    out = tmp_path / "out"
    out.mkdir()
    assert recordings.pack(folder, out).read_bytes() == rec.path.read_bytes()
    assert (out / recordings.SUMS).read_text().split()[0] == recordings.sha256(rec.path)


def test_job_spreads_separate_the_machine_from_each_benchmarks_own_movement() -> None:
    # 400 jobs of 13 benchmarks: each moves 2-8% on its own, the machine 3% under all of them.
    rng = np.random.default_rng(7)
    own = np.linspace(0.02, 0.08, 13)
    logs = rng.normal(0.0, 0.03, (400, 1)) + rng.normal(0.0, 1.0, (400, 13)) * own
    spreads = recordings.job_spreads(logs)
    assert spreads.benchmarks == pytest.approx(own, rel=0.15)
    assert spreads.machine == pytest.approx(0.03, rel=0.15)
    # No machine at all: the factors' spread is the median's own sampling error, taken out.
    quiet = recordings.job_spreads(rng.normal(0.0, 0.05, (400, 13)))
    assert quiet.machine < 0.01
