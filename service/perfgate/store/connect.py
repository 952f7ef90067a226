"""Open a store from a URL: engine, reachability check with retries, schema check, sessions."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from perfgate.store.engine import check_connection, make_engine, make_session_factory
from perfgate.store.migrate import ensure_schema


@dataclass
class Store:
    engine: Engine
    sessions: sessionmaker[Session]

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(url: str, *, attempts: int = 3, ensure: bool = True) -> Store:
    """Connect to `url` (DatabaseError after `attempts`) and, with `ensure`, check its schema.

    An empty database gets the schema on first use; see `migrate.ensure_schema`.
    """
    engine = make_engine(url)
    try:
        check_connection(engine, attempts=attempts)
        if ensure:
            ensure_schema(engine)
    except BaseException:
        engine.dispose()
        raise
    return Store(engine=engine, sessions=make_session_factory(engine))
