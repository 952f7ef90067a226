"""Server-rendered dashboard pages and their static assets, mounted onto the FastAPI app.

Pages: `/` (projects), `/p/{project}` (benchmarks with sparklines and latest change points),
`/p/{project}/trend?key=` (the trend chart), `/p/{project}/runs/{id}` (a run against its base),
`/p/{project}/compare?base=&head=`, the trend page's triage form
(`POST /p/{project}/changes/{id}`), `/login` and `/logout`. Charts are drawn by uPlot, vendored
under `static/vendor/uplot/`, so nothing is fetched from the internet.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from perfgate.api.dashboard import login, pages
from perfgate.api.dashboard.render import STATIC_DIR, make_state


def mount_dashboard(app: FastAPI) -> None:
    """Register the dashboard routes and its static assets on `app`."""
    app.state.perfgate_dashboard = make_state()
    app.include_router(login.router)
    app.include_router(pages.router)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
