"""Use case: compare two sides named by the user (commits or branches in the store, or sides
already loaded from results files), with the store's evidence about the runner.

Every function reads through the caller's Session and never commits or closes it: a route
passes its request's session, the CLI one it opened (docs/architecture.md §1).

Runs stored for the same commit are pooled as rounds; earlier runs of the base branch give the
comparator its history noise model; a base commit without data falls back, with a warning, to
the nearest earlier run of the base branch. A base that the store has nothing for (an empty
store, a project it has never seen, no runs of the base commit nor of the base branch before the
head) is NoBaselineError, exit 4: a first PR's state, not a mistake in the input.
"""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy.orm import Session

from perfgate.errors import NoBaselineError, NotFoundError
from perfgate.results import ResultsDocument
from perfgate.sides import Side, compare_sides
from perfgate.stats.calibration import Calibration
from perfgate.stats.model import Comparison
from perfgate.stats.noise import PastRun
from perfgate.stats.two_sample import CompareSettings
from perfgate.store import run_lookup
from perfgate.store.calibrations import latest_calibration
from perfgate.store.documents import rebuild_document

_COMMITISH = re.compile(r"^[0-9a-fA-F]{4,64}$")


def _rebuild(session: Session, refs: list[run_lookup.RunRef]) -> list[ResultsDocument]:
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
        runs = run_lookup.runs_for_commit(session, project_id=project_id, commit=ref)
        if runs:
            return Side(documents=_rebuild(session, runs))
    if run_lookup.branch_exists(session, project_id=project_id, branch=ref):
        runs = run_lookup.latest_commit_runs(
            session, project_id=project_id, branch=ref, before=before
        )
        if runs:
            return Side(documents=_rebuild(session, runs), label=f"latest on {ref}")
    if fallback_branch and _COMMITISH.match(ref):
        runs = run_lookup.latest_commit_runs(
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


def history_for(session: Session, *, base: Side) -> list[PastRun]:
    """Medians of the base branch's earlier runs on the base's runner class, for the noise model."""
    first = base.documents[0]
    if not first.run.branch:
        return []
    try:
        project = run_lookup.resolve_project(session, name=first.run.project)
    except NotFoundError:
        return []  # a project the store has never seen has no history
    return run_lookup.history_medians(
        session,
        project_id=project.id,
        branch=first.run.branch,
        before=base.started_at,
        exclude=[d.run.id for d in base.documents],
        fingerprint=str(first.environment.fingerprint),
    )


def calibration_for(session: Session, *, base: Side) -> Calibration | None:
    """The newest calibration record of the base's project and runner class, if any."""
    first = base.documents[0]
    try:
        project = run_lookup.resolve_project(session, name=first.run.project)
    except NotFoundError:
        return None
    return latest_calibration(
        session, project_id=project.id, fingerprint=str(first.environment.fingerprint)
    )


def project_id_for(session: Session, *, name: str | None) -> int:
    return run_lookup.resolve_project(session, name=name).id


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


def compare_with_evidence(
    session: Session, base: Side, head: Side, *, settings: CompareSettings
) -> Comparison:
    """Compare two loaded sides with what the store knows of the base's runner: the base
    branch's earlier runs (history) and the newest calibration record."""
    return compare_sides(
        base,
        head,
        settings=settings,
        history=history_for(session, base=base),
        calibration=calibration_for(session, base=base),
    )


def resolve_sides(
    session: Session,
    *,
    base: str | Side,
    head: str | Side,
    project: str | None = None,
    base_branch: str | None = None,
) -> tuple[Side, Side]:
    """Both sides of "compare BASE with HEAD": each a ref in the store (a commit, a unique
    prefix or a branch) or a side already loaded from files.

    A base commit without runs falls back to the nearest earlier run of `base_branch` before the
    head (default: the project's main branch, `run_lookup.default_branch`); when nothing stands in
    for it, NoBaselineError (exit 4).
    """
    if isinstance(head, Side):
        head_side = head
    else:
        head_side = require_documents(
            resolve_side(session, project_id=project_id_for(session, name=project), ref=head),
            f"head {head}",
        )
    if isinstance(base, Side):
        return base, head_side
    name = project or head_side.documents[0].run.project
    fallback = base_branch or _default_branch_of(session, name) or "main"
    base_side = require_documents(
        resolve_base(
            session,
            project=name,
            ref=base,
            fallback_branch=fallback,
            before=head_side.started_at,
        ),
        f"base {base}",
    )
    return base_side, head_side


def compare_in_store(
    session: Session,
    *,
    base: str | Side,
    head: str | Side,
    settings: CompareSettings,
    project: str | None = None,
    base_branch: str | None = None,
) -> Comparison:
    """The one "compare BASE with HEAD" behind `perfgate compare`, `GET /api/v1/compare`, the
    dashboard's compare page and the demo: `resolve_sides`, then `compare_with_evidence`."""
    base_side, head_side = resolve_sides(
        session, base=base, head=head, project=project, base_branch=base_branch
    )
    return compare_with_evidence(session, base_side, head_side, settings=settings)


def _default_branch_of(session: Session, project: str) -> str | None:
    try:
        project_id = project_id_for(session, name=project)
    except NotFoundError:
        return None
    return run_lookup.default_branch(session, project_id=project_id)
