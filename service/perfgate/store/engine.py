"""Engine and session factories; the connection check that makes an unreachable database exit 3."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
from sqlalchemy.orm import Session, sessionmaker

from perfgate.errors import DatabaseError, UsageError


def mask_url(url: str | URL) -> str:
    """The URL with its password replaced by ***, for messages and logs."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<unparseable database URL>"
    return parsed.render_as_string(hide_password=True)


def _parse(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UsageError(
            f"--db: {url!r} is not a database URL "
            "(try sqlite:///path.db or postgresql+psycopg://user@host/db)"
        ) from None
    if parsed.drivername == "postgresql":
        # psycopg 3 is the driver we ship; plain postgresql:// would look for psycopg2.
        parsed = parsed.set(drivername="postgresql+psycopg")
    if parsed.drivername == "postgres":
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def is_missing_sqlite_file(url: str) -> bool:
    """True for a SQLite file URL whose file does not exist yet (opening it would create it)."""
    parsed = _parse(url)
    if parsed.get_backend_name() != "sqlite":
        return False
    database = parsed.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return False
    return not Path(database).expanduser().exists()


def make_engine(url: str) -> Engine:
    """Create an engine for `url`; for SQLite the file's folder is created and sane pragmas set."""
    parsed = _parse(url)
    kwargs: dict[str, Any] = {}
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # Long enough for a concurrent writer to finish its transaction instead of failing.
        kwargs["connect_args"] = {"timeout": 30}
    elif parsed.get_backend_name() == "postgresql":
        kwargs["pool_pre_ping"] = True
        kwargs["connect_args"] = {"connect_timeout": 10}
    try:
        engine = create_engine(parsed, **kwargs)
    except (NoSuchModuleError, ArgumentError) as exc:
        raise UsageError(f"--db: unsupported database URL {mask_url(parsed)}: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    # WAL lets readers (the dashboard) work while a run is being stored.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.close()


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    # Objects stay readable after commit, so use cases can return what they stored.
    return sessionmaker(bind=engine, expire_on_commit=False)


def check_connection(engine: Engine, *, attempts: int = 3, backoff_s: float = 0.5) -> None:
    """Connect, retrying with backoff; DatabaseError (exit 3) names the URL if it never works."""
    last: Exception | None = None
    for attempt in range(max(1, attempts)):
        try:
            with engine.connect():
                return
        except DBAPIError as exc:
            last = exc
            if attempt + 1 < attempts:
                time.sleep(backoff_s * (2**attempt))
    raise DatabaseError(
        f"cannot connect to database {mask_url(engine.url)}: {describe_db_error(last)}"
    )


def describe_db_error(exc: BaseException | None) -> str:
    """First line of the driver's message, without SQLAlchemy's background links."""
    if exc is None:
        return "unknown error"
    original = getattr(exc, "orig", None) or exc
    text = str(original).strip().splitlines()
    return text[0] if text else type(original).__name__
