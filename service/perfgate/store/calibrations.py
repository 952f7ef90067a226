"""Calibration records in the store: repository functions, and the use cases that save and read.

A record (`perfgate.stats.calibration.Calibration`) is stored whole as its perfgate/calibration@1
JSON; project, fingerprint, commit, start and rounds sit beside it as columns to find it by.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import Select, select
from sqlalchemy.exc import DataError, DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import DatabaseError, DocumentError, InputError, NotFoundError
from perfgate.stats.calibration import Calibration
from perfgate.store import models, row_writes
from perfgate.store.engine import describe_db_error, mask_url

HOW_TO_CALIBRATE = "run perfgate calibrate PATHS"


def record_text(calibration: Calibration) -> str:
    """The stored form of a record: its JSON with sorted keys (equal records, equal text)."""
    return json.dumps(calibration.to_json(), sort_keys=True, separators=(",", ":"))


def save_calibration(
    session: Session, *, project_id: int, calibration: Calibration
) -> models.Calibration:
    """Add one record of project `project_id`; flushed, so the row has its id."""
    row = models.Calibration(
        project_id=project_id,
        fingerprint=calibration.fingerprint,
        commit=calibration.commit,
        started_at=calibration.started_at,
        rounds=calibration.rounds,
        record=record_text(calibration),
    )
    session.add(row)
    session.flush()
    return row


def _newest_first(project_id: int) -> Select[models.Calibration]:
    return (
        select(models.Calibration)
        .where(models.Calibration.project_id == project_id)
        # Two records of one start (rebuilt from the same runs) go newest stored first.
        .order_by(models.Calibration.started_at.desc(), models.Calibration.id.desc())
    )


def latest_calibration(
    session: Session, *, project_id: int, fingerprint: str
) -> Calibration | None:
    """The newest record (by the start of its rounds) of a project's runner, or None."""
    row = session.scalar(
        _newest_first(project_id).where(models.Calibration.fingerprint == fingerprint).limit(1)
    )
    return Calibration.from_json(json.loads(row.record)) if row is not None else None


def calibrations_of(session: Session, *, project_id: int) -> list[Calibration]:
    """Every record of a project, newest first."""
    return [
        Calibration.from_json(json.loads(row.record))
        for row in session.scalars(_newest_first(project_id))
    ]


@dataclass(frozen=True)
class CalibrationOutcome:
    record_id: int
    project: str
    fingerprint: str
    # False when the same record was already stored (nothing was written).
    created: bool


def store_calibration(
    sessions: sessionmaker[Session], calibration: Calibration
) -> CalibrationOutcome:
    """Store one record in one transaction, creating its project if new.

    Storing the same record again (say, `perfgate calibrate --from` on the same runs) writes
    nothing and says so (`created=False`).
    """
    text = record_text(calibration)
    try:
        with sessions() as session, session.begin():
            project_id = row_writes.ensure_project(session, name=calibration.project)
            existing = session.scalar(
                select(models.Calibration.id).where(
                    models.Calibration.project_id == project_id,
                    models.Calibration.fingerprint == calibration.fingerprint,
                    models.Calibration.commit == calibration.commit,
                    models.Calibration.record == text,
                )
            )
            if existing is not None:
                return _outcome(calibration, record_id=existing, created=False)
            row = save_calibration(session, project_id=project_id, calibration=calibration)
            return _outcome(calibration, record_id=row.id, created=True)
    except DataError as exc:
        raise DocumentError(
            f"the database refused a value of the calibration record: {describe_db_error(exc)}"
        ) from None
    except DBAPIError as exc:
        url = mask_url(sessions.kw["bind"].url)
        raise DatabaseError(
            f"storing the calibration record in {url} failed: {describe_db_error(exc)}"
        ) from None


def _outcome(calibration: Calibration, *, record_id: int, created: bool) -> CalibrationOutcome:
    return CalibrationOutcome(
        record_id=record_id,
        project=calibration.project,
        fingerprint=calibration.fingerprint,
        created=created,
    )


def latest_calibrations(
    sessions: sessionmaker[Session], *, project: str | None, fingerprint: str | None = None
) -> list[Calibration]:
    """The newest record of each runner of `project` (the only calibrated one when None).

    `fingerprint` (a whole fingerprint or a prefix) keeps that runner's only. NotFoundError when
    there is no such record; InputError when several projects have records and none is named.
    """
    with sessions() as session:
        project_id, name = _calibrated_project(session, name=project)
        records = calibrations_of(session, project_id=project_id) if project_id else []
    latest: dict[str, Calibration] = {}
    for record in records:
        if fingerprint is None or record.fingerprint.startswith(fingerprint):
            latest.setdefault(record.fingerprint, record)
    if not latest:
        runner = f" with fingerprint {fingerprint}" if fingerprint else ""
        raise NotFoundError(
            f"no calibration record for project {name}{runner} ({HOW_TO_CALIBRATE})"
        )
    return sorted(latest.values(), key=lambda c: (-c.started_at.timestamp(), c.fingerprint))


def _calibrated_project(session: Session, *, name: str | None) -> tuple[int | None, str]:
    """(id, name) of the named project (id None when absent) or of the only one with records."""
    if name:
        project_id = session.scalar(select(models.Project.id).where(models.Project.name == name))
        return project_id, name
    names = list(
        session.scalars(
            select(models.Project.name)
            .join(models.Calibration, models.Calibration.project_id == models.Project.id)
            .distinct()
            .order_by(models.Project.name)
            .limit(3)
        )
    )
    if not names:
        raise NotFoundError(f"no calibration record in the store ({HOW_TO_CALIBRATE})")
    if len(names) > 1:
        raise InputError(
            f"the store holds calibration records of several projects ({', '.join(names)}, ...): "
            "pass --project"
        )
    project_id = session.scalar(select(models.Project.id).where(models.Project.name == names[0]))
    return project_id, names[0]
