"""Deployment: docker-compose.yml against the Compose Specification schema, the Dockerfile's rules,
and the containers' own commands (migrate, serve, healthcheck) run against a scratch PostgreSQL.

No Docker engine runs here, so the commands are read out of docker-compose.yml and run as they
are, outside containers: only the listen address (0.0.0.0 -> 127.0.0.1), the port (-> a free one)
and the database host (the `db` service -> the test server) change. If the file drifts, this breaks.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import tomllib
import yaml
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[1]
COMPOSE = REPO / "docker-compose.yml"
DOCKERFILE = REPO / "Dockerfile"
DOCKERIGNORE = REPO / ".dockerignore"
SCHEMA = REPO / "tests" / "data" / "compose-spec.schema.json"
CONTAINER_PORT = "8000"
ENV = {"POSTGRES_PASSWORD": "test-password"}


# --- compose: variable interpolation as `docker compose` does it --------------------------------

_VARIABLE = re.compile(
    r"\$(?:\$|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?])?(?P<arg>[^}]*)\})"
)


class MissingVariableError(Exception):
    pass


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error} and $$, recursively."""
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, op, arg = match.group("name"), match.group("op"), match.group("arg")
        present = name in env and (env[name] != "" or not (op or "").startswith(":"))
        if present:
            return env[name]
        if op in (":?", "?"):
            raise MissingVariableError(f"{name}: {arg}")
        return arg if op in (":-", "-") else ""

    return _VARIABLE.sub(replace, value)


def load_compose(env: dict[str, str] | None = None) -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE.read_text())
    return interpolate(raw, ENV if env is None else env)  # type: ignore[no-any-return]


def service_env(service: dict[str, Any]) -> dict[str, str]:
    environment = service.get("environment", {})
    if isinstance(environment, list):
        return dict(item.split("=", 1) for item in environment)
    return {k: str(v) for k, v in environment.items()}


def as_argv(command: str | list[str]) -> list[str]:
    return shlex.split(command) if isinstance(command, str) else list(command)


# --- the Dockerfile, read as instructions --------------------------------------------------------


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    result = []
    for line in logical:
        instruction, _, arguments = line.partition(" ")
        result.append((instruction.upper(), arguments.strip()))
    return result


def exec_form(arguments: str) -> list[str]:
    parsed = json.loads(arguments)
    assert isinstance(parsed, list) and all(isinstance(a, str) for a in parsed), arguments
    return parsed


# --- schema and structure -------------------------------------------------------------------------


def test_compose_file_follows_the_compose_specification() -> None:
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema)
    raw = yaml.safe_load(COMPOSE.read_text())
    errors = sorted(validator.iter_errors(raw), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)
    # The schema catches what Compose would refuse: a made-up dependency condition, for one.
    broken = yaml.safe_load(COMPOSE.read_text())
    broken["services"]["api"]["depends_on"]["migrate"]["condition"] = "service_finished"
    assert list(validator.iter_errors(broken))


def test_services_start_in_order_db_then_migrate_then_api() -> None:
    compose = load_compose()
    services = compose["services"]
    assert set(services) == {"db", "migrate", "api"}

    db = services["db"]
    assert db["image"].startswith("postgres:")
    assert db["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    volume, _, target = db["volumes"][0].partition(":")
    assert volume in compose["volumes"], "the database keeps its data in a named volume"
    assert target == "/var/lib/postgresql/data"
    assert service_env(db)["POSTGRES_PASSWORD"] == ENV["POSTGRES_PASSWORD"]

    migrate = services["migrate"]
    assert as_argv(migrate["command"]) == ["perfgate", "db", "upgrade"]
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert migrate.get("restart") == "no", "a one-shot job must not be restarted"

    api = services["api"]
    assert api["depends_on"] == {"migrate": {"condition": "service_completed_successfully"}}
    argv = as_argv(api["command"])
    assert argv[:2] == ["perfgate", "serve"]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    assert argv[argv.index("--port") + 1] == CONTAINER_PORT
    assert api["ports"] == [f"8000:{CONTAINER_PORT}"]
    probe = " ".join(api["healthcheck"]["test"])
    assert f"127.0.0.1:{CONTAINER_PORT}/readyz" in probe or f":{CONTAINER_PORT}/healthz" in probe
    assert migrate["image"] == api["image"], "migrate and api run the same image"

    for name in ("migrate", "api"):
        url = make_url(service_env(services[name])["PERFGATE_DB"])
        assert url.drivername == "postgresql+psycopg"
        assert (url.host, url.port, url.database) == ("db", 5432, "perfgate")
        assert url.username == service_env(db)["POSTGRES_USER"]
        assert url.password == ENV["POSTGRES_PASSWORD"]


def test_compose_refuses_to_start_without_a_database_password() -> None:
    with pytest.raises(MissingVariableError, match="POSTGRES_PASSWORD"):
        load_compose(env={})
    published = load_compose(env={**ENV, "PERFGATE_PORT": "9100"})["services"]["api"]["ports"]
    assert published == [f"9100:{CONTAINER_PORT}"]


def test_dockerfile_is_slim_non_root_without_torch_and_matches_compose() -> None:
    instructions = dockerfile_instructions()
    assert not [args for _, args in instructions if "torch" in args.lower()]
    bases = [args.split()[0] for op, args in instructions if op == "FROM"]
    assert bases and all(re.fullmatch(r"python:3\.\d+-slim(-\w+)?", b) for b in bases), bases

    final_stage = instructions[max(i for i, (op, _) in enumerate(instructions) if op == "FROM") :]
    users = [args for op, args in final_stage if op == "USER"]
    assert users and users[-1] not in ("root", "0", "0:0"), "the service must not run as root"
    installs = [args for op, args in instructions if op == "RUN" and "pip install" in args]
    assert len(installs) == 1
    extras = re.findall(r"\.\[([^\]]*)\]", installs[0])
    assert extras == ["server"], "only the server extra: no torch, no dev tools"

    compose = load_compose()
    api = compose["services"]["api"]
    cmd = [exec_form(args) for op, args in final_stage if op == "CMD"]
    assert cmd == [as_argv(api["command"])], "the image's CMD is what compose runs"
    assert not [args for op, args in final_stage if op == "ENTRYPOINT"]
    exposed = [args for op, args in final_stage if op == "EXPOSE"]
    assert exposed == [CONTAINER_PORT]
    health = [args for op, args in final_stage if op == "HEALTHCHECK"]
    assert len(health) == 1
    health_cmd = exec_form(health[0].split(" CMD ", 1)[1])
    assert ["CMD", *health_cmd] == api["healthcheck"]["test"]


def _ignored(path: str, patterns: list[str]) -> bool:
    """Docker's rule: the last pattern that matches decides (`!` re-includes)."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        core = pattern[1:] if negate else pattern
        core = core.rstrip("/")
        candidates = [path] + [str(p) for p in Path(path).parents if str(p) != "."]
        if any(
            fnmatch.fnmatch(c, core) or fnmatch.fnmatch(c, core.replace("**/", ""))
            for c in candidates
        ):
            ignored = not negate
    return ignored


def test_dockerignore_sends_what_the_build_copies_and_nothing_private() -> None:
    patterns = [
        line.strip()
        for line in DOCKERIGNORE.read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    copied = [
        args.split()[0]
        for op, args in dockerfile_instructions()
        if op == "COPY" and not args.startswith("--from")
    ]
    sources = ["pyproject.toml", "README.md", "service/perfgate/api/app.py", "migrations/env.py"]
    for source in [*sources, *copied]:
        assert not _ignored(source, patterns), f"{source} is needed by the build"
    for private in (
        ".venv/bin/python",
        ".git/config",
        ".perfgate/perfgate.db",
        "tests/conftest.py",
    ):
        assert _ignored(private, patterns), f"{private} must not reach the build context"
    for needed in ("pyproject.toml", "README.md", "service", "migrations"):
        assert (REPO / needed).exists()
    # What the wheel force-includes must be in the image's build: hatchling refuses a missing one.
    wheel = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]
    for source in wheel["targets"]["wheel"]["force-include"]:
        assert any(source == c or source.startswith(c.rstrip("/") + "/") for c in copied), source
        assert not _ignored(f"{source}/x.py", patterns), f"{source} must reach the build context"


# --- the containers' commands, run for real -------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _replace_once(argv: list[str], old: str, new: str) -> list[str]:
    hits = sum(arg.count(old) for arg in argv)
    assert hits == 1, f"expected {old!r} once in {argv}"
    return [arg.replace(old, new) for arg in argv]


def _run(
    argv: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.mark.postgres
@pytest.mark.slow
def test_container_commands_migrate_serve_and_pass_their_healthcheck(pg_databases: Any) -> None:
    compose = load_compose()
    services = compose["services"]
    scratch = pg_databases.create()
    # What a container sees: the image's PATH puts perfgate and python first.
    base_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PERFGATE_")},
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }

    migrate_env = {**base_env, **service_env(services["migrate"]), "PERFGATE_DB": scratch}
    migrated = _run(as_argv(services["migrate"]["command"]), migrate_env)
    assert migrated.returncode == 0, migrated.stderr
    assert "upgraded" in migrated.stdout
    again = _run(as_argv(services["migrate"]["command"]), migrate_env)
    assert again.returncode == 0 and "already at" in again.stdout, again.stderr

    port = str(_free_port())
    api = services["api"]
    serve = _replace_once(as_argv(api["command"]), "0.0.0.0", "127.0.0.1")
    serve[serve.index("--port") + 1] = port
    probe = _replace_once(api["healthcheck"]["test"][1:], f":{CONTAINER_PORT}/", f":{port}/")
    api_env = {**base_env, **service_env(api), "PERFGATE_DB": scratch}

    down = _run(probe, api_env, timeout=30)
    assert down.returncode != 0, "the healthcheck must fail while nothing listens"

    process = subprocess.Popen(
        serve,
        env=api_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its worker processes share its group, stopped together below
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            check = _run(probe, api_env, timeout=30)
            if check.returncode == 0:
                break
            assert process.poll() is None, f"perfgate serve exited: {process.communicate()[0]}"
            assert time.monotonic() < deadline, f"healthcheck never passed: {check.stderr}"
            time.sleep(0.5)
        ready = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["status"] == "ok"
        # The dashboard is served too; this server is private, so it asks for a login.
        page = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert page.status_code == 303 and page.headers["location"].startswith("/login")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    after = _run(probe, api_env, timeout=30)
    assert after.returncode != 0, "the healthcheck must fail once the server stopped"
