"""API tokens: created random and shown once, stored as sha256, checked in constant time."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import NotFoundError, UsageError
from perfgate.store import models, row_writes
from perfgate.store.models import utcnow

SCOPES = ("upload", "read")
TOKEN_PREFIX = "pg_"
# Refreshing last_used_at on every request would turn every read into a write.
_LAST_USED_RESOLUTION = timedelta(minutes=5)


@dataclass(frozen=True)
class TokenInfo:
    """What may be shown about a token: never the token itself."""

    id: int
    project: str
    scope: str
    name: str | None
    created_at: datetime
    last_used_at: datetime | None
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


@dataclass(frozen=True)
class CreatedToken:
    info: TokenInfo
    # The secret, returned once by `create_token` and never stored.
    token: str


@dataclass(frozen=True)
class Grant:
    """A valid token's rights: one project, one scope (upload implies read)."""

    token_id: int
    project_id: int
    project: str
    scope: str
    last_used_at: datetime | None = None

    def allows(self, scope: str) -> bool:
        return self.scope in ("upload", scope)

    @property
    def needs_touch(self) -> bool:
        """True when last_used_at is older than its resolution (see `touch_token`)."""
        return self.last_used_at is None or utcnow() - self.last_used_at > _LAST_USED_RESOLUTION


def generate_token() -> str:
    # 32 random bytes: far beyond guessing, so a plain sha256 (no salt, no KDF) is enough.
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _info(row: models.Token, project: str) -> TokenInfo:
    return TokenInfo(
        id=row.id,
        project=project,
        scope=row.scope,
        name=row.name,
        created_at=row.created_at,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
    )


def create_token(
    sessions: sessionmaker[Session], *, project: str, scope: str, name: str | None = None
) -> CreatedToken:
    """Create a token for `project` (created too if new) and return it, the only time it is seen."""
    if scope not in SCOPES:
        raise UsageError(f"--scope: {scope!r} is not one of {', '.join(SCOPES)}")
    if not project.strip():
        raise UsageError("--project: a project name is required")
    token = generate_token()
    with sessions() as session, session.begin():
        project_id = row_writes.ensure_project(session, name=project)
        row = models.Token(
            project_id=project_id,
            name=name,
            scope=scope,
            token_hash=hash_token(token),
            created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        return CreatedToken(info=_info(row, project), token=token)


def list_tokens(sessions: sessionmaker[Session], *, project: str | None = None) -> list[TokenInfo]:
    """Every token (of `project`, when given), oldest first; revoked ones included."""
    with sessions() as session:
        stmt = (
            select(models.Token, models.Project.name)
            .join(models.Project, models.Project.id == models.Token.project_id)
            .order_by(models.Token.id)
        )
        if project is not None:
            stmt = stmt.where(models.Project.name == project)
        return [_info(row, name) for row, name in session.execute(stmt)]


def revoke_token(sessions: sessionmaker[Session], *, token_id: int) -> TokenInfo:
    """Revoke a token by id (revoking twice keeps the first time); NotFoundError if unknown."""
    with sessions() as session, session.begin():
        found = session.execute(
            select(models.Token, models.Project.name)
            .join(models.Project, models.Project.id == models.Token.project_id)
            .where(models.Token.id == token_id)
        ).first()
        if found is None:
            raise NotFoundError(f"token {token_id} does not exist (see `perfgate token list`)")
        row, project = found
        if row.revoked_at is None:
            row.revoked_at = utcnow()
        return _info(row, project)


def authenticate(session: Session, *, token: str) -> Grant | None:
    """The grant of `token`, or None when it is unknown or revoked. Never commits."""
    digest = hash_token(token)
    found = session.execute(
        select(models.Token, models.Project.name)
        .join(models.Project, models.Project.id == models.Token.project_id)
        .where(models.Token.token_hash == digest)
    ).first()
    if found is None:
        return None
    row, project = found
    # The lookup already matched; the constant-time comparison keeps the check itself free of
    # timing differences should the lookup ever become a prefix or an id.
    if not hmac.compare_digest(row.token_hash, digest) or row.revoked_at is not None:
        return None
    return Grant(
        token_id=row.id,
        project_id=row.project_id,
        project=project,
        scope=row.scope,
        last_used_at=row.last_used_at,
    )


def touch_token(session: Session, *, token_id: int) -> None:
    """Record that a token was used (callers do it at most once every few minutes).

    Runs in the caller's session and commits it: a second connection per request could exhaust
    the pool when many requests authenticate at once.
    """
    now = utcnow()
    session.execute(
        update(models.Token)
        .where(
            models.Token.id == token_id,
            (models.Token.last_used_at.is_(None))
            | (models.Token.last_used_at < now - _LAST_USED_RESOLUTION),
        )
        .values(last_used_at=now)
    )
    session.commit()
