"""torch.utils.benchmark Measurements, taken with the real Timer: `perfgate.from_measurements` and
`perfgate import torch-pickle`, rounds, the restricted unpickler, verdicts."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
from importer_helpers import (
    BASE,
    DATA,
    PROJECT,
    assert_one_line_error,
    by_key,
    import_and_compare,
    import_document,
    invoke,
)

import perfgate

# Importing torch and timing 240 blocks takes 4-7 s on the loaded 2-core machine.
pytestmark = [pytest.mark.torch, pytest.mark.slow]
ROUNDS = 3


def _measure(n_slowed: int) -> list[Any]:
    from torch.utils import benchmark

    measurements = []
    for _ in range(ROUNDS):
        for label, n in (("steady", 500), ("slowed", n_slowed)):
            timer = benchmark.Timer(
                stmt=f"sum(range({n}))", label=label, sub_label="py", description="sum"
            )
            # Blocks of 20 calls (about 0.1 ms), merged into one Measurement of 40 blocks:
            # blocked_autorange's blocks of several ms are mostly preempted on a loaded machine.
            blocks = [timer.timeit(number=20) for _ in range(40)]
            (merged,) = benchmark.Measurement.merge(blocks)
            measurements.append(merged)
    return measurements


@pytest.fixture(scope="module")
def measured() -> dict[str, list[Any]]:
    return {"base": _measure(500)}


def _pickle(tmp_path: Path, name: str, measurements: list[Any]) -> Path:
    path = tmp_path / f"{name}.pkl"
    path.write_bytes(pickle.dumps(measurements))
    return path


def test_from_measurements_keeps_each_measurement_as_a_round(
    measured: dict[str, list[Any]],
) -> None:
    document = perfgate.from_measurements(measured["base"], commit=BASE, project=PROJECT)
    benchmarks = {b.key: b for b in document.benchmarks}
    key = "steady[description=sum,num_threads=1,sub_label=py]"
    assert set(benchmarks) == {key, key.replace("steady", "slowed")}
    time = benchmarks[key].metrics["time"]
    mine = [m for m in measured["base"] if m.task_spec.label == "steady"]
    assert time.rounds == [len(m.raw_times) for m in mine]
    # Per call: each raw time covers number_per_run calls.
    assert time.samples == pytest.approx([t for m in mine for t in m.times])
    assert (time.unit, time.direction) == ("s", "lower")
    assert document.run.commit == BASE and document.run.project == PROJECT
    assert document.environment.as_dict()["torch"]


def test_pickle_imports_like_the_objects(measured: dict[str, list[Any]], tmp_path: Path) -> None:
    document = import_document(
        "torch-pickle", _pickle(tmp_path, "base", measured["base"]), tmp_path=tmp_path
    )
    direct = perfgate.from_measurements(measured["base"], commit=BASE, project=PROJECT)
    assert {k: v["metrics"] for k, v in by_key(document).items()} == {
        b.key: {n: m.model_dump(mode="json") for n, m in b.metrics.items()}
        for b in direct.benchmarks
    }


def test_planted_slowdown_is_a_regression(tmp_path: Path) -> None:
    # Pickles recorded once with torch.utils.benchmark (tests/data/importers/README.md): a
    # verdict on live timings would depend on how busy the machine is.
    recorded = DATA / "torch"
    results = import_and_compare(
        "torch-pickle", [recorded / "base.pkl"], [recorded / "head.pkl"], tmp_path
    )
    slowed = results[("slowed[description=sum,num_threads=1,sub_label=py]", "time")]
    assert slowed["verdict"] == "regression", slowed["reason"]
    assert slowed["ratio"] > 2


class Payload:
    """Any class but torch's two: the unpickler must refuse it without calling it."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (print, ("unpickled code ran",))


def test_pickle_of_other_objects_is_refused_without_running_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _pickle(tmp_path, "bad", [Payload()])  # type: ignore[list-item]
    result = invoke("import", "torch-pickle", str(bad), "--no-store", "--out", "x.json")
    assert_one_line_error(result, f"{bad}: not a pickle of Measurements", "builtins.print")
    assert "unpickled code ran" not in result.output + capsys.readouterr().out


def test_malformed_measurement_names_the_field(
    measured: dict[str, list[Any]], tmp_path: Path
) -> None:
    from torch.utils.benchmark import Measurement

    good = measured["base"][0]
    broken = Measurement(
        number_per_run=good.number_per_run,
        raw_times=[*good.raw_times[:2], float("nan")],
        task_spec=good.task_spec,
    )
    bad = _pickle(tmp_path, "nan", [good, broken])
    result = invoke("import", "torch-pickle", str(bad), "--no-store", "--out", "x.json")
    assert_one_line_error(result, f"{bad}: [1].raw_times[2]: nan is not a finite number")


@pytest.mark.parametrize("content", [b"", b"\x80\x05garbage", b"not a pickle at all"])
def test_bytes_that_are_no_pickle_are_one_line(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "bad.pkl"
    bad.write_bytes(content)
    result = invoke("import", "torch-pickle", str(bad), "--no-store", "--out", "x.json")
    assert_one_line_error(result, f"{bad}: not a ")
