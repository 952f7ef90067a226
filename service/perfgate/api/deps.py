"""Per-app state and the FastAPI dependencies that hand it to routes (API and dashboard alike).

`create_app` builds one `AppState` (settings, engine, session factory) and keeps it on
`app.state.perfgate`; nothing is created at import time. Routes ask for what they need:

    from perfgate.api.deps import SessionDep, SessionsDep, StateDep

    @router.get("/p/{name}")
    def page(name: str, session: SessionDep, state: StateDep) -> ...:
        ...  # `session` is closed after the request; never commit in a read route

- `SessionDep`: one `Session` for the request: every read (`perfgate.store.catalog`,
  `perfgate.store.run_lookup`) and read use case (`load_series`, `list_changes`,
  `store.compare_in_store.compare_in_store`) takes it and never commits or closes it.
- `SessionsDep`: the `sessionmaker`, for the write use cases that own their transaction
  (`store_document`, `set_change_status`).
- `StateDep`: the whole `AppState` (`state.settings.public_read`,
  `state.settings.max_document_bytes`).

A request should hold one connection at a time: close the `SessionDep` session
(`session.close()`) before calling a write use case that opens its own, or many concurrent
requests can exhaust the pool while each waits for a second connection.

Authorisation is separate: see `perfgate.api.auth.authorize`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from perfgate.api.series_cache import SeriesCache
from perfgate.config import Settings


@dataclass
class AppState:
    settings: Settings
    engine: Engine
    sessions: sessionmaker[Session]
    # Per app, not per module: one process may serve several databases (the tests do).
    series_cache: SeriesCache = field(default_factory=SeriesCache)


def get_state(request: Request) -> AppState:
    state: AppState = request.app.state.perfgate
    return state


def get_sessions(request: Request) -> sessionmaker[Session]:
    return get_state(request).sessions


def get_session(request: Request) -> Iterator[Session]:
    with get_state(request).sessions() as session:
        yield session


StateDep = Annotated[AppState, Depends(get_state)]
SessionsDep = Annotated[sessionmaker[Session], Depends(get_sessions)]
SessionDep = Annotated[Session, Depends(get_session)]
