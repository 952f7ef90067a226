"""Run the app under uvicorn: in-process for one worker, by factory import string for several."""

from __future__ import annotations

from perfgate.config import Settings, environment_set

FACTORY = "perfgate.api.app:app_from_env"


def serve(settings: Settings, *, host: str, port: int, workers: int, log_level: str) -> None:
    """Serve until interrupted. Several workers each build their app from the environment,
    which is set here from `settings` so every worker gets the same configuration."""
    import uvicorn

    if workers == 1:
        from perfgate.api.app import create_app

        uvicorn.run(
            create_app(settings),
            host=host,
            port=port,
            log_level=log_level,
            proxy_headers=True,
        )
        return
    with environment_set(**settings.service_environment()):
        uvicorn.run(
            FACTORY,
            factory=True,
            host=host,
            port=port,
            workers=workers,
            log_level=log_level,
            proxy_headers=True,
        )
