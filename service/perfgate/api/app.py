"""The FastAPI app factory: `create_app(settings)`; `app_from_env` for `uvicorn --factory` workers.

Nothing is built at import time. The app holds an engine and a session factory in
`app.state.perfgate` (see `perfgate.api.deps`) and disposes of the engine on shutdown. It never
creates or migrates a schema: `perfgate serve` checks the database before it starts serving,
with the same rules as every other command (`perfgate.store.migrate.ensure_schema`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from perfgate import __version__
from perfgate.api.deps import AppState
from perfgate.api.errors import install_error_handlers
from perfgate.api.limits import BodyLimitMiddleware
from perfgate.config import Settings
from perfgate.results import ResultsDocument
from perfgate.store.engine import make_engine, make_session_factory

API_DESCRIPTION = """\
perfgate's HTTP API. Tokens travel as `Authorization: Bearer <token>`; every error answer is
`{"error": {"code": "...", "message": "..."}}`. See docs/service.md.
"""


def create_app(settings: Settings) -> FastAPI:
    """The service for `settings` (database URL, body size limit, public reads)."""
    engine = make_engine(settings.db_url)
    state = AppState(settings=settings, engine=engine, sessions=make_session_factory(engine))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        engine.dispose()

    app = FastAPI(
        title="perfgate",
        version=__version__,
        description=API_DESCRIPTION,
        openapi_url="/openapi.json",
        # The interactive docs load their scripts from a CDN; the server must work offline.
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.perfgate = state
    app.add_middleware(BodyLimitMiddleware, max_bytes=settings.max_document_bytes)
    # Added last, so it wraps the body limit and every route.
    install_error_handlers(app)

    from perfgate.api.routes import changes, health, reads, runs

    for module in (health, runs, reads, changes):
        app.include_router(module.router)
    _document_results_schema(app)

    from perfgate.api.dashboard import mount_dashboard

    mount_dashboard(app)
    return app


def app_from_env() -> FastAPI:
    """Factory for `uvicorn --factory perfgate.api.app:app_from_env` (each worker builds one)."""
    return create_app(Settings.from_env())


def _document_results_schema(app: FastAPI) -> None:
    """Add the results document's JSON schema to the OpenAPI components (the upload body)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            document = ResultsDocument.model_json_schema(
                by_alias=True, ref_template="#/components/schemas/{model}"
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in document.pop("$defs", {}).items():
                components.setdefault(name, definition)
            components["ResultsDocument"] = document
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
