"""TCPDBench metrics: hand-computed cases and the published score of predicting no change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tcpd_metrics import covering, f_measure


def tcpd_dir() -> Path:
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "tcpd"


def test_f1_margin_is_inclusive() -> None:
    # X = {0, 15}, T = {0, 10}: 15 is exactly 5 away, a hit, so P = R = 1.
    assert f_measure({"a": [10]}, [15]) == 1.0
    # 16 is a miss: P = 1/2 (only 0 hits), R = 1/2, F1 = 1/2.
    assert f_measure({"a": [10]}, [16]) == 0.5
    assert f_measure({"a": [10]}, [16], margin=6) == 1.0


def test_f1_each_prediction_is_used_once() -> None:
    # T = {0, 10, 12}, X = {0, 11}: 11 matches 10 and is gone for 12. P = 2/2, R = 2/3.
    assert f_measure({"a": [10, 12]}, [11]) == pytest.approx(0.8)
    # T = {0, 10}, X = {0, 9, 11}: one of 9 and 11 is unused. P = 2/3, R = 1.
    assert f_measure({"a": [10]}, [9, 11]) == pytest.approx(0.8)


def test_f1_visits_true_points_in_tcpdbench_set_order() -> None:
    # TCPDBench iterates a Python set: {0, 30, 42, 49} yields 0, 49, 42, 30. 49 takes 44 (tied
    # with 54, the smaller wins), so 42 finds nothing: 2 hits of 4 on both sides, F1 = 1/2.
    # Visiting in sorted order would give 3 hits and 0.75; the published scores use set order.
    assert list({0, 30, 42, 49}) == [0, 49, 42, 30]
    assert f_measure({"a": [30, 42, 49]}, [20, 44, 54]) == 0.5


def test_f1_precision_on_the_union_recall_averaged_over_annotators() -> None:
    # Union {0, 10, 30}, X = {0, 10}: P = 2/2. Recall: a 2/2, b 1/2, c (only 0) 1/1 -> 5/6.
    score = f_measure({"a": [10], "b": [30], "c": []}, [10])
    assert score == pytest.approx(2 * 1 * (5 / 6) / (1 + 5 / 6))
    # A prediction that only annotator b made still counts for precision.
    assert f_measure({"a": [10], "b": [30]}, [10, 30]) == 1.0


def test_f1_predicting_nothing() -> None:
    # X = {0}: P = 1, R = mean(1/2, 1/1) = 3/4, F1 = 6/7.
    assert f_measure({"a": [40], "b": []}, []) == pytest.approx(6 / 7)


def test_covering_by_hand() -> None:
    # Annotated [0,5) [5,10); predicted [0,10): each half covers 5/10 -> 0.5.
    assert covering({"a": [5]}, [], 10) == 0.5
    assert covering({"a": [5]}, [5], 10) == 1.0
    # Predicted [0,4) [4,10): (5 * 4/5 + 5 * 5/6) / 10.
    assert covering({"a": [5]}, [4], 10) == pytest.approx((4 + 25 / 6) / 10)
    # Two annotators are averaged: 1.0 for a, 0.5 for b (one segment, halved).
    assert covering({"a": [5], "b": []}, [5], 10) == pytest.approx(0.75)


def test_metrics_need_annotators() -> None:
    with pytest.raises(ValueError):
        f_measure({}, [3])
    with pytest.raises(ValueError):
        covering({}, [3], 10)


def test_predicting_nothing_on_tcpd_scores_the_published_numbers() -> None:
    data = tcpd_dir()
    if not data.is_dir():
        pytest.skip(f"TCPD data not found at {data}")
    annotations = json.loads((data / "annotations.json").read_text())
    f1s, covers = [], []
    for path in sorted((data / "series").glob("*.json")):
        n = json.loads(path.read_text())["n_obs"]
        f1s.append(f_measure(annotations[path.stem], []))
        covers.append(covering(annotations[path.stem], [], n))
    assert len(f1s) == 25
    assert round(sum(f1s) / len(f1s), 3) == 0.647
    assert round(sum(covers) / len(covers), 3) == 0.557
