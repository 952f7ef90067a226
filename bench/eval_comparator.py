"""How often `perfgate compare` cries wolf and how often it finds a slowdown, on many noise shapes.

    python bench/eval_comparator.py eval                 # everything (~24 min on 2 cores)
    python bench/eval_comparator.py eval --quick         # a smoke run (2-3 min)
    python bench/eval_comparator.py eval --shapes gauss-3 mixed --data none --pairs 20
    python bench/eval_comparator.py eval --shapes none --data interleaved --settings 3alt
    python bench/eval_comparator.py eval --settings 1+late --steps-left-out  # same pairs, no steps
    python bench/eval_comparator.py bound                # only the oracle bounds (seconds)
    python bench/eval_comparator.py pooled bench/data/eval/sim100.json \
        bench/data/eval/recorded40.json                  # the pooled tables of saved files
    python bench/eval_comparator.py table bench/data/eval/sim100.json \
        bench/data/eval/recorded40.json                  # their rows as one table
    python bench/eval_comparator.py record --runs 40     # ~20 s a job: perfgate run, 1 round
    python bench/eval_comparator.py record --runs 12 --rounds 3 --out /tmp/x
    python bench/recordings.py pack /tmp/x        # -> bench/data/comparator/x.tar.xz

`eval` scores the comparator on two kinds of data, so that it cannot be tuned to one machine:
simulated suites whose process-to-process noise follows named shapes (`bench/noise_sim.py`), and
every recorded dataset in `bench/data/comparator/*.tar.xz` (jobs of identical code, one after
another; a job with several rounds is split into single-round documents, but for three sequential
rounds a side on a set recorded with three rounds a job, where each side is one whole job:
`RecordedSource.whole_jobs`). Each is a time-ordered
sequence of rounds, from which eight settings build base and head sides: one round a side, three
rounds a side one after the other, three a side alternating (base, head, base, ...), the same
with the 24 rounds before as the base branch's history (a pull request's default), one round a
side with the 24 rounds before the base as the base branch's history (as they were; with a ±30%
step at a run of the middle half of every metric's history; with one 2-6 runs before history's
end in a third of the metrics), and one round a side with a
calibration record of the runner (`perfgate.stats.calibration.calibrate` of the 10 rounds before
the base, as A/A rounds of one commit). Per pair it runs
`compare_documents` as perfgate does on: A/A (false alarms, possible-regression flags, whether
the gate fails and whether the suite as a whole is called changed), one
benchmark slowed +10/+25/+50% (power, collateral alarms), and 60% of the suite slowed +25% (does
the gate fail; are the untouched benchmarks left alone). The same pairs go through other tools'
rules (`bench/anchors.py`), and every row gets an oracle bound: the best power any cutoff on the
ratio of the sides' medians could reach at the allowed false alarms, knowing this data's A/A
distribution. It prints one markdown table, the rows that miss a target (a false-alarm miss
with its count, its exact 95% interval and the one clustered by job: `clustered_interval`), the
false alarms pooled per setting over the simulated shapes and over the recorded sets, and writes
`bench/data/eval/latest.json` (`quick.json` with `--quick`). Progress goes to stderr. `pooled`
prints docs/comparator.md's pooled tables and the rows over their false-alarm target from saved
files, `table` their rows as that one markdown table, without running anything.

Details. A simulated pair is a fresh sequence of the shape; the head window starts 0-8 rounds
(`--max-gap`) after the base window, except when alternating. A recorded pair is a placement of
the windows in the folder's sequence (the head anywhere later), `--pairs-recorded` of them drawn
at random, the oracle using all of them. Each pair slows one benchmark, taken in turn. Rates count
the `time` results; a false alarm is a `regression` or `improvement` verdict in A/A. With a
calibration record the oracle is that of one round a side (the record only helps learn the noise),
and recorded placements without 10 rounds before the base are skipped. A benchmark
is steady for the +50% check in gauss-* shapes, and in recorded data when its run-to-run sd after
each round's common factor is at most 3%. The oracle takes the best of one cutoff for all
benchmarks and one per benchmark (see `oracle`), so perfgate can exceed it where it sees more
than the medians (the rounds' spread of this very pair).

`record` runs the example benchmarks N times, each `perfgate run` job a separate process (no
profile, `--threads 1`), one after another, all for the same commit: identical code.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import os
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats as scipy_stats

import anchors  # bench/ is on sys.path when this file is run as a script
import noise_sim
import recordings
from perfgate.results import Benchmark, ResultsDocument
from perfgate.stats.noise import PastRun

if TYPE_CHECKING:
    from perfgate.stats.calibration import Calibration

ROOT = Path(__file__).resolve().parents[1]
DATA = Path("/tmp/perfgate-recording")
OUT = ROOT / "bench" / "data" / "eval" / "latest.json"
QUICK_OUT = OUT.with_name("quick.json")
COMMIT = "e" * 40
BASE_COMMIT, HEAD_COMMIT = "b" * 40, "c" * 40
EFFECTS = (0.10, 0.25, 0.50)
SUITE_SHARE, SUITE_EFFECT = 0.6, 0.25
STEADY_SD = 0.03
EPOCH = datetime(2026, 1, 1, tzinfo=timezone.utc)
ALARMS = ("regression", "improvement")


def record(
    runs: int, max_time: float, threads: int, rounds: int, out: Path, *, system_malloc: bool = False
) -> None:
    out.mkdir(parents=True, exist_ok=True)
    start = len(list(out.glob("run-*.json")))
    for i in range(start, start + runs):
        began = time.perf_counter()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "perfgate",
                "run",
                str(ROOT / "examples" / "benchmarks"),
                "--device",
                "cpu",
                "--no-profile",
                "--no-store",
                "--max-time",
                str(max_time),
                "--threads",
                str(threads),
                "--rounds",
                str(rounds),
                "--commit",
                COMMIT,
                "--branch",
                "main",
                "--project",
                "perfgate/examples",
                "--out",
                str(out / f"run-{i:03d}.json"),
                *(["--system-malloc"] if system_malloc else []),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "CI": "1"},
        )
        print(f"run {i}: {time.perf_counter() - began:.1f} s", flush=True)


# --- settings: how base and head sides are built out of a time-ordered sequence of rounds --------


@dataclass(frozen=True)
class Setting:
    """Offsets of the base and head rounds inside a pair's window of consecutive rounds."""

    name: str
    short: str
    base: tuple[int, ...]
    head: tuple[int, ...]
    #: Runs of the base branch's history, right before the base.
    history: int = 0
    #: Rounds each history run pools, consecutive (a main job of `perfgate run --rounds N`):
    #: its median is the median of their pooled samples, as the store keeps a run's.
    history_rounds: int = 1
    #: Whether the head window may start later than right after the base window.
    gap: bool = True
    #: False alarms allowed (the oracle spends exactly this) and the effect whose power is judged.
    allowed: float = 0.01
    target_effect: float = 0.10
    #: Power target against the oracle applies (3 rounds at +10%, one round at +25%).
    power_target: bool = True
    #: Rounds before the history (or the base) run as A/A rounds of one commit: a calibration
    #: record of the runner passed to the comparator.
    calibration: int = 0
    #: Whose oracle bound this setting is held to (`short` of another setting), if not its own.
    oracle_of: str | None = None
    #: Whose pairs this setting draws (`short` of another setting of the same layout), if not
    #: its own: the same rounds, only read differently.
    pairs_of: str | None = None
    #: Whether +50% of a steady benchmark must be found (one round a side, no history).
    steady_check: bool = False
    #: Each benchmark's history holds a step of this size (the level before it this many
    #: times higher or lower, at a random run of the middle half): history with a change point.
    step: float = 0.0
    #: If set, the step sits this many runs (a range, both ends included) before history's end
    #: instead: a change too recent for the change-point detector's shortest segment, or just
    #: long enough for it.
    step_recent: tuple[int, int] | None = None
    #: The share of metrics given a step (each drawn on its own); the rest keep their history.
    step_share: float = 1.0

    @property
    def width(self) -> int:
        return max(*self.base, *self.head) + 1

    @property
    def before(self) -> int:
        """Rounds a placement needs before its base round: calibration, then history."""
        return self.calibration + self.history_rounds_total

    @property
    def history_rounds_total(self) -> int:
        return self.history * self.history_rounds

    @property
    def drawn_as(self) -> str:
        """The short name its pairs are drawn by."""
        return self.pairs_of or self.short


SETTINGS = (
    Setting("1 round", "1", (0,), (1,), allowed=0.03, target_effect=0.25, steady_check=True),
    Setting("3 rounds sequential", "3seq", (0, 1, 2), (3, 4, 5)),
    Setting("3 rounds alternating", "3alt", (0, 2, 4), (1, 3, 5), gap=False),
    # What CI runs on a pull request by default with a store: alternating rounds, and the base
    # branch's runs as history. Held to the alternating oracle: history should cost nothing.
    Setting(
        "3 rounds alternating + 24 history",
        "3alt+hist",
        (0, 2, 4),
        (1, 3, 5),
        history=24,
        gap=False,
        power_target=False,
        oracle_of="3alt",
    ),
    # The same rounds with main's runs as CI keeps them: jobs of three rounds
    # (`perfgate run --rounds 3`, the action's default), eight of them.
    Setting(
        "3 rounds alternating + 8 history runs of 3 rounds",
        "3alt+hist3",
        (0, 2, 4),
        (1, 3, 5),
        history=8,
        history_rounds=3,
        gap=False,
        power_target=False,
        oracle_of="3alt",
        pairs_of="3alt+hist",
    ),
    Setting("1 round + 24 history", "1+hist", (0,), (1,), history=24, power_target=False),
    Setting(
        "1 round + 24 history, +-30% step",
        "1+step",
        (0,),
        (1,),
        history=24,
        power_target=False,
        step=0.3,
        oracle_of="1+hist",
    ),
    Setting(
        "1 round + 24 history, +-30% step 2-6 runs ago in a third",
        "1+late",
        (0,),
        (1,),
        history=24,
        power_target=False,
        step=0.3,
        step_recent=(2, 6),
        step_share=1 / 3,
        oracle_of="1+hist",
    ),
    Setting(
        "1 round + calibration",
        "1+cal",
        (0,),
        (1,),
        allowed=0.03,
        target_effect=0.25,
        calibration=10,
        oracle_of="1",
        steady_check=True,
    ),
)


#: The settings a run uses, by `short`: `SETTINGS`, or with `--steps-left-out` the settings with
#: a step in history without it. The workers fork after it is filled and look settings up here.
RUN_SETTINGS: dict[str, Setting] = {s.short: s for s in SETTINGS}


def _without_step(setting: Setting) -> Setting:
    """`setting` run with `--steps-left-out`: its pairs (drawn by `short`) without the step."""
    return replace(setting, name=f"{setting.name}, steps left out", step=0.0)


def _known_settings() -> list[Setting]:
    """`SETTINGS` and their `--steps-left-out` runs: the settings saved rows may name."""
    return [*SETTINGS, *(_without_step(s) for s in SETTINGS if s.step)]


def _leave_out_steps() -> None:
    """Every setting with a step in history runs without it, on the same pairs: against the
    stepped rows, what the steps themselves cost."""
    for short, setting in RUN_SETTINGS.items():
        if setting.step:
            RUN_SETTINGS[short] = _without_step(setting)


@dataclass(frozen=True)
class Placement:
    """Where a pair sits in a sequence: history from start - history, the head `gap` later.

    Calibration rounds, if any, are the `setting.calibration` rounds right before the history.
    """

    start: int
    gap: int

    def indices(self, setting: Setting) -> tuple[list[int], list[int], list[int]]:
        """The history's rounds (`history_rounds` a run, in order), the base's and the head's."""
        history = list(range(self.start - setting.history_rounds_total, self.start))
        base = [self.start + i for i in setting.base]
        head = [self.start + i + (self.gap if setting.gap else 0) for i in setting.head]
        return history, base, head

    def calibration_indices(self, setting: Setting) -> list[int]:
        end = self.start - setting.history_rounds_total
        return list(range(end - setting.calibration, end))


@dataclass
class Pair:
    """One comparison's inputs: single-round documents a side, the base branch's history and
    the runner's calibration record (None without one)."""

    base: list[ResultsDocument]
    head: list[ResultsDocument]
    history: list[PastRun]
    calibration: Calibration | None = None
    #: The base and head job it measured: pairs that share a job share its disturbances, and
    #: the clustered interval (`clustered_interval`) counts them once.
    jobs: tuple[str, str] = ("", "")


def _calibrate(documents: Sequence[ResultsDocument]) -> Calibration | None:
    """The calibration record of A/A rounds of one commit (None without rounds)."""
    if not documents:
        return None
    from perfgate.stats.calibration import calibrate

    return calibrate([_as_commit(d, COMMIT) for d in documents])


# --- data sources ------------------------------------------------------------------------------


def _started(index: int) -> datetime:
    """When a simulated sequence's round `index` started: a minute a round."""
    return EPOCH + timedelta(minutes=index)


def _round_document(
    keys: Sequence[str], samples: Sequence[np.ndarray], *, index: int, tag: str, fingerprint: str
) -> ResultsDocument:
    started = _started(index)
    return ResultsDocument.model_validate(
        {
            "schema": "perfgate/results@1",
            "run": {
                "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"perfgate-sim/{tag}/{index}")),
                "project": "perfgate/sim",
                "commit": BASE_COMMIT,
                "branch": "main",
                "started_at": started.isoformat(),
                "finished_at": (started + timedelta(seconds=30)).isoformat(),
            },
            "environment": {"fingerprint": fingerprint, "sampling": "interleaved"},
            "benchmarks": [
                {
                    "name": key,
                    "key": key,
                    "device": "cpu",
                    "metrics": {"time": {"unit": "s", "direction": "lower", "samples": s.tolist()}},
                }
                for key, s in zip(keys, samples, strict=True)
            ],
        }
    )


class Source:
    """A time-ordered sequence of rounds of one suite (simulated or recorded)."""

    name: str
    kind: str
    keys: tuple[str, ...]
    steady: np.ndarray

    def pair(self, setting: Setting, index: int, *, pairs: int, seed: int) -> Pair:
        raise NotImplementedError

    def aa_logs(self, setting: Setting, *, seed: int, draws: int) -> np.ndarray:
        """Log round medians of A/A pairs: (pairs, history + base + head rounds, M)."""
        raise NotImplementedError

    def can(self, setting: Setting) -> bool:
        return True


class SimSource(Source):
    """A `noise_sim` suite: every pair is a fresh sequence, the head 0..max_gap rounds later."""

    def __init__(self, shape: str, *, m: int, seed: int, max_gap: int) -> None:
        self.name, self.kind = shape, "simulated"
        self.suite = noise_sim.make_suite(shape, m, seed)
        self.keys = self.suite.keys
        self.steady = self.suite.steady()
        self.max_gap = max_gap

    def _layout(self, setting: Setting, rng: np.random.Generator, n: int) -> tuple[np.ndarray, int]:
        gaps = rng.integers(0, self.max_gap + 1, size=n) if setting.gap else np.zeros(n, int)
        return gaps, setting.before + setting.width + (self.max_gap if setting.gap else 0)

    def pair(self, setting: Setting, index: int, *, pairs: int, seed: int) -> Pair:
        rng = np.random.default_rng(
            [seed, noise_sim.stable_seed(self.name, setting.drawn_as), index]
        )
        gaps, length = self._layout(setting, rng, 1)
        logs = noise_sim.log_medians(self.suite, rng, 1, length)[0]
        placement = Placement(setting.before, int(gaps[0]))
        history, base, head = placement.indices(setting)
        tag = f"{self.name}/{setting.drawn_as}/{index}"
        # Base and head first, so that settings without calibration draw what they always drew.
        calibration = placement.calibration_indices(setting)
        docs = {
            i: _round_document(
                self.keys,
                noise_sim.round_samples(rng, logs[i]),
                index=i,
                tag=tag,
                fingerprint=f"sim-{self.name}",
            )
            for i in [*base, *head, *calibration]
        }
        # A run of one round is that round's drawn median, as every setting always drew it.
        if setting.history_rounds == 1:
            past = [
                {(k, "time"): float(math.exp(v)) for k, v in zip(self.keys, logs[i], strict=True)}
                for i in history
            ]
        else:
            drawn = {i: noise_sim.round_samples(rng, logs[i]) for i in history}
            past = [
                {
                    (k, "time"): float(np.median(np.concatenate([drawn[i][j] for i in run])))
                    for j, k in enumerate(self.keys)
                }
                for run in _runs(history, setting)
            ]
        return Pair(
            base=[_as_commit(docs[i], BASE_COMMIT) for i in base],
            head=[_as_commit(docs[i], HEAD_COMMIT) for i in head],
            history=_history(
                past, setting, rng, [_started(run[0]) for run in _runs(history, setting)]
            ),
            calibration=_calibrate([docs[i] for i in calibration]),
            # Every simulated pair is a sequence of its own: only its own results share anything.
            jobs=(str(index), str(index)),
        )

    def aa_logs(self, setting: Setting, *, seed: int, draws: int) -> np.ndarray:
        rng = np.random.default_rng(
            [seed, noise_sim.stable_seed("oracle", self.name, setting.short)]
        )
        gaps, length = self._layout(setting, rng, draws)
        logs = noise_sim.log_medians(self.suite, rng, draws, length)
        history, base, head = Placement(setting.before, 0).indices(setting)
        offsets = np.asarray([*history, *base, *head])
        shift = np.asarray([0] * (len(history) + len(base)) + [1] * len(head))
        index = offsets[None, :] + shift[None, :] * gaps[:, None]
        return np.take_along_axis(logs, index[:, :, None], axis=1)


def _split_rounds(document: ResultsDocument) -> list[ResultsDocument]:
    """A document with k rounds as k single-round documents, started one after the other."""
    times = document.benchmarks[0].metrics.get("time") if document.benchmarks else None
    count = len(times.rounds or [1]) if times is not None else 1
    if count == 1:
        return [document]
    run = document.run
    span = (run.finished_at - run.started_at) if run.finished_at else timedelta(seconds=30 * count)
    out = []
    for k in range(count):
        benchmarks = []
        for bench in document.benchmarks:
            metrics = {}
            for name, metric in bench.metrics.items():
                if metric.samples is not None and metric.rounds:
                    piece = metric.round_slices()[k]
                    metrics[name] = metric.model_copy(update={"samples": piece, "rounds": None})
                else:
                    metrics[name] = metric
            benchmarks.append(bench.model_copy(update={"metrics": metrics}))
        started = run.started_at + span * k / count
        out.append(
            document.model_copy(
                update={
                    "run": run.model_copy(
                        update={
                            "id": str(uuid.uuid5(uuid.UUID(run.id), str(k))),
                            "started_at": started,
                            "finished_at": started + span / count,
                        }
                    ),
                    "benchmarks": benchmarks,
                }
            )
        )
    return out


def _as_commit(document: ResultsDocument, commit: str) -> ResultsDocument:
    return document.model_copy(update={"run": document.run.model_copy(update={"commit": commit})})


class RecordedSource(Source):
    """A recorded dataset's jobs of identical code, split into single rounds."""

    def __init__(self, recording: recordings.Recording) -> None:
        self.name, self.kind = recording.name, "recorded"
        self.rounds: list[ResultsDocument] = []
        self.jobs: list[ResultsDocument] = []
        # Where each job's rounds begin in `rounds`, and how many rounds each job holds.
        self.job_starts: dict[int, int] = {}
        self.rounds_per_job: set[int] = set()
        for job in recording.jobs():
            self.job_starts[len(self.rounds)] = len(self.jobs)
            self.jobs.append(job)
            split = _split_rounds(job)
            self.rounds_per_job.add(len(split))
            self.rounds.extend(split)
        timed = [
            {
                b.key
                for b in r.benchmarks
                if not b.error and "time" in b.metrics and b.metrics["time"].samples
            }
            for r in self.rounds
        ]
        common = set.intersection(*timed) if timed else set()
        self.keys = tuple(b.key for b in self.rounds[0].benchmarks if b.key in common)
        self.logs = np.log(
            [[float(np.median(_samples(r, k)[0])) for k in self.keys] for r in self.rounds]
        )
        residual = self.logs - np.median(self.logs, axis=0)
        residual -= np.median(residual, axis=1, keepdims=True)
        self.sd = np.std(residual, axis=0)
        self.steady = np.asarray(self.sd <= STEADY_SD)

    def whole_jobs(self, setting: Setting) -> bool:
        """Whether a side of `setting` is one whole job of this set, as a CI job would give it.

        Sequential sides of k rounds on a set recorded with `--rounds k`: the job's rounds ran in
        one `perfgate run` (each in a fresh worker, one after the other), and its document says
        so, so the comparator knows them for one job's rounds. Split into k documents they would
        pass for k separate jobs, each with its own draw of the machine.
        """
        k = len(setting.base)
        return (
            k > 1
            and setting.gap
            and setting.base == tuple(range(k))
            and setting.head == tuple(range(k, 2 * k))
            and self.rounds_per_job == {k}
        )

    def placements(self, setting: Setting) -> list[Placement]:
        n, out = len(self.rounds), []
        whole = self.whole_jobs(setting)
        for start in range(setting.before, n - setting.width + 1):
            if whole and start not in self.job_starts:
                continue
            for gap in range(n - start - setting.width + 1 if setting.gap else 1):
                if whole and (start + len(setting.base) + gap) not in self.job_starts:
                    continue
                out.append(Placement(start, gap))
        return out

    def can(self, setting: Setting) -> bool:
        return bool(self.placements(setting))

    def chosen(self, setting: Setting, pairs: int, seed: int) -> list[Placement]:
        every = self.placements(setting)
        if len(every) <= pairs:
            return every
        rng = np.random.default_rng(
            [seed, noise_sim.stable_seed("pairs", self.name, setting.drawn_as)]
        )
        return [every[i] for i in sorted(rng.choice(len(every), size=pairs, replace=False))]

    def pair(self, setting: Setting, index: int, *, pairs: int, seed: int) -> Pair:
        placement = self.chosen(setting, pairs, seed)[index]
        history, base, head = placement.indices(setting)
        if self.whole_jobs(setting):
            base_docs = [self.jobs[self.job_starts[base[0]]]]
            head_docs = [self.jobs[self.job_starts[head[0]]]]
        else:
            base_docs = [self.rounds[i] for i in base]
            head_docs = [self.rounds[i] for i in head]
        return Pair(
            base=[_as_commit(d, BASE_COMMIT) for d in base_docs],
            head=[_as_commit(d, HEAD_COMMIT) for d in head_docs],
            history=_history(
                [_medians(*(self.rounds[i] for i in run)) for run in _runs(history, setting)],
                setting,
                np.random.default_rng([seed, noise_sim.stable_seed("step", self.name), index]),
                [self.rounds[run[0]].run.started_at for run in _runs(history, setting)],
            ),
            calibration=_calibrate(
                [self.rounds[i] for i in placement.calibration_indices(setting)]
            ),
            # A side by its first round: a whole job's, or the first of its single rounds.
            jobs=(str(base[0]), str(head[0])),
        )

    def aa_logs(self, setting: Setting, *, seed: int, draws: int) -> np.ndarray:
        rows = []
        for placement in self.placements(setting):
            history, base, head = placement.indices(setting)
            rows.append(self.logs[[*history, *base, *head]])
        return np.asarray(rows)


def _history(
    medians: Sequence[dict[tuple[str, str], float]],
    setting: Setting,
    rng: np.random.Generator,
    started: Sequence[datetime],
) -> list[PastRun]:
    """History runs (a commit each, started at `started`), with `setting.step` put into each
    metric's history."""
    runs = [dict(m) for m in medians]
    if setting.step and runs:
        for key in sorted({k for run in runs for k in run}):
            # Every metric stepping within a few runs would move the runs' shared factor as a
            # machine would; a change on main moves a few benchmarks at a time.
            if setting.step_share < 1 and rng.random() >= setting.step_share:
                continue
            if setting.step_recent:
                at = len(runs) - int(
                    rng.integers(setting.step_recent[0], setting.step_recent[1] + 1)
                )
            else:
                at = int(rng.integers(len(runs) // 4, 3 * len(runs) // 4 + 1))
            factor = (1 + setting.step) ** (1 if rng.random() < 0.5 else -1)
            for run in runs[:at]:
                if key in run:
                    run[key] *= 1 / factor if key[1] == "throughput" else factor
    return [
        PastRun(commit=f"{i + 1:040x}", medians=run, started_at=at, rounds=setting.history_rounds)
        for i, (run, at) in enumerate(zip(runs, started, strict=True))
    ]


def _runs(history: Sequence[int], setting: Setting) -> list[list[int]]:
    """History's rounds as its runs, `setting.history_rounds` consecutive rounds each."""
    size = setting.history_rounds
    return [list(history[i : i + size]) for i in range(0, len(history), size)]


def _samples(document: ResultsDocument, key: str) -> list[np.ndarray]:
    bench = next(b for b in document.benchmarks if b.key == key)
    return [np.asarray(r) for r in bench.metrics["time"].round_slices()]


def _medians(*documents: ResultsDocument) -> dict[tuple[str, str], float]:
    """What the store keeps of a run for history: every sampled metric's median (of the
    rounds' samples pooled, for a run of several rounds: `documents`)."""
    pooled: dict[tuple[str, str], list[float]] = {}
    for document in documents:
        for bench in document.benchmarks:
            for name, metric in bench.metrics.items():
                if metric.samples:
                    pooled.setdefault((bench.key, name), []).extend(metric.samples)
    return {key: float(np.median(samples)) for key, samples in pooled.items()}


# --- one pair, every scenario ------------------------------------------------------------------


def _slowed(document: ResultsDocument, factors: Mapping[str, float]) -> ResultsDocument:
    """A copy where each key in `factors` is that many times slower (throughput divided)."""
    benchmarks: list[Benchmark] = []
    for bench in document.benchmarks:
        factor = factors.get(bench.key)
        if factor is None:
            benchmarks.append(bench)
            continue
        metrics = dict(bench.metrics)
        for name in ("time", "throughput"):
            metric = metrics.get(name)
            if metric is None or metric.samples is None:
                continue
            scale = factor if metric.direction == "lower" else 1 / factor
            metrics[name] = metric.model_copy(
                update={"samples": [s * scale for s in metric.samples]}
            )
        benchmarks.append(bench.model_copy(update={"metrics": metrics}))
    return document.model_copy(update={"benchmarks": benchmarks})


def _compare(pair: Pair, head: Sequence[ResultsDocument]) -> Any:
    # Imported here so that `record` works while the comparator is broken mid-edit.
    from perfgate.stats.compare_documents import compare_documents
    from perfgate.stats.two_sample import CompareSettings

    return compare_documents(
        pair.base,
        head,
        settings=CompareSettings(),
        history=pair.history,
        calibration=pair.calibration,
    )


def _time_verdicts(comparison: Any) -> dict[str, Any]:
    return {r.key: r for r in comparison.results if r.metric == "time"}


def evaluate_pair(
    source: Source, setting: Setting, index: int, *, pairs: int, seed: int
) -> dict[str, Any]:
    """Counts for one pair: A/A, each effect on one benchmark, and 60% of the suite slowed."""
    pair = source.pair(setting, index, pairs=pairs, seed=seed)
    keys = source.keys
    rng = np.random.default_rng(
        [seed, noise_sim.stable_seed("chosen", source.name, setting.drawn_as)]
    )
    order = rng.permutation(len(keys))
    chosen = keys[order[index % len(keys)]]
    pick = np.random.default_rng([seed, noise_sim.stable_seed("suite", source.name), index])
    suite = {keys[i] for i in pick.choice(len(keys), round(SUITE_SHARE * len(keys)), False)}
    out: dict[str, Any] = {"chosen": chosen, "steady": bool(source.steady[keys.index(chosen)])}
    out["base_job"], out["head_job"] = pair.jobs

    aa_comparison = _compare(pair, pair.head)
    aa = _time_verdicts(aa_comparison)
    # What CI sees of an A/A pair: whether `--fail-on-regression` fails it (any benchmark, or
    # the suite as a whole), and whether the suite as a whole was called changed.
    out["aa_gate_fails"] = bool(aa_comparison.has_regression())
    common = aa_comparison.common_factor
    out["aa_suite_changed"] = common is not None and common.verdict in ALARMS
    out["aa_results"] = len(aa)
    out["aa_alarms"] = sum(r.verdict in ALARMS for r in aa.values())
    out["aa_flags"] = sum(getattr(r, "flag", None) == "possible_regression" for r in aa.values())
    for effect in EFFECTS:
        head = [_slowed(d, {chosen: 1 + effect}) for d in pair.head]
        verdicts = _time_verdicts(_compare(pair, head))
        found = verdicts.get(chosen)
        out[f"found_{effect}"] = found is not None and found.verdict == "regression"
        out[f"flagged_{effect}"] = (
            found is not None and getattr(found, "flag", None) == "possible_regression"
        )
        out[f"collateral_{effect}"] = sum(
            r.verdict in ALARMS for k, r in verdicts.items() if k != chosen
        )
    out["steady_found_0.5"] = _steady_found(source, setting, pair, index=index, seed=seed, out=out)
    head = [_slowed(d, dict.fromkeys(suite, 1 + SUITE_EFFECT)) for d in pair.head]
    comparison = _compare(pair, head)
    out["suite_fails"] = bool(comparison.has_regression())
    out["suite_untouched_changed"] = sum(
        r.verdict in ALARMS for k, r in _time_verdicts(comparison).items() if k not in suite
    )
    out["anchors"] = _anchor_counts(pair, keys)
    return out


def _steady_found(
    source: Source, setting: Setting, pair: Pair, *, index: int, seed: int, out: Mapping[str, Any]
) -> bool | None:
    """One round a side: whether +50% of a steady benchmark (taken in turn) is found.

    The chosen benchmark's own +50% answers when it is steady; otherwise one more comparison.
    """
    steady = [k for k, st in zip(source.keys, source.steady, strict=True) if st]
    if not setting.steady_check or not steady:
        return None
    if out["steady"]:
        return bool(out["found_0.5"])
    rng = np.random.default_rng([seed, noise_sim.stable_seed("steady", source.name)])
    key = steady[rng.permutation(len(steady))[index % len(steady)]]
    verdicts = _time_verdicts(_compare(pair, [_slowed(d, {key: 1.5}) for d in pair.head]))
    return key in verdicts and verdicts[key].verdict == "regression"


def _anchor_counts(pair: Pair, keys: Sequence[str]) -> dict[str, dict[str, int]]:
    """Each anchor's A/A alarms and, every benchmark slowed in turn, what it found."""
    counts: dict[str, dict[str, int]] = {}
    for name, rule in anchors.ANCHORS.items():
        tally = {"aa_alarms": 0, "aa_results": 0, **{f"found_{e}": 0 for e in EFFECTS}}
        for key in keys:
            base = [s for d in pair.base for s in _samples(d, key)]
            head = [s for d in pair.head for s in _samples(d, key)]
            history = [
                run.medians[(key, "time")] for run in pair.history if (key, "time") in run.medians
            ] or None
            tally["aa_results"] += 1
            tally["aa_alarms"] += rule(base, head, history) in ALARMS
            for effect in EFFECTS:
                slowed = [s * (1 + effect) for s in head]
                tally[f"found_{effect}"] += rule(base, slowed, history) == "regression"
        counts[name] = tally
    return counts


# --- the oracle bound --------------------------------------------------------------------------


def oracle(source: Source, setting: Setting, *, seed: int, draws: int) -> dict[str, Any]:
    """The best power a cutoff on the sides' median ratio reaches at the allowed false alarms.

    d = log(head median / base median) per benchmark of every A/A pair (a side's median is the
    median of its rounds' medians; with history, base pools the history and the base round). A
    cutoff on d spends exactly `setting.allowed` on the upper tail, and power is P(d + effect >
    cutoff). Three rules, the best counted: one cutoff for all benchmarks on d as is
    (`one_cutoff`), the same on d less its median over the suite (the pair's shared speed, which
    any rule can see: `one_cutoff_adjusted`), and one cutoff per benchmark on that (a rule that
    knows each benchmark's own noise: `per_benchmark`, the bound that counts on a suite whose
    benchmarks differ, e.g. a few with process modes).
    """
    logs = source.aa_logs(setting, seed=seed, draws=draws)
    base_n = setting.history_rounds_total + len(setting.base)
    d = np.median(logs[:, base_n:], axis=1) - np.median(logs[:, :base_n], axis=1)
    adjusted = d - np.median(d, axis=1, keepdims=True)
    out: dict[str, Any] = {"pairs": len(d)}
    for effect in EFFECTS:
        shift = math.log1p(effect)
        rules = {
            "one_cutoff": _power(d.ravel(), setting.allowed, shift),
            "one_cutoff_adjusted": _power(adjusted.ravel(), setting.allowed, shift),
            "per_benchmark": _per_benchmark(adjusted, setting.allowed, shift),
        }
        out.update({f"{rule}_{effect}": value for rule, value in rules.items()})
        out[f"power_{effect}"] = max(rules.values())
        out[f"contract_{effect}"] = max(_contract(d, shift), _contract(adjusted, shift))
        # The same on the raw d alone: the ceiling for a rule that, as perfgate must, never
        # subtracts the suite's shared shift from a benchmark (docs/comparator.md).
        out[f"contract_raw_{effect}"] = _contract(d, shift)
    if source.steady.any():
        steady = adjusted[:, source.steady]
        shift = math.log1p(0.5)
        out["steady_power_0.5"] = max(
            _power(steady.ravel(), setting.allowed, shift),
            _per_benchmark(steady, setting.allowed, shift),
        )
    return out


# The verdict rule (docs/architecture.md §5): Benjamini-Hochberg at this alpha and the whole
# 95% CI beyond this.
CONTRACT_ALPHA, CONTRACT_THRESHOLD = 0.05, 0.03


def _contract(d: np.ndarray, shift: float) -> float:
    """The best power of a rule that keeps perfgate's verdict rule, knowing the A/A data.

    A regression needs its 95% CI wholly beyond +3% and a Benjamini-Hochberg q below 0.05
    (one changed benchmark among M: p below 0.05 / M). Knowing each benchmark's A/A
    distribution of d exactly, the narrowest honest CI reaches that distribution's central
    95% below the estimate and the smallest honest p is its tail beyond it; power is how often
    a slowed d clears both. The oracle above spends a fixed false-alarm budget with no
    threshold; this is the ceiling for any comparator that keeps the contract.
    """
    centred = d - np.median(d, axis=0)
    spread = np.abs(centred)
    half = np.quantile(spread, 0.95, axis=0)
    cut = np.quantile(spread, 1 - CONTRACT_ALPHA / d.shape[1], axis=0)
    moved = d + shift
    return float(np.mean((moved - half > math.log1p(CONTRACT_THRESHOLD)) & (moved > cut)))


def _per_benchmark(d: np.ndarray, allowed: float, shift: float) -> float:
    return float(np.mean([_power(d[:, j], allowed, shift) for j in range(d.shape[1])]))


def _power(d: np.ndarray, allowed: float, shift: float) -> float:
    cutoff = float(np.quantile(d, 1 - allowed))
    return float(np.mean(d + shift > cutoff))


# --- running and reporting ---------------------------------------------------------------------

_SOURCES: dict[str, Source] = {}


def _task(job: tuple[str, str, int, int, int]) -> tuple[str, str, int, dict[str, Any], float]:
    name, short, index, pairs, seed = job
    setting = RUN_SETTINGS[short]
    began = time.process_time()
    try:
        counts = evaluate_pair(_SOURCES[name], setting, index, pairs=pairs, seed=seed)
    except Exception:
        counts = {"error": traceback.format_exc()}
    # CPU time, not wall time: what a pair costs whatever else the machine is running.
    return name, short, index, counts, time.process_time() - began


@dataclass
class Row:
    source: Source
    setting: Setting
    pairs: int
    outcomes: list[dict[str, Any]] = field(default_factory=list)
    oracle: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        good = [o for o in self.outcomes if "error" not in o]
        out: dict[str, Any] = {
            "data": self.source.name,
            "kind": self.source.kind,
            "setting": self.setting.name,
            "pairs": len(good),
            "errors": len(self.outcomes) - len(good),
            "cpu_seconds": round(self.seconds, 1),
            "oracle": self.oracle,
        }
        if not good:
            return out
        results = sum(o["aa_results"] for o in good)
        alarms = sum(o["aa_alarms"] for o in good)
        out["false_alarms"] = alarms / max(results, 1)
        out["aa_alarms"], out["aa_results"] = alarms, results
        out["false_alarms_ci"] = rate_interval(alarms, results)
        out["aa_cluster_sums"] = job_cluster_sums(good)
        out["false_alarms_ci_clustered"] = clustered_interval(
            alarms, results, [out["aa_cluster_sums"]]
        )
        out["pairs_with_alarm"] = float(np.mean([o["aa_alarms"] > 0 for o in good]))
        out["flag_rate"] = sum(o["aa_flags"] for o in good) / max(results, 1)
        # Older files lack these two; a row without them shows "–".
        if all("aa_gate_fails" in o for o in good):
            out["aa_gate_fails"] = sum(o["aa_gate_fails"] for o in good)
            out["aa_suite_changed"] = sum(o["aa_suite_changed"] for o in good)
        for effect in EFFECTS:
            out[f"power_{effect}"] = float(np.mean([o[f"found_{effect}"] for o in good]))
            out[f"flagged_{effect}"] = float(np.mean([o[f"flagged_{effect}"] for o in good]))
            out[f"collateral_{effect}"] = sum(o[f"collateral_{effect}"] for o in good)
        steady = [o["steady_found_0.5"] for o in good if o["steady_found_0.5"] is not None]
        out["steady_power_0.5"] = float(np.mean(steady)) if steady else None
        out["steady_pairs"] = len(steady)
        out["suite_fails"] = float(np.mean([o["suite_fails"] for o in good]))
        out["suite_untouched_changed"] = sum(o["suite_untouched_changed"] for o in good)
        target = self.setting.target_effect
        bound = self.oracle.get(f"power_{target}")
        out["target_effect"] = target
        out["vs_oracle"] = out[f"power_{target}"] / bound if bound else None
        contract = self.oracle.get(f"contract_{target}")
        out["vs_contract"] = out[f"power_{target}"] / contract if contract else None
        anchor_out = {}
        for name in anchors.ANCHORS:
            tallies = [o["anchors"][name] for o in good]
            tried = sum(t["aa_results"] for t in tallies)
            anchor_out[name] = {
                "false_alarms": sum(t["aa_alarms"] for t in tallies) / max(tried, 1),
                **{
                    f"power_{e}": sum(t[f"found_{e}"] for t in tallies) / max(tried, 1)
                    for e in EFFECTS
                },
            }
        out["anchors"] = anchor_out
        return out


def rate_interval(hits: float, trials: float, level: float = 0.95) -> tuple[float, float]:
    """The exact (Clopper-Pearson) `level` interval of a rate of `hits` in `trials` (counts, or
    effective counts: `clustered_interval`).

    A row's false alarms are a few alarms in a few hundred results: 3 of 260 (1.2%) is as
    consistent with a true rate of 0.3% as with 3%, and the interval says so.
    """
    if trials <= 0:
        return (0.0, 1.0)
    tail = (1.0 - level) / 2
    low = float(scipy_stats.beta.ppf(tail, hits, trials - hits + 1)) if hits > 0 else 0.0
    high = float(scipy_stats.beta.ppf(1 - tail, hits + 1, trials - hits)) if hits < trials else 1.0
    return (low, high)


def cluster_sums(outcomes: Sequence[Mapping[str, Any]], by: str | None) -> list[float]:
    """A/A alarms A_g and results N_g summed per job (`by`: "base_job", "head_job"; None: per
    pair), kept as Σ A_g², Σ A_g N_g, Σ N_g² and the number of jobs: enough to rebuild the
    clustered variance at any pooled rate (`clustered_interval`)."""
    groups: dict[Any, list[int]] = {}
    for index, outcome in enumerate(outcomes):
        group = groups.setdefault(index if by is None else outcome[by], [0, 0])
        group[0] += int(outcome["aa_alarms"])
        group[1] += int(outcome["aa_results"])
    a, n = np.asarray(list(groups.values()), dtype=np.float64).reshape(-1, 2).T
    return [float(np.sum(a * a)), float(np.sum(a * n)), float(np.sum(n * n)), float(len(groups))]


def job_cluster_sums(outcomes: Sequence[Mapping[str, Any]]) -> dict[str, list[float]]:
    """`cluster_sums` of a row's pairs by base job, by head job and by pair."""
    return {
        "base": cluster_sums(outcomes, "base_job"),
        "head": cluster_sums(outcomes, "head_job"),
        "pair": cluster_sums(outcomes, None),
    }


def clustered_interval(
    alarms: int,
    results: int,
    sums: Sequence[Mapping[str, Sequence[float]]],
    level: float = 0.95,
) -> tuple[float, float]:
    """The `level` interval of a false-alarm rate whose results are not independent.

    The results of one pair share its jobs, and overlapping pairs of a recorded set share jobs
    too: one disturbed head job is an alarm in every pair that took it. The rate's variance is
    clustered two ways, by base job and by head job (Cameron, Gelbach and Miller: the sum of
    the two one-way variances less the per-pair one; never below either one-way variance), and
    the design effect it implies (never below 1) shrinks the results to an effective count, on
    which the exact interval is taken (Korn and Graubard's rule). `sums` holds each row's
    `cluster_sums` per way; rows are independent of each other, so a pool adds them.
    """
    if results <= 0:
        return (0.0, 1.0)
    rate = alarms / results

    def one_way(way: str) -> float:
        a2, an, n2, groups = (sum(row[way][i] for row in sums) for i in range(4))
        spread = a2 - 2.0 * rate * an + rate * rate * n2
        return groups / max(groups - 1.0, 1.0) * max(spread, 0.0) / results**2

    base, head, pair = one_way("base"), one_way("head"), one_way("pair")
    variance = max(base + head - pair, base, head)
    independent = rate * (1.0 - rate) / results
    effect = max(variance / independent, 1.0) if independent > 0 else 1.0
    effective = results / effect
    return rate_interval(rate * effective, effective, level)


def _process_modes(data: str) -> bool:
    """Whether `data` is a simulated shape with process modes, held apart from the targets."""
    return data.startswith("modes-")


def pooled(summaries: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """False alarms pooled per setting over the simulated shapes (process modes apart, as the
    targets hold them apart) and over the recorded sets: alarms, results, rate and its interval.

    One row of 20 pairs cannot tell a 1% rate from 2%; the pool of a setting's rows can, and it is
    what a user who does not know their runner's noise shape should expect.
    """
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for s in summaries:
        if not s.get("pairs") or "aa_results" not in s:
            continue
        kind = s["kind"]
        if kind == "simulated" and _process_modes(s["data"]):
            kind = "simulated, process modes"
        groups.setdefault((s["setting"], kind), []).append(s)
    out = []
    for (setting, kind), rows in groups.items():
        alarms = sum(int(r["aa_alarms"]) for r in rows)
        results = sum(int(r["aa_results"]) for r in rows)
        out.append(
            {
                "setting": setting,
                "kind": kind,
                "rows": len(rows),
                "alarms": alarms,
                "results": results,
                "false_alarms": alarms / max(results, 1),
                "false_alarms_ci": rate_interval(alarms, results),
                **_pooled_clustered(rows, alarms, results),
                **_pooled_gate(rows),
            }
        )
    return out


def _pooled_clustered(
    rows: Sequence[Mapping[str, Any]], alarms: int, results: int
) -> dict[str, Any]:
    """The pool's clustered interval (only where every row kept its cluster sums)."""
    if not all("aa_cluster_sums" in r for r in rows):
        return {}
    sums = [r["aa_cluster_sums"] for r in rows]
    return {"false_alarms_ci_clustered": clustered_interval(alarms, results, sums)}


def _pooled_gate(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A/A pairs whose gate failed, pooled (only where every row counted them)."""
    if not all("aa_gate_fails" in r for r in rows):
        return {}
    fails = sum(int(r["aa_gate_fails"]) for r in rows)
    pairs = sum(int(r["pairs"]) for r in rows)
    return {"gate_fails": fails, "pairs": pairs, "gate_fails_ci": rate_interval(fails, pairs)}


def misses(summary: Mapping[str, Any], setting: Setting) -> list[str]:
    """What a row misses of the targets, in words (empty when it meets them all).

    False alarms <= 1% with rounds or history, <= 3% with one round (with or without a
    calibration record; process-mode shapes are reported, not held to it); power >= 80% of the
    oracle's at +10% with three rounds and at +25% with one round (with calibration: one round's
    oracle); 60% of the suite +25% fails the gate >= 95% of the time with no untouched benchmark
    changed; one round (with or without calibration) finds +50% of a steady benchmark >= 95% of
    the time (gauss-* shapes and recorded data; the oracle's figure is quoted when even it
    cannot).
    """
    if summary.get("errors"):
        return [f"{summary['errors']} pairs raised"]
    if not summary["pairs"]:
        return []
    out = []
    name = summary["data"]
    if not _process_modes(name) and summary["false_alarms"] > setting.allowed:
        text = f"false alarms {summary['false_alarms']:.1%} > {setting.allowed:.0%}"
        if "false_alarms_ci" in summary:
            low, high = summary["false_alarms_ci"]
            text += (
                f" ({summary['aa_alarms']} of {summary['aa_results']}; 95% CI {low:.1%}–{high:.1%}"
            )
            if "false_alarms_ci_clustered" in summary:
                c_low, c_high = summary["false_alarms_ci_clustered"]
                text += f", clustered by job {c_low:.1%}–{c_high:.1%}"
            text += ")"
        out.append(text)
    ratio = summary["vs_oracle"]
    if setting.power_target and ratio is not None and ratio < 0.8:
        out.append(
            f"+{setting.target_effect:.0%} found {summary[f'power_{setting.target_effect}']:.1%}"
            f" = {ratio:.0%} of the oracle's "
            f"{summary['oracle'][f'power_{setting.target_effect}']:.1%} (< 80%)"
        )
    if summary["suite_fails"] < 0.95:
        out.append(f"60% of the suite +25%: gate fails only {summary['suite_fails']:.0%}")
    if summary["suite_untouched_changed"]:
        out.append(f"60% of the suite +25%: {summary['suite_untouched_changed']} untouched changed")
    steady = summary.get("steady_power_0.5")
    checked = name.startswith("gauss-") or summary["kind"] == "recorded"
    if setting.steady_check and checked and steady is not None and steady < 0.95:
        bound = summary["oracle"].get("steady_power_0.5")
        text = f"+50% of a steady benchmark found {steady:.1%} (< 95%)"
        if bound is not None and bound < 0.95:
            text += f", but the oracle reaches only {bound:.1%}"
        out.append(text)
    return out


_KINDS = ("simulated", "simulated, process modes", "recorded")


def _pool_cell(alarms: int, results: int, exact: Sequence[float], clustered: Any) -> str:
    cell = (
        f"{alarms:,} / {results:,} = {alarms / max(results, 1):.2%} ({exact[0]:.2%}–{exact[1]:.2%}"
    )
    if clustered is not None:
        cell += f"; by job {clustered[0]:.2%}–{clustered[1]:.2%}"
    return cell + ")"


def render_pooled_by_kind(pools: Sequence[Mapping[str, Any]]) -> str:
    """The pooled false alarms and gate failures as two tables, a column per kind of data."""
    by = {(p["setting"], p["kind"]): p for p in pools}
    counts = {kind: {p["rows"] for p in pools if p["kind"] == kind} for kind in _KINDS}
    head = "| setting | " + " | ".join(
        f"{kind} ({max(counts[kind], default=0)} {'sets' if kind == 'recorded' else 'shapes'})"
        for kind in _KINDS
    )
    out = []
    for title, cell in (
        (
            "false alarms: alarms / A/A time results = rate (exact 95% interval; clustered by job)",
            lambda p: _pool_cell(
                p["alarms"],
                p["results"],
                p["false_alarms_ci"],
                p.get("false_alarms_ci_clustered"),
            ),
        ),
        (
            "A/A pairs whose gate failed (exact 95% interval)",
            lambda p: (
                f"{p['gate_fails']} / {p['pairs']} = {p['gate_fails'] / max(p['pairs'], 1):.1%} "
                f"({p['gate_fails_ci'][0]:.1%}–{p['gate_fails_ci'][1]:.1%})"
                if "gate_fails" in p
                else "–"
            ),
        ),
    ):
        out += [f"**{title}**", "", head + " |", "|---" * (len(_KINDS) + 1) + "|"]
        for setting in _known_settings():
            if not any((setting.name, k) in by for k in _KINDS):
                continue
            cells = [
                cell(by[(setting.name, k)]) if (setting.name, k) in by else "–" for k in _KINDS
            ]
            out.append(f"| {setting.name} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def over_target(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The rows over their false-alarm target (process-mode shapes apart), in words."""
    settings = {s.name: s for s in _known_settings()}
    out = []
    for s in summaries:
        setting = settings.get(s["setting"])
        if setting is None or not s.get("pairs") or "false_alarms" not in s:
            continue
        found = [m for m in misses(s, setting) if m.startswith("false alarms")]
        out += [f"- {s['data']} / {s['setting']}: {m}" for m in found]
    return out


def print_pooled(paths: Sequence[Path]) -> None:
    """`pooled`: docs/comparator.md's pooled tables and the rows over target, from saved files."""
    summaries: list[dict[str, Any]] = []
    for path in paths:
        document = json.loads(path.read_text())
        version = document.get("comparator", {})
        print(f"{path}: {len(document['rows'])} rows, comparator {version.get('git_head')}")
        summaries += document["rows"]
    print()
    print(render_pooled_by_kind(pooled(summaries)))
    rows = over_target(summaries)
    print(f"Rows over their false-alarm target: {len(rows)} of {len(summaries)}")
    print("\n".join(rows) or "- none")


def print_table(paths: Sequence[Path]) -> None:
    """`table`: the saved files' rows, in the files' order, as `eval`'s markdown table."""
    rows: list[dict[str, Any]] = []
    for path in paths:
        rows += json.loads(path.read_text())["rows"]
    print(render(rows))


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _gate_cell(summary: Mapping[str, Any]) -> str:
    if "aa_gate_fails" not in summary:
        return "–"
    return f"{summary['aa_gate_fails']} / {summary['aa_suite_changed']}"


def render(summaries: Sequence[Mapping[str, Any]]) -> str:
    short = {
        "asv": "asv",
        "codspeed": "CodSpeed",
        "conbench": "conbench",
        "pytest-benchmark": "pytest-bm",
    }
    head = (
        "| data | setting | pairs | false alarms | +10% | +25% | +50% | oracle (effect) | "
        "perfgate/oracle | contract bound (nothing subtracted) | perfgate/bound | "
        "60% suite: fails / untouched changed | flag A/A | A/A pairs: gate fails / suite changed | "
        + " | ".join(f"{label} FA / +25%" for label in short.values())
        + " |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for s in summaries:
        if not s["pairs"]:
            lines.append(f"| {s['data']} | {s['setting']} | 0 ({s['errors']} errors) |" + " |" * 16)
            continue
        target = s["target_effect"]
        anchor_cells = [
            f"{s['anchors'][name]['false_alarms']:.1%} / {s['anchors'][name]['power_0.25']:.0%}"
            for name in short
        ]
        ratio = "–" if s["vs_oracle"] is None else f"{s['vs_oracle']:.0%}"
        contract = s.get("vs_contract")
        bound = _pct(s["oracle"].get(f"contract_{target}"))
        raw = s["oracle"].get(f"contract_raw_{target}")
        if raw is not None:
            bound += f" ({_pct(raw)})"
        contract_cells = f"{bound} | {'–' if contract is None else f'{contract:.0%}'}"
        lines.append(
            f"| {s['data']} | {s['setting']} | {s['pairs']} | {s['false_alarms']:.1%} | "
            f"{s['power_0.1']:.1%} | {s['power_0.25']:.1%} | {s['power_0.5']:.1%} | "
            f"{_pct(s['oracle'].get(f'power_{target}'))} (+{target:.0%}) | {ratio} | "
            f"{contract_cells} | "
            f"{s['suite_fails']:.0%} / {s['suite_untouched_changed']} | {s['flag_rate']:.1%} | "
            f"{_gate_cell(s)} | " + " | ".join(anchor_cells) + " |"
        )
    return "\n".join(lines)


def _comparator_version() -> dict[str, Any]:
    """Which comparator gave the numbers: git HEAD and a hash of the stats sources as they are."""
    stats = ROOT / "service" / "perfgate" / "stats"
    digest = hashlib.sha256()
    for path in sorted(stats.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        head = None
    return {"git_head": head, "stats_sources_sha256": digest.hexdigest()}


def _jobs(rows: Sequence[Row], seed: int) -> Iterator[tuple[str, str, int, int, int]]:
    for row in rows:
        for index in range(row.pairs):
            yield (row.source.name, row.setting.short, index, row.pairs, seed)


def run_eval(rows: list[Row], *, workers: int, seed: int) -> None:
    by_id = {(r.source.name, r.setting.short): r for r in rows}
    remaining = {key: row.pairs for key, row in by_id.items()}
    total, done, began = sum(remaining.values()), 0, time.perf_counter()
    jobs = list(_jobs(rows, seed))
    if workers > 1:
        pool = multiprocessing.get_context("fork").Pool(workers)
        results: Iterator[Any] = pool.imap_unordered(_task, jobs)
    else:
        pool, results = None, map(_task, jobs)
    try:
        for name, short, _, counts, seconds in results:
            row = by_id[(name, short)]
            row.outcomes.append(counts)
            row.seconds += seconds
            if "error" in counts and sum("error" in o for o in row.outcomes) == 1:
                print(f"error in {name} / {row.setting.name}:\n{counts['error']}", file=sys.stderr)
            done += 1
            remaining[(name, short)] -= 1
            if not remaining[(name, short)]:
                print(
                    f"[{done}/{total} pairs, {time.perf_counter() - began:.0f} s] {name} / "
                    f"{row.setting.name}: {row.pairs} pairs, {row.seconds:.0f} cpu-s",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        if pool is not None:
            pool.close()
            pool.join()


def _build_sources(args: argparse.Namespace) -> list[Source]:
    shapes = noise_sim.SHAPES if args.shapes == ["all"] else [s for s in args.shapes if s != "none"]
    sources: list[Source] = [
        SimSource(s, m=args.benchmarks, seed=args.seed, max_gap=args.max_gap) for s in shapes
    ]
    if args.data == ["all"]:
        chosen = recordings.recordings()
    else:
        chosen = [recordings.find(d) for d in args.data if d != "none"]
    for recording in chosen:
        print(f"loading {recording.path}", file=sys.stderr, flush=True)
        sources.append(RecordedSource(recording))
    return sources


def _pairs_for(setting: Setting, args: argparse.Namespace, source: Source) -> int:
    if isinstance(source, RecordedSource):
        wanted = int(args.pairs if args.pairs is not None else args.pairs_recorded)
        return min(wanted, len(source.placements(setting)))
    return int(args.pairs if args.pairs is not None else args.pairs_sim)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--runs", type=int, default=40)
    rec.add_argument("--threads", type=int, default=1)
    rec.add_argument("--rounds", type=int, default=1, help="rounds per job (perfgate run --rounds)")
    rec.add_argument("--max-time", type=float, default=0.5)
    rec.add_argument("--out", type=Path, default=DATA)
    rec.add_argument(
        "--system-malloc", action="store_true", help="leave glibc's malloc thresholds dynamic"
    )
    pool_parser = sub.add_parser("pooled", help="the pooled tables of saved eval files")
    pool_parser.add_argument("files", type=Path, nargs="+")
    table_parser = sub.add_parser("table", help="the rows of saved eval files as one table")
    table_parser.add_argument("files", type=Path, nargs="+")
    for command in ("eval", "bound"):
        ev = sub.add_parser(command)
        ev.add_argument(
            "--shapes", nargs="+", default=["all"], help="noise_sim shapes, 'all' or 'none'"
        )
        ev.add_argument(
            "--data",
            nargs="+",
            default=["all"],
            help="recorded sets (names in bench/data/comparator or archives), 'all' or 'none'",
        )
        ev.add_argument(
            "--settings",
            nargs="+",
            default=[s.short for s in SETTINGS],
            choices=[s.short for s in SETTINGS],
        )
        ev.add_argument("--pairs", type=int, default=None, help="pairs per row (every source)")
        ev.add_argument("--pairs-sim", type=int, default=20, help="pairs per simulated row")
        ev.add_argument(
            "--pairs-recorded",
            type=int,
            default=12,
            help="pairs per recorded row (at most what the data allows; they cost ~3x)",
        )
        ev.add_argument("--benchmarks", type=int, default=13, help="M, simulated suite size")
        ev.add_argument("--max-gap", type=int, default=8, help="simulated rounds between sides")
        ev.add_argument("--oracle-draws", type=int, default=4000)
        ev.add_argument("--seed", type=int, default=0)
        ev.add_argument("--workers", type=int, default=2)
        ev.add_argument("--quick", action="store_true", help="a small smoke run")
        ev.add_argument(
            "--steps-left-out",
            action="store_true",
            help="run the settings with a step in history on the same pairs without it (what "
            "the steps themselves cost)",
        )
        ev.add_argument("--out", type=Path, help=f"default {OUT} ({QUICK_OUT.name} with --quick)")
    args = parser.parse_args()
    if args.command == "pooled":
        print_pooled(args.files)
        return
    if args.command == "table":
        print_table(args.files)
        return
    if args.command == "record":
        record(
            args.runs,
            args.max_time,
            args.threads,
            args.rounds,
            args.out,
            system_malloc=args.system_malloc,
        )
        return
    if args.quick:
        if args.shapes == ["all"]:
            args.shapes = ["gauss-1", "modes-p0.3-1.3x", "common-60"]
        if args.data == ["all"]:
            args.data = ["interleaved"]
        if args.pairs is None:
            args.pairs = 6
        args.oracle_draws = min(args.oracle_draws, 1000)
    if args.out is None:
        args.out = QUICK_OUT if args.quick else OUT
    if args.steps_left_out:
        _leave_out_steps()
    began = time.perf_counter()
    # The comparator is imported (and its sources hashed) before the workers fork, so that every
    # pair is judged by the code the JSON names even if the files change during the run.
    import perfgate.stats.compare_documents  # noqa: F401

    version = _comparator_version()
    sources = _build_sources(args)
    settings = [s for s in RUN_SETTINGS.values() if s.short in args.settings]
    rows = [
        Row(source, setting, _pairs_for(setting, args, source))
        for source in sources
        for setting in settings
        if source.can(setting)
    ]
    bounds: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        short = row.setting.oracle_of or row.setting.short
        held_to = next(s for s in SETTINGS if s.short == short)
        key = (row.source.name, held_to.short)
        if key not in bounds:
            bounds[key] = oracle(row.source, held_to, seed=args.seed, draws=args.oracle_draws)
        row.oracle = bounds[key]
    if args.command == "bound":
        for row in rows:
            cells = ", ".join(
                f"+{e:.0%} {row.oracle[f'power_{e}']:.1%} (one cutoff "
                f"{row.oracle[f'one_cutoff_{e}']:.1%}, per benchmark "
                f"{row.oracle[f'per_benchmark_{e}']:.1%})"
                for e in EFFECTS
            )
            contract = ", ".join(
                f"+{e:.0%} {row.oracle[f'contract_{e}']:.1%} (nothing subtracted "
                f"{row.oracle[f'contract_raw_{e}']:.1%})"
                for e in EFFECTS
            )
            print(
                f"{row.source.name:16s} {row.setting.name:22s} {row.oracle['pairs']:5d} pairs, "
                f"false alarms {row.setting.allowed:.0%}: {cells}; under the verdict contract: "
                f"{contract}"
            )
        return
    _SOURCES.update({s.name: s for s in sources})
    run_eval(rows, workers=args.workers, seed=args.seed)
    summaries = [row.summary() for row in rows]
    for summary, row in zip(summaries, rows, strict=True):
        summary["misses"] = misses(summary, row.setting)
    elapsed = time.perf_counter() - began
    print(render(summaries))
    print("\nRows that miss a target:")
    missed = [s for s in summaries if s["misses"]]
    for s in missed:
        print(f"- {s['data']} / {s['setting']}: {'; '.join(s['misses'])}")
    if not missed:
        print("- none")
    pools = pooled(summaries)
    print("\nPooled per setting:\n")
    print(render_pooled_by_kind(pools))
    cpu = sum(row.seconds for row in rows)
    print(
        f"\n{len(rows)} rows, {sum(s['pairs'] for s in summaries)} pairs in {elapsed:.0f} s "
        f"({cpu:.0f} CPU-seconds of comparisons on {args.workers} workers)"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "generated_at": datetime.now(timezone.utc).isoformat(),
        "seconds": round(elapsed, 1),
        "cpu_seconds": round(cpu, 1),
        "comparator": version,
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "steady": {
            s.name: [k for k, st in zip(s.keys, s.steady, strict=True) if st] for s in sources
        },
        "rows": summaries,
        "pooled": pools,
    }
    args.out.write_text(json.dumps(document, indent=1, default=float) + "\n")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    main()
