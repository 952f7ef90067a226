"""How strongly each benchmark follows the machine's speed: its loading on the runs' factors.

A run's machine factor is the median over its benchmarks of how far each sat from its own level,
so the typical benchmark follows it one for one. Not every benchmark does: on the recorded
`pinned` runner one `matmul` follows about a tenth of it and `gpt_generate` about twice
(docs/comparator.md, "Each benchmark's share of the machine"). Taking the whole factor out of a
benchmark that follows a tenth of it leaves nine tenths of the machine in what is then counted as
its own noise; counting the whole factor as the machine's share of a benchmark that follows
twice of it leaves half of that out. Each benchmark's loading is learnt from history (the slope
of its medians on the runs' factors), shrunk towards 1 by what its runs can tell apart from 1.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from perfgate.stats.changepoints import HUBER_LIMIT, MAD_TO_SD, FloatArray

_ROUNDS = 10
# Reweighting stops once no slope moves by more than this.
_SETTLED = 1e-9
# The typical slope must be this many standard errors above 0 for any loading to be learnt.
MEASURED_Z = 2.0

Key = TypeVar("Key", bound=Hashable)


@dataclass(frozen=True)
class Slope:
    """One benchmark's loading as its runs measured it, and that estimate's variance."""

    value: float
    var: float


def huber_slope(values: FloatArray, movement: FloatArray) -> float:
    """How much of the movement a series follows: the Huber regression slope of its centred
    values on the centred movement, at least 0 (a busy machine makes nothing faster)."""
    return max(float(_huber_slopes(values[None, :], movement[None, :])[0]), 0.0)


def _huber_slopes(values: FloatArray, movement: FloatArray) -> FloatArray:
    """Each row's Huber regression slope (unbounded) of centred values on centred movement, by
    iteratively reweighted least squares at the change-point detector's tuning constant; 0 for
    a row whose movement is constant."""
    x = movement - np.median(movement, axis=1, keepdims=True)
    y = values - np.median(values, axis=1, keepdims=True)
    slopes = np.ones(values.shape[0])
    active = np.any(x != 0.0, axis=1)
    slopes[~active] = 0.0
    for _ in range(_ROUNDS):
        residuals = y - slopes[:, None] * x
        centred = residuals - np.median(residuals, axis=1, keepdims=True)
        spread = np.median(np.abs(centred), axis=1) * MAD_TO_SD
        # A row whose residuals are (almost all) exact has nothing left to reweight.
        active &= spread > 0.0
        if not active.any():
            break
        limit = HUBER_LIMIT * np.where(active, spread, 1.0)[:, None]
        weights = np.minimum(1.0, limit / np.maximum(np.abs(residuals), 1e-300))
        denominator = np.sum(weights * x * x, axis=1)
        update = active & (denominator > 0.0)
        updated = np.where(
            update, np.sum(weights * x * y, axis=1) / np.where(update, denominator, 1.0), slopes
        )
        settled = bool(np.all(np.abs(updated - slopes) <= _SETTLED))
        slopes = updated
        if settled:
            break
    return slopes


def measured_slopes(series: Mapping[Key, tuple[FloatArray, FloatArray]]) -> dict[Key, Slope]:
    """Each benchmark's loading on the runs' machine factors, from its (values, movement) pair,
    and its sampling variance by the jackknife over runs (one run left out at a time): a run
    where the benchmark alone landed far off (a slow process, a neighbour on its cache) moves
    the slope by what it really moves it, which a variance from the residuals' scale, normal in
    the runs, would not show. Keys whose factors did not move (or with fewer than 3 runs) are
    left out.

    Series of one length are fitted together: each one's slope and its n leave-one-out slopes
    are rows of one reweighting, which costs about what one series' jackknife does.
    """
    by_length: dict[int, list[Key]] = {}
    for key, (values, movement) in series.items():
        if values.size >= 3 and np.any(movement != movement[0]):
            by_length.setdefault(values.size, []).append(key)
    out: dict[Key, Slope] = {}
    for n, keys in by_length.items():
        values = np.stack([series[key][0] for key in keys])
        movement = np.stack([series[key][1] for key in keys])
        keep = ~np.eye(n, dtype=bool)
        rows = np.broadcast_to(np.arange(n), (n, n))[keep].reshape(n, n - 1)
        # Per series: its whole-run slope, then its n leave-one-out slopes.
        slopes = _huber_slopes(values, movement)
        left_out = _huber_slopes(
            values[:, rows].reshape(-1, n - 1), movement[:, rows].reshape(-1, n - 1)
        ).reshape(len(keys), n)
        spread = np.sum((left_out - left_out.mean(axis=1, keepdims=True)) ** 2, axis=1)
        for key, slope, var in zip(keys, slopes, (n - 1) / n * spread, strict=True):
            out[key] = Slope(value=float(slope), var=float(var))
    return out


def shrunk_loadings(slopes: Mapping[Key, Slope]) -> dict[Key, float]:
    """Each benchmark's loading relative to the typical benchmark's, shrunk towards 1 by the
    weight its own runs earn.

    Each slope is measured against the other benchmarks' factor, which also holds their noise:
    every slope is attenuated alike, so each is taken relative to the median slope c. How far
    the relative loadings truly spread around 1 (tau²) is DerSimonian and Laird's
    moment estimate from Cochran's Q (how much more they disagree than their sampling
    variances explain); a benchmark keeps tau² / (tau² + its variance) of its own departure from
    1, and never goes below 0. Every loading is 1 (the machine factor as the typical benchmark
    follows it) where they disagree no more than sampling explains, and where c is not clearly
    above 0 (`MEASURED_Z` of its standard errors): then the runs' factors are mostly the
    benchmarks' own noise, and no slope on them says anything.
    """
    if len(slopes) < 2:
        return dict.fromkeys(slopes, 1.0)
    values = np.asarray([s.value for s in slopes.values()])
    variances = np.asarray([s.var for s in slopes.values()])
    typical = float(np.median(values))
    # The median's standard error, sqrt(pi / 2) of the mean's.
    error = math.sqrt(math.pi / 2 * float(np.median(variances)) / len(values))
    if typical <= MEASURED_Z * error or not np.all(variances > 0):
        return dict.fromkeys(slopes, 1.0)
    relative, rel_var = values / typical, variances / typical**2
    weights = 1.0 / rel_var
    mean = float(np.sum(weights * relative) / np.sum(weights))
    q = float(np.sum(weights * (relative - mean) ** 2))
    scale = float(np.sum(weights) - np.sum(weights**2) / np.sum(weights))
    tau2 = max((q - (len(values) - 1)) / scale, 0.0) if scale > 0 else 0.0
    if tau2 == 0.0:
        return dict.fromkeys(slopes, 1.0)
    return {
        key: max(1.0 + tau2 / (tau2 + v) * (r - 1.0), 0.0)
        for key, r, v in zip(slopes, relative, rel_var, strict=True)
    }
