"""`perfgate compare` end to end: files and store refs, outputs, exit codes, golden markdown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from perfgate.cli import cli
from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.noise import PastRun
from perfgate.store.connect import Store, open_store
from perfgate.store.run_lookup import history_medians, resolve_project
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

GOLDEN = Path(__file__).parent / "golden"
SLOW_KEY = "kernel[n=128,variant=0]"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def _pair(seed: int = 1, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    base = synthetic_document(benchmarks=20, samples=40, seed=seed, commit="a" * 40)
    head = synthetic_document(
        benchmarks=20,
        samples=40,
        seed=seed + 1,
        commit="b" * 40,
        branch="feature",
        slowdown={SLOW_KEY: 2.5},
        **kw,
    )
    head["benchmarks"][1]["profile"]["ops"].append(
        {"op": "aten::clone", "count": 1, "self_cpu_us": 40.0, "self_device_us": 0.0, "flops": 0.0}
    )
    return base, head


def _files(tmp_path: Path) -> tuple[str, str]:
    base, head = _pair()
    (tmp_path / "base.json").write_text(json.dumps(base))
    (tmp_path / "head.json").write_text(json.dumps(head))
    return str(tmp_path / "base.json"), str(tmp_path / "head.json")


def test_files_json_output_follows_design(tmp_path: Path) -> None:
    base, head = _files(tmp_path)
    nowhere = f"sqlite:///{tmp_path}/absent.db"
    result = invoke("compare", base, head, "--format", "json", "--db", nowhere)
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "absent.db").exists()  # comparing two files creates no store
    data = json.loads(result.stdout)
    assert data["schema"] == "perfgate/comparison@1"
    assert data["base"]["commit"] == "a" * 40 and len(data["base"]["runs"]) == 1
    assert data["settings"] == {"alpha": 0.05, "threshold": 0.03}
    assert set(data["summary"]) == {
        "regression",
        "improvement",
        "unchanged",
        "inconclusive",
        "missing",
        "new",
        "error",
    }
    regression = next(r for r in data["results"] if r["verdict"] == "regression")
    expected = {
        "key",
        "benchmark",
        "params",
        "metric",
        "unit",
        "direction",
        "exact",
        "base",
        "head",
        "ratio",
        "ci",
        "p_value",
        "q_value",
        "threshold",
        "verdict",
        "reason",
        "attribution",
    }
    assert expected <= set(regression)
    assert regression["key"] == SLOW_KEY and regression["params"] == {"n": 128, "variant": 0}
    assert {"n", "median", "iqr"} <= set(regression["base"])
    assert regression["attribution"][0] == {
        "op": "aten::clone",
        "base_us": 0.0,
        "head_us": 40.0,
        "delta_us": 40.0,
        "base_count": 0.0,
        "head_count": 1.0,
    }


def test_fail_on_regression_exits_1(tmp_path: Path) -> None:
    base, head = _files(tmp_path)
    nowhere = f"sqlite:///{tmp_path}/absent.db"
    assert invoke("compare", base, head, "--db", nowhere).exit_code == 0
    failing = invoke("compare", base, head, "--fail-on-regression", "--db", nowhere)
    assert failing.exit_code == 1
    assert "1 regression" in failing.stdout
    same = invoke("compare", base, base, "--fail-on-regression", "--db", nowhere)
    assert same.exit_code == 0


def test_out_writes_file(tmp_path: Path) -> None:
    base, head = _files(tmp_path)
    out = tmp_path / "reports" / "c.md"
    result = invoke(
        "compare",
        base,
        head,
        "--format",
        "markdown",
        "--out",
        str(out),
        "--db",
        f"sqlite:///{tmp_path}/absent.db",
    )
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("### ⚠️ 1 regression")


def test_unknown_reference_exits_2(tmp_path: Path) -> None:
    base, _ = _files(tmp_path)
    result = invoke("compare", base, "nope.json", "--db", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2
    assert "store has no runs yet" in result.stderr


def test_store_references(db_url: str) -> None:
    base, head = _pair()
    with open_store(db_url) as store:
        for data in (base, head):
            store_document(store.sessions, parse_document(data))
    by_prefix = invoke("compare", "aaaaaaa", "bbbbbbbb", "--format", "json", "--db", db_url)
    assert by_prefix.exit_code == 0, by_prefix.output
    assert json.loads(by_prefix.stdout)["summary"]["regression"] == 1
    by_branch = invoke("compare", "main", "feature", "--format", "json", "--db", db_url)
    data = json.loads(by_branch.stdout)
    assert data["base"]["label"] == "latest on main" and data["head"]["commit"] == "b" * 40
    fallback = invoke("compare", "c" * 40, "b" * 40, "--format", "json", "--db", db_url)
    assert fallback.exit_code == 0, fallback.output
    warnings = json.loads(fallback.stdout)["warnings"]
    assert any(
        "has no runs in the store" in w and "nearest earlier run of main" in w for w in warnings
    )
    missing = invoke("compare", "main", "nosuchbranch", "--db", db_url)
    assert missing.exit_code == 2 and "neither a results file" in missing.stderr


def test_same_commit_runs_are_pooled_as_rounds(db_url: str) -> None:
    with open_store(db_url) as store:
        for seed in (1, 2):
            store_document(
                store.sessions,
                parse_document(
                    synthetic_document(benchmarks=6, samples=20, seed=seed, commit="a" * 40)
                ),
            )
        store_document(
            store.sessions,
            parse_document(synthetic_document(benchmarks=6, samples=20, seed=3, commit="b" * 40)),
        )
    result = invoke("compare", "a" * 40, "b" * 40, "--format", "json", "--db", db_url)
    data = json.loads(result.stdout)
    assert len(data["base"]["runs"]) == 2
    time = next(r for r in data["results"] if r["metric"] == "time")
    assert time["base"]["n"] == 40 and time["base"]["rounds"] == 2


def test_history_of_the_same_runner_is_evidence(db_url: str) -> None:
    with open_store(db_url) as store:
        for seed in range(1, 9):  # eight earlier main runs, then base and head
            store_document(
                store.sessions,
                parse_document(synthetic_document(benchmarks=8, samples=20, seed=seed)),
            )
        for seed in range(30, 36):  # main runs on another runner class: no evidence here
            other = synthetic_document(benchmarks=8, samples=20, seed=seed)
            other["environment"]["fingerprint"] = "another-runner"
            store_document(store.sessions, parse_document(other))
        store_document(
            store.sessions,
            parse_document(synthetic_document(benchmarks=8, samples=20, seed=20, commit="a" * 40)),
        )
        store_document(
            store.sessions,
            parse_document(
                synthetic_document(
                    benchmarks=8, samples=20, seed=21, commit="b" * 40, branch="feature"
                )
            ),
        )
    data = json.loads(
        invoke("compare", "a" * 40, "b" * 40, "--format", "json", "--db", db_url).stdout
    )
    assert any("noise model: 8 earlier runs of main on this runner" in w for w in data["warnings"])
    time = next(r for r in data["results"] if r["metric"] == "time")
    assert "history of 8 runs" in time["noise"]


def test_history_runs_carry_their_start_times_oldest_first(db_url: str) -> None:
    # The wander is measured as far ahead of history as the head started (docs/comparator.md):
    # that needs each history run's start, in order.
    with open_store(db_url) as store:
        for seed in (3, 1, 2):  # uploaded out of order
            store_document(
                store.sessions,
                parse_document(synthetic_document(benchmarks=4, samples=10, seed=seed)),
            )
        runs = _main_history(store)
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    assert [run.started_at for run in runs] == [start + timedelta(hours=s) for s in (1, 2, 3)]


def test_history_runs_carry_their_rounds(db_url: str) -> None:
    # A run of `perfgate run --rounds 3` pools three processes in each median: its spread and
    # tails are a third of a round's (docs/comparator.md, "The noise model").
    with open_store(db_url) as store:
        for seed, rounds in ((1, None), (2, [4, 4, 4]), (3, [6, 6])):
            document = synthetic_document(benchmarks=3, samples=12, seed=seed)
            if rounds:
                for bench in document["benchmarks"]:
                    bench["metrics"]["time"]["rounds"] = rounds
            store_document(store.sessions, parse_document(document))
        runs = _main_history(store)
    assert [run.rounds for run in runs] == [1, 3, 2]


def _main_history(store: Store) -> list[PastRun]:
    """The store's history of main for its only project, as the comparator reads it."""
    with store.sessions() as session:
        project = resolve_project(session, name=None)
        return history_medians(
            session,
            project_id=project.id,
            branch="main",
            before=datetime(2027, 1, 1, tzinfo=timezone.utc),
        )


def test_the_runners_calibration_is_evidence(db_url: str) -> None:
    from perfgate.stats.calibration import calibrate
    from perfgate.store.calibrations import store_calibration

    rounds = [
        parse_document(synthetic_document(benchmarks=8, samples=20, seed=s, commit="e" * 40))
        for s in range(40, 46)
    ]
    with open_store(db_url) as store:
        store_calibration(store.sessions, calibrate(rounds))
        for seed, commit, branch in ((20, "a", "main"), (21, "b", "feature")):
            store_document(
                store.sessions,
                parse_document(
                    synthetic_document(
                        benchmarks=8, samples=20, seed=seed, commit=commit * 40, branch=branch
                    )
                ),
            )
    data = json.loads(
        invoke("compare", "a" * 40, "b" * 40, "--format", "json", "--db", db_url).stdout
    )
    assert any("calibration of 6 rounds" in w for w in data["warnings"])
    time = next(r for r in data["results"] if r["metric"] == "time")
    assert "calibration of 6 rounds" in time["noise"]


def test_markdown_matches_golden() -> None:
    base, head = _pair()
    comparison = compare_documents([parse_document(base)], [parse_document(head)])
    from perfgate.report.markdown import render_markdown

    rendered = render_markdown(comparison)
    golden = GOLDEN / "comparison.md"
    if os.environ.get("PERFGATE_UPDATE_GOLDEN"):
        golden.write_text(rendered)
    assert rendered == golden.read_text(), "regenerate with PERFGATE_UPDATE_GOLDEN=1 if intended"


def test_markdown_stays_under_the_comment_limit() -> None:
    base = synthetic_document(benchmarks=600, samples=10, seed=1)
    head = synthetic_document(benchmarks=600, samples=10, seed=2)
    comparison = compare_documents([parse_document(base)], [parse_document(head)])
    from perfgate.report.markdown import render_markdown

    rendered = render_markdown(comparison, limit=20_000)
    # Nothing changed: a few lines whatever the suite's size; the unchanged are only counted.
    assert len(rendered) <= 2_048 and len(rendered.splitlines()) <= 15
    assert "Other results: 513 inconclusive (3 shown); 1,287 unchanged" in rendered


def test_round_trip_through_json() -> None:
    from perfgate.report.comparison_document import comparison_from_json, comparison_to_json

    base, head = _pair()
    comparison = compare_documents([parse_document(base)], [parse_document(head)])
    again = comparison_from_json(json.loads(json.dumps(comparison_to_json(comparison))))
    assert again == comparison


def _round_folders(tmp_path: Path) -> tuple[Path, Path]:
    """Three rounds a side in folders, started alternately (base, head, base, ...)."""
    folders = (tmp_path / "base", tmp_path / "head")
    for folder in folders:
        folder.mkdir()
    for round_index in range(3):
        for side, (folder, commit) in enumerate(zip(folders, ("a" * 40, "b" * 40), strict=True)):
            seed = 10 * round_index + side
            document = synthetic_document(
                benchmarks=8,
                samples=20,
                seed=seed,
                commit=commit,
                branch="main" if side == 0 else "feature",
                slowdown={SLOW_KEY: 2.5} if side == 1 else None,
            )
            (folder / f"round-{round_index + 1}.json").write_text(json.dumps(document))
    return folders


def test_folders_are_the_rounds_of_one_commit(tmp_path: Path) -> None:
    base, head = _round_folders(tmp_path)
    result = invoke(
        "compare", str(base), str(head), "--format", "json", "--db", f"sqlite:///{tmp_path}/x.db"
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert len(data["base"]["runs"]) == 3 and len(data["head"]["runs"]) == 3
    time = next(r for r in data["results"] if r["key"] == SLOW_KEY and r["metric"] == "time")
    assert time["base"]["rounds"] == 3 and time["verdict"] == "regression"
    # Rounds that alternated in time carry no drift term (see docs/comparator.md).
    assert "(rounds)" in time["noise"]


def test_a_folder_of_two_commits_is_refused(tmp_path: Path) -> None:
    base, head = _round_folders(tmp_path)
    (base / "round-2.json").write_text((head / "round-2.json").read_text())
    result = invoke("compare", str(base), str(head), "--db", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2
    assert "round-2.json: project 'acme/models' commit bbbbbbbbbbbb differs" in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = invoke("compare", str(empty), str(head), "--db", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2 and "holds no results files" in result.stderr
    (base / "round-2.json").write_text((base / "round-1.json").read_text())
    result = invoke("compare", str(base), str(head), "--db", f"sqlite:///{tmp_path}/x.db")
    assert result.exit_code == 2 and "each run counts once" in result.stderr


def test_two_files_give_the_same_verdict_in_every_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder whose default store holds eight earlier main runs of the base's runner.
    here = tmp_path / "project"
    (here / ".perfgate").mkdir(parents=True)
    with open_store(f"sqlite:///{here}/.perfgate/perfgate.db") as store:
        for seed in range(1, 9):
            document = synthetic_document(benchmarks=8, samples=20, seed=seed)
            store_document(store.sessions, parse_document(document))
    base = synthetic_document(benchmarks=8, samples=20, seed=20, commit="a" * 40)
    head = synthetic_document(benchmarks=8, samples=20, seed=21, commit="b" * 40, branch="x")
    files = [tmp_path / "base.json", tmp_path / "head.json"]
    for path, document in zip(files, (base, head), strict=True):
        path.write_text(json.dumps(document))
    monkeypatch.delenv("PERFGATE_DB", raising=False)

    def compare_in(folder: Path, *extra: str) -> dict[str, Any]:
        monkeypatch.chdir(folder)
        result = invoke("compare", *map(str, files), "--format", "json", *extra)
        assert result.exit_code == 0, result.output
        data: dict[str, Any] = json.loads(result.stdout)
        return data

    elsewhere, there = compare_in(tmp_path), compare_in(here)
    assert there == elsewhere  # the store sitting in the folder is not read
    assert not any("earlier runs" in w for w in there["warnings"])
    # Named, the store is evidence.
    named = compare_in(here, "--db", f"sqlite:///{here}/.perfgate/perfgate.db")
    assert any("noise model: 8 earlier runs of main" in w for w in named["warnings"])


def test_comparing_two_files_imports_no_store(tmp_path: Path) -> None:
    base, head = _files(tmp_path)
    code = (
        "import sys\nfrom perfgate.cli import cli\n"
        f"cli.main(['compare', {base!r}, {head!r}, '--format', 'json'], standalone_mode=False)\n"
        "print('LOADED', sorted(m for m in ('sqlalchemy', 'alembic') if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert "LOADED []" in done.stdout


def _strict_json(text: str) -> Any:
    """Parse as strict JSON: NaN and Infinity are not JSON, so they fail here."""

    def refuse(word: str) -> None:
        raise ValueError(f"{word} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_json_output_is_strict_for_an_infinite_ratio(tmp_path: Path) -> None:
    """A value of 1e-300 that becomes 1e300 has an infinite ratio; JSON says null, not Infinity."""
    for name, value, commit in (("base.json", 1e-300, "a"), ("head.json", 1e300, "b")):
        document = synthetic_document(benchmarks=1, samples=8, seed=1, commit=commit * 40)
        document["benchmarks"][0]["metrics"]["flops"] = {
            "unit": "flop",
            "direction": "lower",
            "value": value,
            "exact": True,
        }
        (tmp_path / name).write_text(json.dumps(document))
    out = tmp_path / "comparison.json"
    result = invoke(
        "compare",
        str(tmp_path / "base.json"),
        str(tmp_path / "head.json"),
        "--format",
        "json",
        "--out",
        str(out),
    )
    assert result.exit_code in (0, 1), result.output  # whether flops gate is the policy's call
    data = _strict_json(out.read_text())
    flops = next(r for r in data["results"] if r["metric"] == "flops")
    assert flops["verdict"] == "regression"
    assert flops["ratio"] is None
