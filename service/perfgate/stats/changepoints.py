"""Change points in a benchmark's history: robust penalised split into flat or sloped parts."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.ndimage import median_filter

FloatArray = NDArray[np.float64]
# What callers may pass: a list of floats or any numeric 1-D array (validated at run time).
SeriesLike = Sequence[float] | NDArray[Any]

# Runs of up to three points are treated as spikes, never as levels (a median of 7 removes them).
_DESPIKE_WINDOW = 7
# Points further than this many local noise scales from the running median are pulled back to it.
_DESPIKE_LIMIT = 3.0
# Huber's tuning constant for the pseudo-observations, in robust residual scales.
HUBER_LIMIT = 2.0
_MAX_ROUNDS = 20
# Consistency factor that makes the MAD estimate the standard deviation under normal noise.
MAD_TO_SD = 1.482602218505602


def detect_change_points(
    values: SeriesLike,
    *,
    penalty: float = 3.0,
    slope_penalty: float = 1.0,
    min_size: int = 5,
    max_rho: float = 0.9,
    max_burst: int | None = None,
) -> list[int]:
    """Sorted indices where a new segment starts (never 0); [] for a series without changes.

    The series is cut into segments that are each either flat or a straight line, by exact
    optimal partitioning of a penalised least-squares cost: `penalty * log(n)` noise variances
    per change point and `slope_penalty * log(n)` more for each sloped segment. The data are
    despiked and then Huberised against the current fit, and the noise variance is re-estimated
    from the residuals (inflated for their lag-1 autocorrelation, at most `max_rho`) until the
    segmentation stops changing. The defaults are the measured setting (docs/changepoints.md).

    A segment shorter than `max_burst` points whose two neighbours share one level (joining them
    would not pay for a change point) is a burst, not a level: its two change points are dropped
    (docs/changepoints.md#bursts). None, the default, derives the length from the noise:
    `floor(2 * min_size * (1 - rho))`, with rho the lag-1 persistence of the final round's noise
    (the smaller of the residuals' and the differences' estimate, the one that inflates the
    scale; white noise of 160 points gives 0 to 0.3). Two shortest levels for independent noise;
    shorter as the noise persists, because then each run brings only a share 1 - rho of new
    noise, a short excursion of persistent noise is already charged for by the inflated scale,
    and one that still stands out is as likely a level the history briefly held; from rho = 0.5
    on the window is at most `min_size` and no segment is a burst. 0 keeps every segment
    (callers that must see the raw segmentation pass it).
    Series shorter than `2 * min_size` have no change points; NaN or infinity is a ValueError.
    """
    x = _as_series(values)
    if min_size < 2:
        raise ValueError(f"min_size must be at least 2, got {min_size}")
    if not 0.0 <= max_rho < 1.0:
        raise ValueError(f"max_rho must be in [0, 1), got {max_rho}")
    if max_burst is not None and max_burst < 0:
        raise ValueError(f"max_burst must be at least 0, got {max_burst}")
    n = x.size
    if n < 2 * min_size or float(np.ptp(x)) == 0.0:
        return []

    despiked = _despike(x)
    # Centring keeps the cumulative sums of squares small relative to the signal.
    despiked = despiked - float(np.median(despiked))
    log_n = math.log(n)
    change_cost = penalty * log_n
    slope_cost = slope_penalty * log_n
    diff_rho = _difference_rho(x, max_rho)

    # Pilot: flat segments measured against the whole series' spread, so that the first cuts are
    # made by the largest steps, never hidden by a slope through them.
    scale = float(np.std(despiked))
    if scale == 0.0:
        return []
    cps = _optimal_partition(despiked / scale, change_cost, slope_cost, min_size, False)
    # Below this the residuals are rounding error: the pieces fit exactly, there is no noise.
    exact = 1e-9 * float(np.ptp(despiked))
    seen: set[tuple[int, ...]] = set()
    scaled = despiked / scale
    rho = diff_rho
    for _ in range(_MAX_ROUNDS):
        fit = _fitted(despiked, cps, scale, slope_cost)
        residual = despiked - fit
        spread = _robust_scale(residual)
        if spread <= exact:
            return _without_redundant(despiked, cps, exact)
        residual = np.clip(residual, -HUBER_LIMIT * spread, HUBER_LIMIT * spread)
        pseudo = fit + residual
        # A missed step makes the residuals look persistent; the differences' correlation does
        # not see steps, so the smaller of the two is the noise's own persistence.
        rho = min(_lag1_correlation(residual, max_rho), diff_rho)
        scale = float(np.sqrt(np.mean(residual**2))) * math.sqrt((1.0 + rho) / (1.0 - rho))
        scaled = pseudo / scale
        new = _optimal_partition(scaled, change_cost, slope_cost, min_size, True)
        if new == cps or tuple(new) in seen:
            cps = new
            break
        seen.add(tuple(cps))
        cps = new
    burst = _burst_length(min_size, rho) if max_burst is None else max_burst
    if burst > min_size:  # every segment has at least `min_size` points
        cps = _without_bursts(scaled, cps, change_cost, burst)
    return cps


def _burst_length(min_size: int, rho: float) -> int:
    """The default `max_burst`: two shortest levels, scaled by the share of new noise per run."""
    return math.floor(2 * min_size * (1.0 - rho))


def segment_levels(values: SeriesLike, change_points: Sequence[int]) -> list[float]:
    """The median of each segment that `change_points` (as returned above) cut `values` into."""
    x = _as_series(values)
    if x.size == 0:
        raise ValueError("segment_levels needs at least one value")
    bounds = [0, *change_points, x.size]
    if any(b <= a for a, b in itertools.pairwise(bounds)):
        raise ValueError(f"change points must be increasing and within 1..{x.size - 1}")
    return [float(np.median(x[a:b])) for a, b in itertools.pairwise(bounds)]


def _as_series(values: SeriesLike) -> FloatArray:
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1:
        raise ValueError(f"expected a 1-D series, got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("the series contains NaN or infinite values")
    return x


def mad(v: FloatArray) -> float:
    """Median absolute deviation, scaled to estimate the standard deviation of normal noise."""
    return float(np.median(np.abs(v - np.median(v)))) * MAD_TO_SD


def _robust_scale(v: FloatArray) -> float:
    """The MAD, or the mean absolute deviation where most values tie (quantised timings)."""
    scale = mad(v)
    if scale > 0.0:
        return scale
    return float(np.mean(np.abs(v - np.median(v)))) * math.sqrt(math.pi / 2.0)


def _despike(x: FloatArray) -> FloatArray:
    """Pull isolated outliers back towards the running median; steps survive a median filter."""
    d = np.diff(x)
    local_noise = _robust_scale(d) / math.sqrt(2.0)
    if local_noise == 0.0:
        return x.copy()
    # The median is taken around the typical slope, so that the mirrored ends of a straight
    # stretch are not bent towards their neighbours.
    ramp = float(np.median(d)) * np.arange(x.size, dtype=np.float64)
    trend = median_filter(x - ramp, size=_DESPIKE_WINDOW, mode="mirror") + ramp
    limit = _DESPIKE_LIMIT * local_noise
    return np.asarray(np.clip(x, trend - limit, trend + limit), dtype=np.float64)


def _difference_rho(x: FloatArray, max_rho: float) -> float:
    """Lag-1 autocorrelation of AR(1) noise, from the correlation of successive differences.

    For AR(1) noise corr(d[t], d[t-1]) = -(1 - rho) / 2. Steps and slopes only shift single
    differences or their centre, so a robust (Gnanadesikan-Kettenring) correlation ignores them.
    """
    d = np.diff(x)
    u, v = d[1:], d[:-1]
    su, sv = mad(u), mad(v)
    if su == 0.0 or sv == 0.0:
        return 0.0  # most steps are exactly flat: there is no noise to persist
    plus = mad(u / su + v / sv) ** 2
    minus = mad(u / su - v / sv) ** 2
    if plus + minus == 0.0:
        return 0.0
    corr = (plus - minus) / (plus + minus)
    return min(max(1.0 + 2.0 * corr, 0.0), max_rho)


def _lag1_correlation(r: FloatArray, max_rho: float) -> float:
    energy = float(np.dot(r, r))
    if energy == 0.0:
        return 0.0
    return min(max(float(np.dot(r[1:], r[:-1])) / energy, 0.0), max_rho)


def _optimal_partition(
    y: FloatArray, change_cost: float, slope_cost: float, min_size: int, allow_slopes: bool
) -> list[int]:
    """Exact minimiser of the sum of segment costs plus `change_cost` per change point.

    A segment costs its residual sum of squares about its mean, or about its least-squares line
    plus `slope_cost`, whichever is smaller. O(n^2) work; segments are at least `min_size` long,
    so `min_size` consecutive ends depend only on earlier ones and are solved as one block.
    """
    n = y.size

    def cumulative(v: FloatArray) -> FloatArray:
        return np.concatenate(([0.0], np.cumsum(v)))

    sum_y = cumulative(y)
    sum_yy = cumulative(y * y)
    sum_ty = cumulative(np.arange(n, dtype=np.float64) * y)
    best = np.full(n + 1, np.inf)
    best[0] = -change_cost  # the first segment has no change point to pay for
    previous = np.zeros(n + 1, dtype=np.int64)
    for first in range(min_size, n + 1, min_size):
        ends = np.arange(first, min(first + min_size, n + 1))[:, None]
        starts = np.arange(0, first)[None, :]
        valid = (ends - starts >= min_size) & np.isfinite(best[starts])
        m = np.where(valid, ends - starts, min_size).astype(np.float64)
        sy = sum_y[ends] - sum_y[starts]
        cost = np.maximum(sum_yy[ends] - sum_yy[starts] - sy * sy / m, 0.0)
        if allow_slopes:
            # Time enters only through the segment's centred positions, whose sum of squares
            # is m(m^2 - 1)/12, so the line's fit needs one more running sum.
            sty = sum_ty[ends] - sum_ty[starts] - 0.5 * (ends + starts - 1) * sy
            gain = sty * sty * 12.0 / (m * (m * m - 1.0))
            cost = np.minimum(cost, np.maximum(cost - gain, 0.0) + slope_cost)
        total = np.where(valid, best[starts] + cost + change_cost, np.inf)
        choice = np.argmin(total, axis=1)
        rows = ends[:, 0]
        best[rows] = total[np.arange(rows.size), choice]
        previous[rows] = choice
    cps: list[int] = []
    end = n
    while end > 0:
        end = int(previous[end])
        if end > 0:
            cps.append(end)
    return cps[::-1]


def _without_redundant(y: FloatArray, cps: list[int], exact: float) -> list[int]:
    """Drop the change points of a noise-free fit whose neighbours lie on one straight line."""
    kept: list[int] = []
    start = 0
    for cp, stop in itertools.pairwise([*cps, y.size]):
        seg = y[start:stop]
        t = np.arange(seg.size, dtype=np.float64)
        line = np.polyval(np.polyfit(t, seg, 1), t)
        if float(np.max(np.abs(seg - line))) > exact:
            kept.append(cp)
            start = cp
    return kept


def _without_bursts(y: FloatArray, cps: list[int], change_cost: float, max_burst: int) -> list[int]:
    """Drop both change points around each segment shorter than `max_burst` that is a burst.

    `y` is the final round's pseudo-observations in noise units. A short segment is a burst when
    the segments on either side, joined into one flat level without it, cost less than one change
    point more than kept apart: the history went back to where it was. Bursts are removed one at
    a time, earliest first; a removed burst's points are outliers of the level around it, so
    they no longer count in the levels that later bursts are judged against.
    """
    kept = list(cps)
    level = np.ones(y.size, dtype=bool)  # False on the points of removed bursts
    found = True
    while found:
        found = False
        bounds = [0, *kept, y.size]
        for k in range(1, len(bounds) - 2):
            before, start, stop, after = bounds[k - 1 : k + 3]
            if stop - start >= max_burst:
                continue
            left = y[before:start][level[before:start]]
            right = y[stop:after][level[stop:after]]
            if left.size == 0 or right.size == 0:
                continue
            joined = _sse(np.concatenate([left, right]))
            if joined - _sse(left) - _sse(right) < change_cost:
                level[start:stop] = False
                del kept[k - 1 : k + 1]
                found = True
                break
    return kept


def _sse(v: FloatArray) -> float:
    return float(np.sum((v - np.mean(v)) ** 2))


def _fitted(y: FloatArray, cps: list[int], scale: float, slope_cost: float) -> FloatArray:
    """Each segment's mean or line, chosen by the cost rule of `_optimal_partition`."""
    fit = np.empty_like(y)
    bounds = [0, *cps, y.size]
    for a, b in itertools.pairwise(bounds):
        seg = y[a:b]
        flat = np.full(seg.size, float(np.mean(seg)))
        t = np.arange(seg.size, dtype=np.float64) - (seg.size - 1) / 2.0
        line = flat + float(np.dot(t, seg - flat)) / float(np.dot(t, t)) * t
        flat_sse = float(np.sum((seg - flat) ** 2))
        line_sse = float(np.sum((seg - line) ** 2))
        fit[a:b] = line if line_sse + slope_cost * scale * scale < flat_sse else flat
    return fit
