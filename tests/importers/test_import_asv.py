"""asv results, recorded once with the real asv (tests/data/importers/README.md): samples split
into asv's rounds, types and units from benchmarks.json, summaries, verdicts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from importer_helpers import (
    DATA,
    assert_one_line_error,
    by_key,
    import_and_compare,
    import_document,
    invoke,
)

ASV = DATA / "asv"
ENV = "existing-py_work_wt-import_.venv_bin_python"
BASE_FILE = ASV / "results" / "ci-runner" / f"3bcf38db-{ENV}.json"
HEAD_FILE = ASV / "results" / "ci-runner" / f"44c30131-{ENV}.json"
SUMMARY_FILE = ASV / "results-summary" / "ci-runner" / f"3bcf38db-{ENV}.json"


def _row(path: Path, name: str) -> dict[str, object]:
    data = json.loads(path.read_text())
    return dict(zip(data["result_columns"], data["results"][name], strict=False))


def test_samples_are_split_into_asvs_rounds(tmp_path: Path) -> None:
    document = import_document("asv", BASE_FILE, tmp_path=tmp_path)
    benchmarks = by_key(document)
    suite = json.loads((ASV / "results" / "benchmarks.json").read_text())
    slowed = suite["bench_sum.time_slowed"]
    time = benchmarks["bench_sum.time_slowed"]["metrics"]["time"]
    row = _row(BASE_FILE, "bench_sum.time_slowed")
    assert time["samples"] == row["samples"][0]  # type: ignore[index]
    # repeat 25 in each of 3 rounds (fixed in the suite): asv appends the rounds in order.
    assert time["rounds"] == [slowed["repeat"]] * slowed["rounds"] == [25, 25, 25]
    assert (time["unit"], time["direction"]) == ("s", "lower")
    assert document["run"]["commit"] == "a" * 40  # --commit wins over the file's commit_hash


def test_params_types_and_units(tmp_path: Path) -> None:
    benchmarks = by_key(import_document("asv", BASE_FILE, tmp_path=tmp_path))
    assert {
        "bench_sum.Sum.time_sum[kind=list,n=100]",
        "bench_sum.Sum.time_sum[kind=range,n=1000]",
    } <= set(benchmarks)
    assert benchmarks["bench_sum.Sum.time_sum[kind=list,n=100]"]["params"] == {
        "n": 100,
        "kind": "list",
    }
    memory = benchmarks["bench_sum.mem_list"]["metrics"]["memory"]
    assert (memory["unit"], memory["value"], memory["exact"]) == ("B", 8056.0, True)
    peak = benchmarks["bench_sum.peakmem_list"]["metrics"]["peak_memory"]
    assert (peak["unit"], peak["exact"], peak["method"]) == ("B", False, "asv_peakmem")
    track = benchmarks["bench_sum.track_answer"]["metrics"]["track"]
    assert (track["unit"], track["value"], track["direction"]) == ("widgets", 42.0, "lower")


def test_without_benchmarks_json_names_come_from_asvs_rules(tmp_path: Path) -> None:
    # A results file on its own: types from the function names, params named as asv names them.
    lone = tmp_path / "machine" / BASE_FILE.name
    lone.parent.mkdir()
    shutil.copy(BASE_FILE, lone)
    benchmarks = by_key(import_document("asv", lone, tmp_path=tmp_path))
    assert "bench_sum.Sum.time_sum[param1=100,param2=list]" in benchmarks
    time = benchmarks["bench_sum.time_slowed"]["metrics"]["time"]
    assert time.get("rounds") is None  # the rounds' boundaries are unknown without the suite
    assert benchmarks["bench_sum.track_answer"]["metrics"]["track"]["unit"] == "unit"


def test_planted_slowdown_is_a_regression(tmp_path: Path) -> None:
    results = import_and_compare("asv", [BASE_FILE], [HEAD_FILE], tmp_path)
    slowed = results[("bench_sum.time_slowed", "time")]
    assert slowed["verdict"] == "regression", slowed["reason"]
    assert slowed["ratio"] > 3
    assert results[("bench_sum.mem_list", "memory")]["verdict"] == "unchanged"


def test_without_samples_the_result_is_one_marked_sample(tmp_path: Path) -> None:
    row = _row(SUMMARY_FILE, "bench_sum.time_steady")
    assert "samples" not in row or row["samples"] is None
    time = by_key(import_document("asv", SUMMARY_FILE, tmp_path=tmp_path))["bench_sum.time_steady"][
        "metrics"
    ]["time"]
    assert time["samples"] == row["result"]
    assert time["method"] == "summary_median"
    assert "--record-samples" in time["note"]


@pytest.mark.parametrize(
    ("mutate", "path", "message"),
    [
        (lambda d: d["results"]["bench_sum.time_slowed"][11][0].__setitem__(3, "x"),
         "results.bench_sum.time_slowed[11][0][3]", "expected a number"),
        (lambda d: d["results"]["bench_sum.Sum.time_sum"][0].pop(),
         "results.bench_sum.Sum.time_sum[0]", "3 results for 4 parameter combinations"),
        (lambda d: d.__setitem__("version", 1), "version", "asv results version 1"),
    ],
)  # fmt: skip
def test_malformed_file_names_the_field(
    tmp_path: Path, mutate: object, path: str, message: str
) -> None:
    data = json.loads(BASE_FILE.read_text())
    mutate(data)  # type: ignore[operator]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = invoke("import", "asv", str(bad), "--no-store", "--out", "x.json")
    assert_one_line_error(result, f"{bad}: {path}: {message}")


def test_a_bad_benchmarks_json_is_named(tmp_path: Path) -> None:
    results = tmp_path / "results"
    shutil.copytree(ASV / "results", results)
    suite = results / "benchmarks.json"
    suite.write_text(suite.read_text()[:100])
    result = invoke(
        "import", "asv", str(results / "ci-runner" / BASE_FILE.name), "--no-store", "--out", "x"
    )
    assert_one_line_error(result, f"{suite}: invalid JSON at line")
