"""Calibration records: stored and read on SQLite and PostgreSQL, and `perfgate calibrate`."""

from __future__ import annotations

import json
import math
import tarfile
import textwrap
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.cli.calibrate import render, spread_percent
from perfgate.errors import InputError, NotFoundError
from perfgate.results import ResultsDocument, parse_document
from perfgate.stats.calibration import Calibration, MetricNoise, calibrate
from perfgate.store import row_writes, run_lookup
from perfgate.store.calibrations import (
    calibrations_of,
    latest_calibration,
    latest_calibrations,
    save_calibration,
    store_calibration,
)
from perfgate.store.connect import Store, open_store
from synthetic import synthetic_document

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "bench" / "data" / "comparator" / "interleaved-rounds3.tar.xz"
COMMIT = "c" * 40
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def rounds_data(
    *,
    rounds: int = 4,
    seed: int = 0,
    commit: str = COMMIT,
    project: str = "acme/models",
    fingerprint: str = "runner-a",
    started_at: datetime = T0,
    levels: dict[int, list[float]] | None = None,
) -> dict[str, Any]:
    """A results document of `rounds` rounds of 6 benchmarks, each round at its own median.

    Every round is slower or faster as a whole by a machine factor (2% sd); benchmark i's
    rounds sit at `levels[i][r]` times its speed when given.
    """
    data = synthetic_document(
        benchmarks=6, samples=1, seed=seed, commit=commit, project=project, started_at=started_at
    )
    data["environment"]["fingerprint"] = fingerprint
    rng = np.random.default_rng(seed)
    machine = rng.normal(0.0, 0.02, rounds)
    for index, bench in enumerate(data["benchmarks"]):
        base = 1e-4 * (1 + index)
        samples: list[float] = []
        for r in range(rounds):
            level = (levels or {}).get(index, [1.0] * rounds)[r]
            median = base * level * math.exp(machine[r] + rng.normal(0.0, 0.01))
            samples += (median * rng.lognormal(0.0, 0.005, 8)).tolist()
        bench["metrics"]["time"]["samples"] = samples
        bench["metrics"]["time"]["rounds"] = [8] * rounds
    return data


def rounds_document(**kwargs: Any) -> ResultsDocument:
    return parse_document(rounds_data(**kwargs))


def invoke(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def write(path: Path, data: dict[str, Any]) -> Path:
    path.write_text(json.dumps(data))
    return path


# The store, on both backends.


def test_a_saved_record_reads_back_equal(store: Store) -> None:
    record = calibrate([rounds_document(rounds=8)])
    with store.sessions() as session, session.begin():
        project_id = row_writes.ensure_project(session, name=record.project)
        save_calibration(session, project_id=project_id, calibration=record)
    with store.sessions() as session:
        back = latest_calibration(session, project_id=project_id, fingerprint="runner-a")
        assert latest_calibration(session, project_id=project_id, fingerprint="runner-b") is None
    assert back == record
    assert back is not None and back.started_at.tzinfo is not None
    assert set(back.metrics) == {(b.key, "time") for b in rounds_document().benchmarks}


def test_latest_is_the_newest_by_start_per_runner(store: Store) -> None:
    older = calibrate([rounds_document(seed=1, started_at=T0)])
    newer = calibrate([rounds_document(seed=2, started_at=T0 + timedelta(days=3))])
    other = calibrate(
        [rounds_document(seed=3, fingerprint="runner-b", started_at=T0 + timedelta(1))]
    )
    with store.sessions() as session, session.begin():
        project_id = row_writes.ensure_project(session, name="acme/models")
        # Stored out of order: the newest start wins, not the newest row.
        for record in (newer, other, older):
            save_calibration(session, project_id=project_id, calibration=record)
    with store.sessions() as session:
        assert latest_calibration(session, project_id=project_id, fingerprint="runner-a") == newer
        assert latest_calibration(session, project_id=project_id, fingerprint="runner-b") == other
        assert calibrations_of(session, project_id=project_id) == [newer, other, older]
        other_project = row_writes.ensure_project(session, name="acme/other")
        assert calibrations_of(session, project_id=other_project) == []


def test_save_never_commits(store: Store) -> None:
    record = calibrate([rounds_document()])
    with store.sessions() as session:
        project_id = row_writes.ensure_project(session, name=record.project)
        save_calibration(session, project_id=project_id, calibration=record)
        session.rollback()
    with store.sessions() as session:
        assert row_writes.count_rows(session)["calibrations"] == 0


def test_storing_creates_the_project_and_the_same_record_once(store: Store) -> None:
    record = calibrate([rounds_document(project="new/project")])
    first = store_calibration(store.sessions, record)
    again = store_calibration(store.sessions, record)
    assert first.created and not again.created
    assert first.record_id == again.record_id
    assert (first.project, first.fingerprint) == ("new/project", "runner-a")
    with store.sessions() as session:
        counts = row_writes.count_rows(session)
    assert (counts["calibrations"], counts["projects"]) == (1, 1)
    assert latest_calibrations(store.sessions, project=None) == [record]


def test_latest_calibrations_per_runner_and_by_prefix(store: Store) -> None:
    a_old = calibrate([rounds_document(seed=1, fingerprint="aaaa11")])
    a_new = calibrate([rounds_document(seed=2, fingerprint="aaaa11", started_at=T0 + timedelta(1))])
    b = calibrate([rounds_document(seed=3, fingerprint="bbbb22")])
    for record in (a_old, a_new, b):
        store_calibration(store.sessions, record)
    assert latest_calibrations(store.sessions, project="acme/models") == [a_new, b]
    assert latest_calibrations(store.sessions, project=None, fingerprint="bbbb") == [b]
    with pytest.raises(NotFoundError, match="no calibration record for project acme/models"):
        latest_calibrations(store.sessions, project=None, fingerprint="cccc")
    with pytest.raises(NotFoundError, match=r"project acme/none \(run perfgate calibrate PATHS\)"):
        latest_calibrations(store.sessions, project="acme/none")
    store_calibration(store.sessions, calibrate([rounds_document(project="acme/other")]))
    with pytest.raises(InputError, match=r"several projects.*pass --project"):
        latest_calibrations(store.sessions, project=None)


def test_an_empty_store_has_no_record(store: Store) -> None:
    with pytest.raises(NotFoundError, match="no calibration record in the store"):
        latest_calibrations(store.sessions, project=None)


# The command line.


def recorded_jobs(folder: Path, *names: str) -> list[Path]:
    """Jobs of a recorded set (three rounds each) as files, as a user would have them."""
    with tarfile.open(RECORDED, "r:xz") as tar:
        tar.extractall(folder, members=[tar.getmember(n) for n in names], filter="data")
    return [folder / n for n in names]


def test_from_recorded_runs_stores_prints_and_writes(db_url: str, tmp_path: Path) -> None:
    runs = recorded_jobs(tmp_path, "run-000.json", "run-001.json")
    out = tmp_path / "records" / "calibration.json"
    result = invoke("calibrate", "--from", *map(str, runs), "--db", db_url, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "6 rounds of commit eeeeeeeeeeee" in result.stdout
    assert "machine factor:" in result.stdout
    assert "tails: " in result.stdout
    assert "stored the calibration record of perfgate/examples" in result.stderr
    rows = {line.split()[0] for line in result.stdout.splitlines()[5:]}
    assert "matmul[dtype=float32,n=128]" in rows and "softmax[cols=1024,rows=1024]" in rows
    written = Calibration.from_json(json.loads(out.read_text()))
    assert written.rounds == 6 and written.project == "perfgate/examples"
    with open_store(db_url) as store, store.sessions() as session:
        project = run_lookup.resolve_project(session, name="perfgate/examples").id
        stored = latest_calibration(session, project_id=project, fingerprint=written.fingerprint)
    assert stored == written
    again = invoke("calibrate", "--from", *map(str, runs), "--db", db_url)
    assert again.exit_code == 0, again.output
    assert "already stored; nothing to do" in again.stderr


def test_from_a_folder_shows_speed_levels(db_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    # Benchmark 0 lands in one of two speeds per process, 1.3x apart; the others in one.
    bimodal = [1.0, 1.3, 1.0, 1.0, 1.3, 1.3, 1.0, 1.3]
    first = rounds_data(rounds=4, seed=11, levels={0: bimodal[:4]})
    second = rounds_data(rounds=4, seed=12, levels={0: bimodal[4:]}, started_at=T0 + timedelta(1))
    write(folder / "a.json", first)
    write(folder / "b.json", second)
    result = invoke("calibrate", "--from", str(folder), "--db", db_url)
    assert result.exit_code == 0, result.output
    key = first["benchmarks"][0]["key"]
    (row,) = [line for line in result.stdout.splitlines() if line.startswith(key + " ")]
    low, high = row.split()[-2:]
    assert low == "1.00x," and high.endswith("x") and 1.25 < float(high[:-1]) < 1.35, row
    others = [line for line in result.stdout.splitlines() if line.startswith("kernel[")]
    assert len(others) == 6 and sum(line.endswith("x") for line in others) == 1
    # The spread is measured inside the levels: 1% per round, not the 13% of two speeds.
    spread = float(row.split()[2].rstrip("%"))
    assert 0.2 < spread < 3.0, row


def test_show_table_and_json(db_url: str, tmp_path: Path) -> None:
    for seed, runner in ((1, "aaaa11"), (2, "bbbb22")):
        doc = write(tmp_path / f"{runner}.json", rounds_data(seed=seed, fingerprint=runner))
        assert invoke("calibrate", "--from", str(doc), "--db", db_url).exit_code == 0
    table = invoke("calibrate", "--show", "--db", db_url)
    assert table.exit_code == 0, table.output
    assert "on runner aaaa11: 4 rounds" in table.stdout
    assert "on runner bbbb22: 4 rounds" in table.stdout
    assert "benchmark" in table.stdout and "spread" in table.stdout
    shown = invoke(
        "calibrate", "--show", "--db", db_url, "--format", "json", "--project", "acme/models"
    )
    assert shown.exit_code == 0, shown.output
    records = [Calibration.from_json(item) for item in json.loads(shown.stdout)]
    assert sorted(r.fingerprint for r in records) == ["aaaa11", "bbbb22"]
    one = invoke("calibrate", "--show", "--db", db_url, "--fingerprint", "bbbb", "--format", "json")
    assert [item["fingerprint"] for item in json.loads(one.stdout)] == ["bbbb22"]
    expected = calibrate([rounds_document(seed=2, fingerprint="bbbb22")])
    assert Calibration.from_json(json.loads(one.stdout)[0]) == expected


def test_render_gives_spread_df_and_levels() -> None:
    record = Calibration(
        project="acme/models",
        fingerprint="f" * 64,
        commit=COMMIT,
        started_at=T0,
        rounds=10,
        machine_sigma=math.log(1.02),
        machine_df=9,
        metrics={
            ("mm[n=1]", "time"): MetricNoise(sigma=math.log(1.015), df=9),
            ("chain", "time"): MetricNoise(sigma=0.01, df=8, levels=(0.0, math.log(1.31))),
        },
    )
    text = render(record)
    assert text.splitlines()[:3] == [
        "calibration of acme/models on runner ffffffffffff: 10 rounds of commit cccccccccccc "
        "from 2026-03-01 00:00 UTC",
        "machine factor: 2.00% round to round (df 9)",
        "tails: not measured (under 40 values); comparisons assume none unless the base "
        "branch's history measures them",
    ]
    assert text.splitlines()[4].split() == ["benchmark", "metric", "spread", "df", "levels"]
    assert text.splitlines()[5].split() == ["chain", "time", "1.01%", "8", "1.00x,", "1.31x"]
    assert text.splitlines()[6].split() == ["mm[n=1]", "time", "1.50%", "9"]
    heavy = render(replace(record, tail_df=1.5)).splitlines()[2]
    assert heavy.startswith("tails: Student-t with 1.5 df; unless the base branch's history")
    assert "no more degrees of freedom than 3 (a weight the runner shares stops there)" in heavy
    light = render(replace(record, tail_df=8.0)).splitlines()[2]
    assert "no more degrees of freedom than that (lower:" in light
    assert spread_percent(0.0) == "0.00%"


def test_no_record_exits_2_with_one_line(db_url: str, tmp_path: Path) -> None:
    result = invoke("calibrate", "--show", "--project", "acme/models", "--db", db_url)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no calibration record for project acme/models (run perfgate calibrate PATHS)\n"
    )
    # A missing embedded store is not created just to say so.
    missing = tmp_path / "nothing" / "perfgate.db"
    result = invoke("calibrate", "--show", "--db", f"sqlite:///{missing}")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no calibration record in the store (run perfgate calibrate PATHS)\n"
    )
    assert not missing.exists()


def test_mixed_commits_are_refused(db_url: str, tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", rounds_data(seed=1))
    b = write(tmp_path / "b.json", rounds_data(seed=2, commit="d" * 40))
    result = invoke("calibrate", "--from", str(a), str(b), "--db", db_url)
    assert result.exit_code == 2
    assert "must all be one commit" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    c = write(tmp_path / "c.json", rounds_data(seed=3, fingerprint="runner-b"))
    result = invoke("calibrate", "--from", str(a), str(c), "--db", db_url)
    assert result.exit_code == 2 and "one runner" in result.stderr


def test_too_few_rounds_are_refused(db_url: str, tmp_path: Path) -> None:
    (job,) = recorded_jobs(tmp_path, "run-000.json")
    result = invoke("calibrate", "--from", str(job), "--db", db_url)
    assert result.exit_code == 2
    assert result.stderr == (
        "error: calibration needs at least 4 rounds of the suite; these runs hold 3\n"
    )
    with open_store(db_url) as store, store.sessions() as session:
        assert row_writes.count_rows(session)["calibrations"] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--show", "x.json"], "--show takes no PATHS"),
        (["--show", "--from"], "--from: --show reads the store only"),
        (["--show", "--rounds", "5"], "--rounds: --show reads the store only"),
        (["--from"], "--from needs PATHS"),
        (["--from", "x.json", "--device", "cpu"], "--device: --from builds the record"),
        (["--fingerprint", "ab", "benchmarks"], "--fingerprint goes with --show"),
        # Refused before the suite runs for minutes, not after.
        (["--rounds", "3", "benchmarks"], "--rounds 3: a calibration needs at least 4 rounds"),
    ],
)
def test_bad_usage_is_one_line_exit_2(args: list[str], message: str, tmp_path: Path) -> None:
    result = invoke("calibrate", *args, "--db", f"sqlite:///{tmp_path}/p.db")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_the_same_run_twice_is_not_two_runs(tmp_path: Path) -> None:
    doc = write(tmp_path / "a.json", rounds_data())
    copy = write(tmp_path / "copy.json", rounds_data())
    result = invoke("calibrate", "--from", str(doc), str(copy), "--db", f"sqlite:///{tmp_path}/p")
    assert result.exit_code == 2 and "each run counts once" in result.stderr


def test_bad_documents_and_folders_exit_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/p.db"
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("calibrate", "--from", str(empty), "--db", url)
    assert result.exit_code == 2 and "holds no results files" in result.stderr
    result = invoke("calibrate", "--from", str(tmp_path / "missing.json"), "--db", url)
    assert result.exit_code == 2 and "cannot read file" in result.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    result = invoke("calibrate", "--from", str(bad), "--db", url)
    assert result.exit_code == 2 and "invalid JSON" in result.stderr


def test_help_names_every_option() -> None:
    result = invoke("calibrate", "--help")
    assert result.exit_code == 0, result.output
    for option in (
        "--rounds",
        "--device",
        "--threads",
        "--max-time",
        "--project",
        "--commit",
        "--db",
        "--out",
        "--from",
        "--show",
        "--fingerprint",
        "--format",
    ):
        assert option in result.stdout


SUITE = """
import torch, perfgate

@perfgate.benchmark(params={"n": [8, 16, 24, 32, 40]})
def add(n, device):
    x = torch.ones(n, device=device)
    return lambda: x + 1
"""


@pytest.mark.slow
def test_a_live_calibration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "bench_tiny.py").write_text(textwrap.dedent(SUITE))
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path}/perfgate.db"
    result = invoke(
        "calibrate",
        "benchmarks",
        "--rounds",
        "4",
        "--max-time",
        "0.05",
        "--device",
        "cpu",
        "--threads",
        "1",
        "--commit",
        COMMIT,
        "--project",
        "acme/tiny",
        "--db",
        url,
        "--format",
        "json",
    )
    assert result.exit_code == 0, result.output
    record = Calibration.from_json(json.loads(result.stdout))
    assert (record.project, record.commit, record.rounds) == ("acme/tiny", COMMIT, 4)
    assert {key for key, metric in record.metrics if metric == "time"} == {
        f"add[n={n}]" for n in (8, 16, 24, 32, 40)
    }
    # The rounds are kept for --from, and rebuild the same record.
    (kept,) = (tmp_path / ".perfgate" / "calibration").glob("*.json")
    assert calibrate([parse_document(json.loads(kept.read_text()))]) == record
    shown = invoke("calibrate", "--show", "--db", url, "--format", "json")
    assert [Calibration.from_json(item) for item in json.loads(shown.stdout)] == [record]
