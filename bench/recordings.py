"""The recorded datasets under bench/data/comparator/: one `NAME.tar.xz` each, read in place.

A dataset is the jobs one recording session wrote (`run-NNN.json`, results@1 documents of identical
code), plus its notes (`busy.json`: each job's slowdown of a fixed probe loop while it ran;
`eval.json`: the figures measured on it when it was recorded; `busy/`: jobs set aside because the
machine was busy). The archive holds them as compact JSON under those names; `SHA256SUMS` beside
the archives is checked with `sha256sum -c` and by tests/test_recordings.py.

    python bench/recordings.py pack FOLDER [--out bench/data/comparator]   # a recorded folder
    python bench/recordings.py list [--noise]                              # what is there

`list --noise` adds how far each set's jobs move: the typical benchmark (and the range over
benchmarks) after each job's machine factor, and the machine factor itself.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import math
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from perfgate.results import ResultsDocument, parse_document_bytes

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "bench" / "data" / "comparator"
SUMS = "SHA256SUMS"
SUFFIX = ".tar.xz"


@dataclass(frozen=True)
class Recording:
    """One archived dataset: its jobs in recording order and its notes."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name.removesuffix(SUFFIX)

    @cached_property
    def members(self) -> dict[str, bytes]:
        """Every file of the archive by its name (a few MB at most, read once)."""
        with tarfile.open(self.path, "r:xz") as tar:
            return {m.name: _read(tar, m) for m in tar.getmembers() if m.isfile()}

    def job_names(self) -> list[str]:
        """The jobs' file names in recording order (not those set aside under busy/)."""
        return sorted(n for n in self.members if "/" not in n and n.startswith("run-"))

    def jobs(self) -> Iterator[ResultsDocument]:
        """The jobs, parsed by the same validator as an upload."""
        for name in self.job_names():
            yield parse_document_bytes(self.members[name], source=f"{self.path}:{name}")

    def note(self, name: str) -> Any:
        """A JSON note (`busy.json`, `eval.json`) or None when the dataset has none."""
        raw = self.members.get(name)
        return None if raw is None else json.loads(raw)


def _read(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    handle = tar.extractfile(member)
    if handle is None:
        raise ValueError(f"{member.name}: not a regular file")
    return handle.read()


def recordings(folder: Path = RECORDED) -> list[Recording]:
    return [Recording(p) for p in sorted(folder.glob(f"*{SUFFIX}"))]


def find(name: str) -> Recording:
    """A dataset by name (under bench/data/comparator) or by the path of its archive."""
    path = Path(name)
    if not path.exists():
        path = RECORDED / f"{name.removesuffix(SUFFIX)}{SUFFIX}"
    if not path.is_file():
        known = ", ".join(r.name for r in recordings())
        raise SystemExit(f"error: no recorded dataset {name!r} (known: {known})")
    return Recording(path)


def pack(folder: Path, out: Path) -> Path:
    """Write FOLDER's JSON files as `out/NAME.tar.xz`, byte-for-byte reproducible."""
    archive = out / f"{folder.name}{SUFFIX}"
    with tarfile.open(archive, "w:xz", preset=9) as tar:
        for path in sorted(folder.rglob("*.json")):
            # Compact and key order kept: the documents' content hashes do not change.
            data = json.dumps(json.loads(path.read_text()), separators=(",", ":")).encode()
            info = tarfile.TarInfo(path.relative_to(folder).as_posix())
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    write_sums(out)
    return archive


@dataclass(frozen=True)
class JobSpreads:
    """How far a set's jobs move, as log standard deviations."""

    #: Each benchmark's spread from job to job after each job's machine factor.
    benchmarks: np.ndarray
    #: The machine factors' spread, less what the median of the benchmarks' own spreads adds
    #: to it (pi/2 s^2 / M for M benchmarks of spread s).
    machine: float


def job_spreads(logs: np.ndarray) -> JobSpreads:
    """From a (jobs x benchmarks) matrix of log medians: a job's machine factor is the median
    over benchmarks of how far each sat from its own median, as the comparator's history takes
    it before looking for steps (a recorded set is identical code: it has none)."""
    deviations = logs - np.median(logs, axis=0)
    factors = np.median(deviations, axis=1)
    own = (deviations - factors[:, None]).std(axis=0, ddof=1)
    share = math.pi / 2 * float(np.median(own)) ** 2 / logs.shape[1]
    return JobSpreads(own, math.sqrt(max(float(factors.var(ddof=1)) - share, 0.0)))


def _time_logs(rec: Recording) -> np.ndarray:
    """Each job's log median time per benchmark (all its rounds' samples), benchmarks that
    every job timed."""
    rows: list[dict[str, float]] = []
    for job in rec.jobs():
        row = {}
        for bench in job.benchmarks:
            time = bench.metrics.get("time")
            if not bench.error and time is not None and time.samples:
                row[bench.key] = math.log(float(np.median(time.samples)))
        rows.append(row)
    keys = sorted(set.intersection(*(set(r) for r in rows)))
    return np.asarray([[r[k] for k in keys] for r in rows])


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_sums(folder: Path) -> None:
    lines = [f"{sha256(r.path)}  {r.path.name}\n" for r in recordings(folder)]
    (folder / SUMS).write_text("".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    packer = sub.add_parser("pack", help="archive a recorded folder and refresh SHA256SUMS")
    packer.add_argument("folder", type=Path)
    packer.add_argument("--out", type=Path, default=RECORDED)
    lister = sub.add_parser("list", help="the datasets, their jobs and sizes")
    lister.add_argument("--noise", action="store_true", help="how far each set's jobs move")
    args = parser.parse_args()
    if args.command == "pack":
        print(pack(args.folder, args.out))
        return
    for rec in recordings():
        jobs = rec.job_names()
        line = f"{rec.name:22} {len(jobs):3} jobs  {rec.path.stat().st_size / 1e6:5.2f} MB"
        if args.noise:
            spreads = job_spreads(_time_logs(rec))
            own = np.expm1(spreads.benchmarks)
            line += (
                f"  a job: typical benchmark {np.median(own):5.1%} "
                f"({own.min():.1%}-{own.max():.1%}), machine {math.expm1(spreads.machine):.1%}"
            )
        print(line)


if __name__ == "__main__":
    main()
