"""The comparator evaluation's sides: what a recorded pair hands the comparator."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy.stats import binom

import eval_comparator as ec
import interval_coverage
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


def test_a_pair_names_the_jobs_it_measured() -> None:
    source = ec.RecordedSource(find("threads1"))
    placements = source.placements(ONE)
    for index in (0, 7):
        _, base, head = placements[index].indices(ONE)
        pair = source.pair(ONE, index, pairs=len(placements), seed=0)
        assert pair.jobs == (str(base[0]), str(head[0])) and base[0] < head[0]
    # Two pairs on one head round share it, whatever their bases.
    heads = [source.pair(ONE, i, pairs=len(placements), seed=0).jobs[1] for i in range(30)]
    assert len(set(heads)) < len(heads)


def test_other_settings_and_one_round_sets_keep_single_round_documents() -> None:
    three = ec.RecordedSource(find("rounds3"))
    assert not three.whole_jobs(ALTERNATING) and not three.whole_jobs(ONE)
    alternating = three.pair(ALTERNATING, 0, pairs=1, seed=0)
    assert len(alternating.base) == len(alternating.head) == 3
    one = ec.RecordedSource(find("threads1"))
    assert not one.whole_jobs(SEQUENTIAL)
    assert len(one.placements(SEQUENTIAL)) > len(one.jobs)  # any three consecutive jobs
    assert len(one.pair(SEQUENTIAL, 0, pairs=1, seed=0).base) == 3


def test_alternating_rounds_with_history_alternate_after_24_runs_of_their_own() -> None:
    # A pull request's default with a store: the comparator must see alternated sides (their
    # rounds interleaved in time) and the 24 earlier rounds as separate runs of the base branch.
    setting = ec.RUN_SETTINGS["3alt+hist"]
    for source in (
        ec.SimSource("gauss-3", m=13, seed=0, max_gap=8),
        ec.RecordedSource(find("interleaved")),
    ):
        pair = source.pair(setting, 0, pairs=1, seed=0)
        assert len(pair.history) == 24 and len(pair.base) == len(pair.head) == 3
        starts = sorted(
            [(d.run.started_at, "base") for d in pair.base]
            + [(d.run.started_at, "head") for d in pair.head]
        )
        assert [side for _, side in starts] == ["base", "head"] * 3
        last = pair.history[-1].started_at
        assert last is not None and last < starts[0][0]


def test_history_of_three_round_runs_reads_the_same_rounds_as_jobs_of_three() -> None:
    # CI keeps main's runs as jobs of `--rounds 3`: the setting draws the pairs of the one with
    # 24 single-round runs and pools each three consecutive rounds into a run, its median that
    # of their samples, as the store keeps it.
    single, jobs = ec.RUN_SETTINGS["3alt+hist"], ec.RUN_SETTINGS["3alt+hist3"]
    for source in (
        ec.SimSource("gauss-3", m=13, seed=0, max_gap=8),
        ec.RecordedSource(find("interleaved")),
    ):
        one = source.pair(single, 1, pairs=4, seed=0)
        three = source.pair(jobs, 1, pairs=4, seed=0)
        assert [d.model_dump() for d in three.base] == [d.model_dump() for d in one.base]
        assert [d.model_dump() for d in three.head] == [d.model_dump() for d in one.head]
        assert len(three.history) == 8 and {run.rounds for run in three.history} == {3}
        assert [run.started_at for run in three.history] == [
            run.started_at for run in one.history[::3]
        ]
        for k, run in enumerate(three.history):
            parts = one.history[3 * k : 3 * k + 3]
            for key, median in run.medians.items():
                # A pooled median lies between its rounds' own (up to their sampling).
                values = [p.medians[key] for p in parts]
                assert min(values) * 0.99 <= median <= max(values) * 1.01, (key, values)


@pytest.mark.parametrize(
    ("short", "runs_since", "share"), [("1+step", (6, 18), 1.0), ("1+late", (2, 6), 1 / 3)]
)
def test_a_step_in_history_sits_where_its_setting_puts_it(
    short: str, runs_since: tuple[int, int], share: float
) -> None:
    setting = next(s for s in ec.SETTINGS if s.short == short)
    keys = [(f"b{j}", "time") for j in range(300)]
    medians = [dict.fromkeys(keys, 1.0) for _ in range(24)]
    started = [datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(hours=i) for i in range(24)]
    history = ec._history(medians, setting, np.random.default_rng(0), started)
    stepped = 0
    for key in keys:
        values = np.array([run.medians[key] for run in history])
        if np.all(values == 1.0):
            continue
        stepped += 1
        moved = np.flatnonzero(values != 1.0)
        # The level before the step, ±30%, up to a run `runs_since` before history's end.
        assert moved[0] == 0 and np.all(np.diff(moved) == 1)
        assert runs_since[0] <= 24 - moved.size <= runs_since[1]
        assert values[0] == pytest.approx(1.3) or values[0] == pytest.approx(1 / 1.3)
    assert binom(len(keys), share).ppf(0.001) <= stepped <= binom(len(keys), share).ppf(0.999)


def test_steps_left_out_keep_the_pairs_and_drop_only_the_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ec, "RUN_SETTINGS", dict(ec.RUN_SETTINGS))
    stepped = ec.RUN_SETTINGS["1+late"]
    ec._leave_out_steps()
    flat = ec.RUN_SETTINGS["1+late"]
    assert flat.step == 0.0 and flat.name == f"{stepped.name}, steps left out"
    assert ec.RUN_SETTINGS["1+hist"] is next(s for s in ec.SETTINGS if s.short == "1+hist")
    assert flat in ec._known_settings()
    for source in (
        ec.SimSource("gauss-1", m=13, seed=0, max_gap=8),
        ec.RecordedSource(find("pinned")),
    ):
        with_step = source.pair(stepped, 3, pairs=10, seed=0)
        without = source.pair(flat, 3, pairs=10, seed=0)
        assert _medians(with_step.head) == _medians(without.head)
        assert _medians(with_step.base) == _medians(without.base)
        moved = [
            key
            for key in without.history[0].medians
            if any(
                a.medians[key] != b.medians[key]
                for a, b in zip(with_step.history, without.history, strict=True)
            )
        ]
        # A third of the metrics moved, each by the step alone (±30% before it).
        assert 0 < len(moved) < len(without.history[0].medians)
        for key in moved:
            ratios = {
                round(a.medians[key] / b.medians[key], 6)
                for a, b in zip(with_step.history, without.history, strict=True)
            }
            assert ratios <= {1.0, round(1.3, 6), round(1 / 1.3, 6)} and len(ratios) == 2


def _medians(documents: list[Any]) -> list[dict[tuple[str, str], float]]:
    return [ec._medians(d) for d in documents]


def test_false_alarm_interval_is_the_exact_binomial_one() -> None:
    # 0 of 100: the upper bound has the closed form 1 - 0.025^(1/100), 3.62%.
    low, high = ec.rate_interval(0, 100)
    assert low == 0.0 and abs(high - (1 - 0.025 ** (1 / 100))) < 1e-9
    # By definition: at the upper bound, 3 or fewer of 260 has probability 2.5%; at the lower
    # one, 3 or more has.
    low, high = ec.rate_interval(3, 260)
    assert abs(binom.cdf(3, 260, high) - 0.025) < 1e-6
    assert abs(binom.sf(2, 260, low) - 0.025) < 1e-6
    assert low < 3 / 260 < high
    assert ec.rate_interval(5, 5)[1] == 1.0


def test_false_alarms_pool_per_setting_and_kind() -> None:
    def row(data: str, kind: str, setting: str, alarms: int, results: int) -> dict[str, object]:
        return {
            "data": data,
            "kind": kind,
            "setting": setting,
            "pairs": 20,
            "aa_alarms": alarms,
            "aa_results": results,
        }

    pools = ec.pooled(
        [
            row("gauss-3", "simulated", "1 round", 2, 260),
            row("mixed", "simulated", "1 round", 4, 260),
            row("modes-p0.1-2x", "simulated", "1 round", 30, 260),
            row("avx512", "recorded", "1 round", 1, 156),
            row("gauss-3", "simulated", "3 rounds sequential", 0, 260),
        ]
    )
    by = {(p["setting"], p["kind"]): p for p in pools}
    assert by[("1 round", "simulated")]["alarms"] == 6
    assert by[("1 round", "simulated")]["results"] == 520
    assert by[("1 round", "simulated, process modes")]["alarms"] == 30
    assert by[("1 round", "recorded")]["rows"] == 1
    assert by[("3 rounds sequential", "simulated")]["false_alarms"] == 0.0
    low, high = by[("1 round", "simulated")]["false_alarms_ci"]
    assert low < 6 / 520 < high


def test_gate_failures_pool_per_setting_only_where_every_row_counted_them() -> None:
    def row(data: str, gate: int | None) -> dict[str, object]:
        out: dict[str, object] = {
            "data": data,
            "kind": "recorded",
            "setting": "1 round",
            "pairs": 12,
            "aa_alarms": 1,
            "aa_results": 156,
        }
        if gate is not None:
            out["aa_gate_fails"], out["aa_suite_changed"] = gate, 0
        return out

    (counted,) = ec.pooled([row("pinned", 2), row("avx512", 1)])
    assert (counted["gate_fails"], counted["pairs"]) == (3, 24)
    low, high = counted["gate_fails_ci"]
    assert low < 3 / 24 < high
    assert _gate_line([counted]).endswith("| 3 / 24 = 12.5% (2.7%–32.4%) |")
    # A file written before the gate was counted pools its alarms and shows no gate figure.
    (older,) = ec.pooled([row("pinned", 2), row("avx512", None)])
    assert "gate_fails" not in older
    assert _gate_line([older]) == "| 1 round | – | – | – |"


def _gate_line(pools: list[dict[str, object]]) -> str:
    """The "1 round" line of `render_pooled_by_kind`'s gate table."""
    tables = ec.render_pooled_by_kind(pools)
    gate = tables[tables.index("**A/A pairs whose gate failed") :]
    return next(line for line in gate.splitlines() if line.startswith("| 1 round |"))


# Four pairs that took one disturbed head job (job 99), two alarms each.
_SHARED = dict.fromkeys((3, 11, 20, 33), 2)
_ONE_HEAD = dict.fromkeys(_SHARED, 99)


def _outcomes(alarms: dict[int, int], head_of: dict[int, int]) -> list[dict[str, object]]:
    """40 pairs of 13 A/A results, pair i between jobs i and i + 1 unless `head_of` says."""
    return [
        {
            "aa_alarms": alarms.get(i, 0),
            "aa_results": 13,
            "base_job": str(i),
            "head_job": str(head_of.get(i, i + 1)),
        }
        for i in range(40)
    ]


def _clustered(outcomes: list[dict[str, object]]) -> tuple[float, float]:
    sums = ec.job_cluster_sums(outcomes)
    return ec.clustered_interval(8, 520, [sums])


def test_the_clustered_interval_counts_a_shared_job_once() -> None:
    exact = ec.rate_interval(8, 520)
    # Eight alarms in eight pairs of their own jobs: as wide as the exact interval.
    spread = _clustered(_outcomes(dict.fromkeys(range(0, 40, 5), 1), {}))
    assert spread == pytest.approx(exact, rel=1e-9)
    # The same eight from one disturbed head job that four pairs took: one event, not eight.
    low, high = _clustered(_outcomes(_SHARED, _ONE_HEAD))
    assert low < exact[0] and high > 1.5 * exact[1]
    assert low < 8 / 520 < high


def test_the_pool_of_rows_with_cluster_sums_is_clustered_too() -> None:
    def row(data: str, alarms: dict[int, int], head_of: dict[int, int]) -> dict[str, object]:
        outcomes = _outcomes(alarms, head_of)
        sums = ec.job_cluster_sums(outcomes)
        count = sum(alarms.values())
        return {
            "data": data,
            "kind": "recorded",
            "setting": "1 round",
            "pairs": 40,
            "aa_alarms": count,
            "aa_results": 520,
            "aa_cluster_sums": sums,
        }

    (pool,) = ec.pooled([row("pinned", _SHARED, _ONE_HEAD), row("avx512", {}, {})])
    low, high = pool["false_alarms_ci_clustered"]
    exact = pool["false_alarms_ci"]
    assert low < 8 / 1040 < high and high > 1.5 * exact[1]
    assert f"by job {low:.2%}–{high:.2%}" in ec.render_pooled_by_kind([pool])


def test_the_saved_pools_show_both_intervals_and_the_rows_over_target() -> None:
    outcomes = _outcomes(_SHARED, _ONE_HEAD)
    row: dict[str, object] = {
        "data": "pinned",
        "kind": "recorded",
        "setting": "1 round + 24 history",
        "pairs": 40,
        "errors": 0,
        "aa_alarms": 8,
        "aa_results": 520,
        "false_alarms": 8 / 520,
        "false_alarms_ci": ec.rate_interval(8, 520),
        "aa_cluster_sums": ec.job_cluster_sums(outcomes),
        "vs_oracle": None,
        "suite_fails": 1.0,
        "suite_untouched_changed": 0,
    }
    row["false_alarms_ci_clustered"] = ec.clustered_interval(8, 520, [row["aa_cluster_sums"]])
    tables = ec.render_pooled_by_kind(ec.pooled([row]))
    assert "| 1 round + 24 history | – | – | 8 / 520 = 1.54% (0.67%–3.01%; by job" in tables
    (line,) = ec.over_target([row])
    assert line.startswith("- pinned / 1 round + 24 history: false alarms 1.5% > 1% (8 of 520")
    assert "clustered by job" in line
    assert ec.over_target([{**row, "aa_alarms": 5, "false_alarms": 5 / 520}]) == []


def test_the_clustered_interval_covers_where_shared_jobs_fool_the_exact_one() -> None:
    independent, _, shared, rare = (
        interval_coverage.coverage(scenario, sets=400, seed=1)
        for scenario in interval_coverage.SCENARIOS
    )
    # Alarms of their own: both cover, as the exact interval is built to.
    assert min(independent.exact, independent.clustered) >= 0.95
    # Two benchmarks disturbed in 10% of the rounds, counted by every pair that took the round:
    # the exact interval covers about 80% of the time, the clustered one about 95%.
    assert shared.exact < 0.88 and shared.clustered > 0.92
    # Rare disturbances: better, still short (a set whose pairs took none cannot show them).
    assert rare.exact < rare.clustered < 0.8


class _MachineMoves(ec.Source):
    """A/A sequences where a shared machine speed moves every benchmark 5% a round."""

    name, kind = "machine-moves", "simulated"

    def __init__(self) -> None:
        self.keys = tuple(f"b{j}" for j in range(13))
        self.steady = np.zeros(13, dtype=bool)

    def aa_logs(self, setting: ec.Setting, *, seed: int, draws: int) -> np.ndarray:
        rng = np.random.default_rng(seed)
        width = setting.history + len(setting.base) + len(setting.head)
        machine = rng.normal(0.0, 0.05, (draws, width, 1))
        return machine + rng.normal(0.0, 0.002, (draws, width, 13))


def test_the_bound_with_nothing_subtracted_pays_for_the_machine() -> None:
    # Relative to the suite the benchmarks are quiet: +10% is always within reach. On the raw
    # ratio, which is all a rule that never subtracts the shared shift can judge, the machine's
    # 5% a round hides it.
    bound = ec.oracle(_MachineMoves(), SEQUENTIAL, seed=0, draws=2000)
    assert bound["contract_0.1"] > 0.95
    assert bound["contract_raw_0.1"] < 0.3


def test_the_table_of_saved_files_lists_their_rows_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    saved = Path(__file__).parents[1] / "bench" / "data" / "eval"
    paths = []
    for name in ("sim100.json", "recorded40.json"):
        rows = json.loads((saved / name).read_text())["rows"][:2]
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps({"rows": rows}))
    ec.print_table(paths)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| data | setting | pairs | false alarms |")
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| gauss-0.5",
        "| gauss-0.5",
        "| avx512",
        "| avx512",
    ]
