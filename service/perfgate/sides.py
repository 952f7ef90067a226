"""The two sides of a comparison, and comparing them with the evidence about the runner.

A side is the runs of one commit: a results file, a folder of them (rounds measured alternately
with the other side's), or runs the store holds (`store.compare_in_store` resolves those). Comparing
two files needs nothing else: this module imports no store, so `perfgate compare a.json b.json`
gives the same verdict in every folder (docs/architecture.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from perfgate.errors import UsageError
from perfgate.results import ResultsDocument, load_document
from perfgate.stats.calibration import Calibration
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison
from perfgate.stats.noise import PastRun
from perfgate.stats.two_sample import CompareSettings


@dataclass
class Side:
    documents: list[ResultsDocument]
    label: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def started_at(self) -> datetime:
        return min(d.run.started_at for d in self.documents)


def load_side_file(path: Path, *, max_bytes: int) -> Side:
    """A results file, or a folder whose `*.json` files are the runs (rounds) of one commit."""
    if not path.is_dir():
        return Side(documents=[load_document(path, max_bytes=max_bytes)])
    files = sorted(path.glob("*.json"))
    if not files:
        raise UsageError(f"{path}: the folder holds no results files (*.json)")
    documents = [load_document(file, max_bytes=max_bytes) for file in files]
    first, first_file = documents[0].run, files[0]
    seen: dict[str, Path] = {}
    for file, document in zip(files, documents, strict=True):
        run = document.run
        # Pooled as rounds, they must be one commit of one project, and each run counted once.
        if (run.project, run.commit) != (first.project, first.commit):
            raise UsageError(
                f"{file}: project {run.project!r} commit {run.commit[:12]} differs from "
                f"{first_file.name}'s {first.project!r} {first.commit[:12]}; a folder holds "
                "the runs of one commit"
            )
        if run.id in seen:
            raise UsageError(f"{file}: run {run.id} is also {seen[run.id]}; each run counts once")
        seen[run.id] = file
    return Side(documents=documents)


def compare_sides(
    base: Side,
    head: Side,
    *,
    settings: CompareSettings,
    history: list[PastRun],
    calibration: Calibration | None = None,
) -> Comparison:
    warnings = [*base.warnings, *head.warnings]
    if len(history) >= 5:
        warnings.append(
            f"noise model: {len(history)} earlier runs of {base.documents[0].run.branch} on this "
            "runner are evidence for each benchmark's noise and, with the sides measured one "
            "after the other, part of its baseline (the runs since its last change point); its "
            "threshold is at least its run-to-run spread"
        )
    if calibration is not None:
        warnings.append(
            f"noise model: the runner's calibration of {calibration.rounds} rounds "
            f"({calibration.started_at:%Y-%m-%d}) is evidence for each benchmark's noise"
        )
    return compare_documents(
        base.documents,
        head.documents,
        settings=settings,
        history=history,
        calibration=calibration,
        base_label=base.label,
        head_label=head.label,
        warnings=warnings,
    )
