"""Calibration records: what N A/A rounds of one commit say about a runner's noise.

`perfgate calibrate` runs the suite as alternating A/A rounds (each round a fresh process) on the
runner class a project compares on; this module turns those rounds into the record the comparator
reads as evidence: each benchmark metric's round-to-round spread (after the round's machine speed
factor) with its degrees of freedom and its known speed levels, and the spread of the machine
factor itself. Pure: no store, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from perfgate.errors import UsageError
from perfgate.results import ResultsDocument
from perfgate.stats import noise
from perfgate.stats.modes import speed_levels, within_levels

CALIBRATION_SCHEMA = "perfgate/calibration@1"
# Fewer rounds than this say too little about a spread to be worth storing.
MIN_ROUNDS = 4

MetricKey = tuple[str, str]


@dataclass(frozen=True)
class MetricNoise:
    """One benchmark metric's round-to-round noise on a runner."""

    #: Standard deviation of one round's log median inside its speed level.
    sigma: float
    df: int
    #: Known speed levels as log offsets from the lowest (0.0 first: the fastest for time, the
    #: slowest for throughput); one entry for one level.
    levels: tuple[float, ...] = (0.0,)


@dataclass(frozen=True)
class Calibration:
    """A runner class's noise, measured as A/A rounds of one commit."""

    project: str
    fingerprint: str
    commit: str
    started_at: datetime
    rounds: int
    #: Spread of whole rounds' speed factors (log), shared by every benchmark of a round.
    machine_sigma: float
    machine_df: int
    metrics: Mapping[MetricKey, MetricNoise]
    #: The runner's tail weight, if known: the typical benchmark's (`noise.typical_tail` of the
    #: rounds inside their levels), not one weight fitted to all, which the heaviest set.
    tail_df: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": CALIBRATION_SCHEMA,
            "project": self.project,
            "fingerprint": self.fingerprint,
            "commit": self.commit,
            "started_at": self.started_at.isoformat(),
            "rounds": self.rounds,
            "machine": {"sigma": self.machine_sigma, "df": self.machine_df},
            "tail_df": self.tail_df,
            "metrics": [
                {
                    "key": key,
                    "metric": metric,
                    "sigma": entry.sigma,
                    "df": entry.df,
                    "levels": list(entry.levels),
                }
                for (key, metric), entry in sorted(self.metrics.items())
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calibration:
        if data.get("schema") != CALIBRATION_SCHEMA:
            raise UsageError(
                f"not a calibration record ({CALIBRATION_SCHEMA}): {data.get('schema')!r}"
            )
        return cls(
            project=str(data["project"]),
            fingerprint=str(data["fingerprint"]),
            commit=str(data["commit"]),
            started_at=datetime.fromisoformat(str(data["started_at"])),
            rounds=int(data["rounds"]),
            machine_sigma=float(data["machine"]["sigma"]),
            machine_df=int(data["machine"]["df"]),
            tail_df=None if data.get("tail_df") is None else float(data["tail_df"]),
            metrics={
                (str(row["key"]), str(row["metric"])): MetricNoise(
                    sigma=float(row["sigma"]),
                    df=int(row["df"]),
                    levels=tuple(float(v) for v in row["levels"]) or (0.0,),
                )
                for row in data["metrics"]
            },
        )


def round_medians(documents: Sequence[ResultsDocument]) -> dict[MetricKey, list[float]]:
    """Every sampled metric's per-round log medians, rounds in time order across documents."""
    ordered = sorted(documents, key=lambda d: d.run.started_at)
    out: dict[MetricKey, list[float]] = {}
    for document in ordered:
        for bench in document.benchmarks:
            if bench.error:
                continue
            for name, metric in bench.metrics.items():
                if metric.samples is None:
                    continue
                logs = out.setdefault((bench.key, name), [])
                for samples in metric.round_slices():
                    if samples:
                        logs.append(math.log(max(float(np.median(samples)), 1e-300)))
    return out


def calibrate(documents: Sequence[ResultsDocument]) -> Calibration:
    """The calibration record of A/A rounds: documents of one project, commit and fingerprint.

    Raises UsageError when the documents mix commits or runners, or hold fewer than
    `MIN_ROUNDS` rounds.
    """
    if not documents:
        raise UsageError("calibration needs at least one results document")
    first = documents[0]
    for document in documents[1:]:
        if (document.run.project, document.run.commit) != (first.run.project, first.run.commit):
            raise UsageError(
                f"run {document.run.id}: calibration rounds must all be one commit of one "
                f"project ({first.run.project} {first.run.commit[:12]})"
            )
        if document.environment.fingerprint != first.environment.fingerprint:
            raise UsageError(
                f"run {document.run.id}: calibration rounds must all come from one runner "
                "(environment fingerprint)"
            )
    logs = round_medians(documents)
    time_keys = sorted(key for key in logs if key[1] == "time")
    rounds = max((len(logs[key]) for key in time_keys), default=0)
    if rounds < MIN_ROUNDS:
        raise UsageError(
            f"calibration needs at least {MIN_ROUNDS} rounds of the suite; these runs hold {rounds}"
        )
    aligned = [key for key in time_keys if len(logs[key]) == rounds]
    matrix = np.asarray([logs[key] for key in aligned])
    factors = noise.round_factors(matrix)
    apart = noise.round_factors_without_each(matrix)
    others = dict(zip(aligned, apart, strict=True)) if apart is not None else {}
    machine = noise.round_machine(matrix)
    metrics: dict[MetricKey, MetricNoise] = {}
    tails: dict[MetricKey, list[np.ndarray]] = {}
    for key, values in sorted(logs.items()):
        array = np.asarray(values)
        if factors is not None and key[1] in ("time", "throughput") and array.size == rounds:
            array = array - factors if key[1] == "time" else array + factors
        if array.size < 2:
            continue
        levels = speed_levels(array)
        residuals = within_levels(array, levels)
        df = int(array.size - len(levels))
        if df < 1:
            continue
        if key in others:
            tails[key] = [within_levels(np.asarray(values) - others[key], levels)]
        elif key[1] == "time":
            tails[key] = [residuals]
        sigma = math.sqrt(float(np.sum((residuals - residuals.mean()) ** 2)) / df)
        metrics[key] = MetricNoise(
            sigma=sigma, df=df, levels=tuple(level - levels[0] for level in levels)
        )
    return Calibration(
        project=first.run.project,
        fingerprint=str(first.environment.fingerprint),
        commit=first.run.commit,
        started_at=min(d.run.started_at for d in documents),
        rounds=rounds,
        machine_sigma=math.sqrt(machine.var) if machine is not None else 0.0,
        machine_df=int(machine.df) if machine is not None else 0,
        metrics=metrics,
        tail_df=noise.typical_tail(tails),
    )
