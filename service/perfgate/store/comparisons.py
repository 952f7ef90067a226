"""Use case: compare two sides named by the user (results files, commits or branches in the store).

Runs stored for the same commit are pooled as rounds; earlier runs of the base branch give the
comparator its history noise model; a base commit without data falls back, with a warning, to
the nearest earlier run of the base branch. A base that the store has nothing for (an empty
store, a project it has never seen, no runs of the base commit nor of the base branch before the
head) is NoBaselineError, exit 4: a first PR's state, not a mistake in the input.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import NoBaselineError, NotFoundError, UsageError
from perfgate.results import ResultsDocument, load_document
from perfgate.stats.calibration import Calibration
from perfgate.stats.compare import CompareSettings
from perfgate.stats.comparison import compare_documents
from perfgate.stats.model import Comparison
from perfgate.stats.noise import PastRun
from perfgate.store import queries
from perfgate.store.calibrations import latest_calibration
from perfgate.store.documents import rebuild_document

_COMMITISH = re.compile(r"^[0-9a-fA-F]{4,64}$")


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


def _rebuild(session: Session, refs: list[queries.RunRef]) -> list[ResultsDocument]:
    documents = []
    for ref in refs:
        document = rebuild_document(session, run_id=ref.id)
        if document is not None:
            documents.append(document)
    return documents


def resolve_side(
    session: Session,
    *,
    project_id: int,
    ref: str,
    fallback_branch: str | None = None,
    before: datetime | None = None,
) -> Side:
    """The runs `ref` names: a commit (or unique prefix), else a branch's newest commit."""
    if _COMMITISH.match(ref):
        runs = queries.runs_for_commit(session, project_id=project_id, commit=ref)
        if runs:
            return Side(documents=_rebuild(session, runs))
    if queries.branch_exists(session, project_id=project_id, branch=ref):
        runs = queries.latest_commit_runs(session, project_id=project_id, branch=ref, before=before)
        if runs:
            return Side(documents=_rebuild(session, runs), label=f"latest on {ref}")
    if fallback_branch and _COMMITISH.match(ref):
        runs = queries.latest_commit_runs(
            session, project_id=project_id, branch=fallback_branch, before=before
        )
        if runs:
            return Side(
                documents=_rebuild(session, runs),
                label=f"nearest earlier run of {fallback_branch}",
                warnings=[
                    f"base commit {ref[:12]} has no runs in the store: comparing against the "
                    f"nearest earlier run of {fallback_branch}, commit {runs[0].commit[:12]} "
                    f"({runs[0].started_at:%Y-%m-%d %H:%M} UTC)"
                ],
            )
    if fallback_branch and (_COMMITISH.match(ref) or ref == fallback_branch):
        # Nothing can stand in for the base: the store has no baseline yet (a first PR).
        raise NoBaselineError(
            f"no baseline: base {ref[:12]} has no runs in the store, and {fallback_branch} "
            "has none before the head (runs of the base branch build the baseline)"
        )
    raise NotFoundError(f"{ref!r} is neither a results file nor a commit or branch in the store")


def history_for(sessions: sessionmaker[Session], *, base: Side) -> list[PastRun]:
    """Medians of the base branch's earlier runs on the base's runner class, for the noise model."""
    first = base.documents[0]
    if not first.run.branch:
        return []
    with sessions() as session:
        try:
            project = queries.resolve_project(session, name=first.run.project)
        except NotFoundError:
            return []  # a project the store has never seen has no history
        return queries.history_medians(
            session,
            project_id=project.id,
            branch=first.run.branch,
            before=base.started_at,
            exclude=[d.run.id for d in base.documents],
            fingerprint=str(first.environment.fingerprint),
        )


def calibration_for(sessions: sessionmaker[Session], *, base: Side) -> Calibration | None:
    """The newest calibration record of the base's project and runner class, if any."""
    first = base.documents[0]
    with sessions() as session:
        try:
            project = queries.resolve_project(session, name=first.run.project)
        except NotFoundError:
            return None
        return latest_calibration(
            session, project_id=project.id, fingerprint=str(first.environment.fingerprint)
        )


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


def project_id_for(session: Session, *, name: str | None) -> int:
    return queries.resolve_project(session, name=name).id


def resolve_base(
    session: Session, *, project: str, ref: str, fallback_branch: str, before: datetime
) -> Side:
    """The base side of a comparison whose head is `project`'s: like `resolve_side` with the
    base branch as fallback, and NoBaselineError when the store has never seen the project."""
    try:
        project_id = project_id_for(session, name=project)
    except NotFoundError:
        raise NoBaselineError(
            f"no baseline: the store has no runs of project {project!r} yet, so nothing stands "
            f"in for base {ref[:12]} (runs of {fallback_branch} build the baseline)"
        ) from None
    return resolve_side(
        session, project_id=project_id, ref=ref, fallback_branch=fallback_branch, before=before
    )


def require_documents(side: Side, what: str) -> Side:
    if not side.documents:
        raise NotFoundError(f"{what}: the store has no readable runs for it")
    return side
