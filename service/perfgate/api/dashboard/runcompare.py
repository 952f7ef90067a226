"""What a run is compared with, and the comparison, as its run page and run lists show it.

A run is compared with its recorded `base_commit` (a pull request's run), falling back to the
nearest earlier run of the project's default branch; otherwise with the previous commit
measured on its own branch. Runs of the same commit are pooled and the base branch's history
feeds the noise model, as in `perfgate compare`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from perfgate.api.dashboard import page_data
from perfgate.errors import NotFoundError, PerfgateError
from perfgate.sides import Side, compare_sides
from perfgate.stats.calibration import Calibration
from perfgate.stats.model import Comparison
from perfgate.stats.noise import PastRun
from perfgate.stats.two_sample import CompareSettings
from perfgate.store import catalog, compare_in_store
from perfgate.store.run_lookup import default_branch


def base_side(
    session: Session, *, project_id: int, run: catalog.RunSummary, head: Side
) -> tuple[Side | None, str | None]:
    """What a run is compared with: its recorded base commit, else the previous commit."""
    fallback = default_branch(session, project_id=project_id)
    if run.base_commit:
        try:
            side = compare_in_store.resolve_side(
                session,
                project_id=project_id,
                ref=run.base_commit,
                fallback_branch=fallback,
                before=head.started_at,
            )
        except NotFoundError as exc:
            return None, str(exc)
        return side, None
    if not run.branch:
        return None, "this run names no branch and no base commit: nothing to compare it with"
    previous = page_data.previous_commit(
        session,
        project_id=project_id,
        branch=run.branch,
        before=head.started_at,
        other_than=run.commit,
    )
    if previous is None:
        return None, f"no earlier commit on {run.branch} to compare this run with"
    side = compare_in_store.resolve_side(session, project_id=project_id, ref=previous)
    side.label = side.label or f"previous commit on {run.branch}"
    return side, None


@dataclass
class Inputs:
    """Everything a comparison is computed from, loaded; `key` names it without the samples."""

    base: Side
    head: Side
    history: list[PastRun]
    calibration: Calibration | None

    @property
    def key(self) -> tuple[object, ...]:
        # The same runs on each side, the same history and calibration: the same comparison.
        return (
            tuple(sorted(d.run.id for d in self.base.documents)),
            tuple(sorted(d.run.id for d in self.head.documents)),
            self.base.label,
            tuple(p.commit for p in self.history),
            (self.calibration.commit, self.calibration.started_at) if self.calibration else None,
        )

    def compare(self) -> Comparison:
        return compare_sides(
            self.base,
            self.head,
            settings=CompareSettings(),
            history=self.history,
            calibration=self.calibration,
        )


def inputs(session: Session, base: Side, head: Side) -> Inputs:
    base = compare_in_store.require_documents(base, "base")
    head = compare_in_store.require_documents(head, "head")
    return Inputs(
        base=base,
        head=head,
        history=compare_in_store.history_for(session, base=base),
        calibration=compare_in_store.calibration_for(session, base=base),
    )


def compare(session: Session, base: Side, head: Side) -> Comparison:
    return inputs(session, base, head).compare()


def prepare(session: Session, project_id: int, run: catalog.RunSummary) -> Inputs | str:
    """A run's comparison inputs, or why it has none (a line for the run lists)."""
    try:
        head = compare_in_store.resolve_side(session, project_id=project_id, ref=run.commit)
        base, note = base_side(session, project_id=project_id, run=run, head=head)
        if base is None:
            return note or "nothing to compare with"
        return inputs(session, base, head)
    except PerfgateError as exc:
        return str(exc)
