"""The HTTP service: FastAPI app factory (`create_app`), `/api/v1` routes, auth, dashboard."""
