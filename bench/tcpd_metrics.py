"""TCPDBench's change-point scores: F1 with a margin and segment covering, against annotators."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence


def _true_positives(truth: set[int], predicted: set[int], margin: int) -> int:
    """How many true points have a prediction within `margin`, each prediction used once.

    Each true point takes its nearest unused prediction (the smaller index on a tie). The true
    points are visited in the iteration order of the set, as TCPDBench does: when two of them
    compete for one prediction the order decides, and only this order reproduces its scores.
    """
    available = set(predicted)
    hits = 0
    for tau in truth:
        close = [(abs(tau - x), x) for x in available if abs(tau - x) <= margin]
        if not close:
            continue
        hits += 1
        available.remove(min(close)[1])
    return hits


def f_measure(
    annotations: Mapping[str, Sequence[int]],
    predictions: Sequence[int],
    *,
    margin: int = 5,
) -> float:
    """F1 of `predictions` against the annotators: precision on their union, recall averaged.

    Index 0 joins every set, so predicting nothing still scores the start of the series and a
    series nobody annotated is scored as one segment.
    """
    if not annotations:
        raise ValueError("f_measure needs at least one annotator")
    # Built in TCPDBench's order (each annotator's set, then 0; the union by insertion), so
    # that iterating them visits the points in the same order as the published scores did.
    per_annotator = []
    for points in annotations.values():
        truth = set(points)
        truth.add(0)
        per_annotator.append(truth)
    union: set[int] = set()
    for truth in per_annotator:
        for tau in truth:
            union.add(tau)
    predicted = set(predictions)
    predicted.add(0)
    precision = _true_positives(union, predicted, margin) / len(predicted)
    recall = sum(
        _true_positives(truth, predicted, margin) / len(truth) for truth in per_annotator
    ) / len(per_annotator)
    return 2 * precision * recall / (precision + recall)


def _segments(change_points: Iterable[int], n_obs: int) -> list[range]:
    """Split 0..n_obs-1 at the change points; points outside 1..n_obs-1 are ignored."""
    bounds = [0, *sorted({c for c in change_points if 0 < c < n_obs}), n_obs]
    return [range(a, b) for a, b in itertools.pairwise(bounds)]


def _cover_single(predicted: list[range], truth: list[range], n_obs: int) -> float:
    total = 0.0
    for r in truth:
        best = 0.0
        for q in predicted:
            # Both are contiguous ranges, so the overlap is one interval and the union its hull.
            inter = min(r.stop, q.stop) - max(r.start, q.start)
            if inter > 0:
                best = max(best, inter / (len(r) + len(q) - inter))
        total += len(r) * best
    return total / n_obs


def covering(
    annotations: Mapping[str, Sequence[int]],
    predictions: Sequence[int],
    n_obs: int,
) -> float:
    """Covering of each annotator's segmentation by the predicted one, averaged over annotators."""
    if not annotations:
        raise ValueError("covering needs at least one annotator")
    if n_obs < 1:
        raise ValueError("covering needs a non-empty series")
    predicted = _segments(predictions, n_obs)
    scores = [
        _cover_single(predicted, _segments(points, n_obs), n_obs) for points in annotations.values()
    ]
    return sum(scores) / len(scores)
