"""Settings: the only module that reads the process environment.

Click options name their environment variable themselves (`envvar=`); the names live here so the
CLI, the service and the docs agree. Everything else receives a `Settings` (or plain arguments).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from perfgate.errors import UsageError

DEFAULT_DB_URL = "sqlite:///.perfgate/perfgate.db"
DEFAULT_MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
# One deadline for an upload to a server, all attempts and backoff together.
DEFAULT_SERVER_TIMEOUT_S = 60.0

ENV_DB = "PERFGATE_DB"
ENV_SERVER = "PERFGATE_SERVER"
ENV_TOKEN = "PERFGATE_TOKEN"
ENV_SERVER_TIMEOUT = "PERFGATE_SERVER_TIMEOUT"
ENV_MAX_DOCUMENT_BYTES = "PERFGATE_MAX_DOCUMENT_BYTES"
ENV_PROJECT = "PERFGATE_PROJECT"
ENV_COMMIT = "PERFGATE_COMMIT"
ENV_BRANCH = "PERFGATE_BRANCH"
ENV_PR = "PERFGATE_PR"
ENV_THREADS = "PERFGATE_THREADS"
ENV_PUBLIC_READ = "PERFGATE_PUBLIC_READ"
# The settings a project's policy file may also give (docs/policy.md): these are the names click's
# `auto_envvar_prefix` gives the commands' options, spelled out so `perfgate config` reads the
# same ones. A flag beats its variable, which beats the policy file, which beats the default.
ENV_RUN_DEVICE = "PERFGATE_RUN_DEVICE"
ENV_RUN_ROUNDS = "PERFGATE_RUN_ROUNDS"
ENV_COMPARE_THRESHOLD = "PERFGATE_COMPARE_THRESHOLD"
ENV_COMPARE_ALPHA = "PERFGATE_COMPARE_ALPHA"
ENV_COMPARE_FAIL_ON = "PERFGATE_COMPARE_FAIL_ON"

# The GitHub Action's steps: composite actions do not export inputs, so ci/action.yml passes
# each one as an INPUT_* variable in the step's `env:` (docs/github.md, The Action).
INPUT_RESULTS_FILE = "INPUT_RESULTS_FILE"
INPUT_BASE_RESULTS = "INPUT_BASE_RESULTS"
INPUT_RESULTS = "INPUT_RESULTS"
INPUT_BASE = "INPUT_BASE"
INPUT_BASE_BRANCH = "INPUT_BASE_BRANCH"
INPUT_HEAD_SHA = "INPUT_HEAD_SHA"
INPUT_PR = "INPUT_PR"
INPUT_THRESHOLD = "INPUT_THRESHOLD"
INPUT_DB = "INPUT_DB"
INPUT_SERVER = "INPUT_SERVER"
INPUT_SERVER_TOKEN = "INPUT_SERVER_TOKEN"
INPUT_OUT_DIR = "INPUT_OUT_DIR"
INPUT_BENCHMARKS = "INPUT_BENCHMARKS"
INPUT_DEVICE = "INPUT_DEVICE"
INPUT_ROUNDS = "INPUT_ROUNDS"


@dataclass(frozen=True)
class Settings:
    """What a perfgate process is configured with."""

    db_url: str = DEFAULT_DB_URL
    server: str | None = None
    token: str | None = None
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES
    # Connecting is retried this many times (with backoff) before exit code 3.
    db_connect_attempts: int = 3
    # The service answers reads without a token (uploads always need one).
    public_read: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        env = os.environ if environ is None else environ
        return cls(
            db_url=env.get(ENV_DB) or DEFAULT_DB_URL,
            server=env.get(ENV_SERVER) or None,
            token=env.get(ENV_TOKEN) or None,
            max_document_bytes=parse_byte_size(
                env.get(ENV_MAX_DOCUMENT_BYTES) or str(DEFAULT_MAX_DOCUMENT_BYTES),
                source=ENV_MAX_DOCUMENT_BYTES,
            ),
            public_read=parse_flag(env.get(ENV_PUBLIC_READ, ""), source=ENV_PUBLIC_READ),
        )

    def service_environment(self) -> dict[str, str]:
        """The variables that make `from_env` rebuild these service settings in a worker process."""
        return {
            ENV_DB: self.db_url,
            ENV_MAX_DOCUMENT_BYTES: str(self.max_document_bytes),
            ENV_PUBLIC_READ: "1" if self.public_read else "0",
        }


@dataclass(frozen=True)
class GitHubContext:
    """What GitHub Actions tells a job about itself (all optional outside Actions)."""

    sha: str | None = None
    ref_name: str | None = None
    repository: str | None = None
    event_path: str | None = None
    api_url: str | None = None
    token: str | None = None
    step_summary: str | None = None
    run_url: str | None = None
    event_name: str | None = None
    # True inside a GitHub Actions job, where workflow commands (::warning::) mean something.
    actions: bool = False
    extra: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GitHubContext:
        env = os.environ if environ is None else environ
        run_url = None
        if (
            env.get("GITHUB_SERVER_URL")
            and env.get("GITHUB_REPOSITORY")
            and env.get("GITHUB_RUN_ID")
        ):
            run_url = (
                f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}"
                f"/actions/runs/{env['GITHUB_RUN_ID']}"
            )
        return cls(
            sha=env.get("GITHUB_SHA") or None,
            ref_name=env.get("GITHUB_REF_NAME") or None,
            repository=env.get("GITHUB_REPOSITORY") or None,
            event_path=env.get("GITHUB_EVENT_PATH") or None,
            api_url=env.get("GITHUB_API_URL") or None,
            token=env.get("GITHUB_TOKEN") or None,
            step_summary=env.get("GITHUB_STEP_SUMMARY") or None,
            run_url=run_url,
            event_name=env.get("GITHUB_EVENT_NAME") or None,
            actions=env.get("GITHUB_ACTIONS", "").lower() == "true",
            extra={
                k: v
                for k, v in env.items()
                if k
                in (
                    "GITHUB_RUN_ID",
                    "GITHUB_RUN_ATTEMPT",
                    "GITHUB_WORKFLOW",
                    "GITHUB_JOB",
                    "RUNNER_NAME",
                    "RUNNER_OS",
                    "GITHUB_EVENT_NAME",
                    "GITHUB_HEAD_REF",
                    "GITHUB_BASE_REF",
                )
            },
        )


@contextmanager
def environment_set(**values: str) -> Iterator[None]:
    """Set environment variables for the duration of a block (benchmark code reads them)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


def replace_environment(values: Mapping[str, str]) -> dict[str, str | None]:
    """Set variables until `restore_environment` (the harness's private compile caches);
    returns their values before (None: unset)."""
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    return saved


def restore_environment(saved: Mapping[str, str | None]) -> None:
    """Put back what `replace_environment` returned."""
    for name, old in saved.items():
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def python_path_with(*folders: Path) -> str:
    """A PYTHONPATH value with `folders` first, then whatever PYTHONPATH holds now.

    For worker processes that must import one checkout's code before any installed copy
    (`perfgate bisect` measures two commits of one project side by side).
    """
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join([*(str(f) for f in folders), *current])


# Read by CUDA, cuBLAS and torch's allocator at start-up: they change kernels, precision and
# memory behaviour, so the harness records them with the environment (unset: None).
CUDA_BEHAVIOUR_VARIABLES = (
    "NVIDIA_TF32_OVERRIDE",
    "CUBLAS_WORKSPACE_CONFIG",
    "PYTORCH_CUDA_ALLOC_CONF",
    "CUDA_LAUNCH_BLOCKING",
)


def cuda_behaviour_variables(environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """The CUDA_BEHAVIOUR_VARIABLES as set in the environment."""
    env = os.environ if environ is None else environ
    return {name: env.get(name) for name in CUDA_BEHAVIOUR_VARIABLES}


def running_in_ci(environ: Mapping[str, str] | None = None) -> bool:
    """True under a CI service (they all set CI), where progress bars turn into plain lines."""
    env = os.environ if environ is None else environ
    return env.get("CI", "").lower() not in ("", "0", "false", "no")


def parse_flag(text: str, *, source: str = "flag") -> bool:
    """Parse a boolean environment variable: 1/true/yes/on or 0/false/no/off (empty is false)."""
    raw = text.strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise UsageError(f"{source}: {text!r} is not a boolean (use 1 or 0)")


_SIZE_SUFFIXES = {
    "": 1,
    "b": 1,
    "k": 1024,
    "kib": 1024,
    "m": 1024**2,
    "mib": 1024**2,
    "g": 1024**3,
    "gib": 1024**3,
}


def parse_byte_size(text: str, *, source: str = "size") -> int:
    """Parse `65536`, `64MiB`, `512k` into bytes; a UsageError names `source` otherwise."""
    raw = text.strip().lower().replace(" ", "")
    digits = raw.rstrip("abcdefghijklmnopqrstuvwxyz")
    suffix = raw[len(digits) :]
    if not digits.isdigit() or suffix not in _SIZE_SUFFIXES:
        raise UsageError(f"{source}: {text!r} is not a size (try 65536, 512KiB or 64MiB)")
    value = int(digits) * _SIZE_SUFFIXES[suffix]
    if value <= 0:
        raise UsageError(f"{source}: size must be positive, got {text!r}")
    return value


@dataclass(frozen=True)
class CompareStepInputs:
    """What the action's compare step is given: its INPUT_* variables (empty when unset) and
    the parts of the runner's environment it reads."""

    results_file: str = ""
    base_results: str = ""
    results: str = ""
    base: str = ""
    base_branch: str = ""
    head_sha: str = ""
    pr: str = ""
    threshold: str = ""
    db: str = ""
    server: str = ""
    server_token: str = ""
    # Where results, traces and the comparison go (the artifact step uploads this folder).
    out_dir: str = "/tmp/perfgate"
    github_output: str = ""
    event_path: str = ""
    github_sha: str = ""
    github_base_ref: str = ""
    repository: str = ""
    runner_environment: str = ""
    # $XDG_DATA_HOME, else ~/.local/share: where the embedded store lives (outside the workspace).
    data_home: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> CompareStepInputs:
        env = os.environ if environ is None else environ
        home = env.get("HOME") or str(Path.home())
        return cls(
            results_file=env.get(INPUT_RESULTS_FILE, ""),
            base_results=env.get(INPUT_BASE_RESULTS, ""),
            results=env.get(INPUT_RESULTS, ""),
            base=env.get(INPUT_BASE, ""),
            base_branch=env.get(INPUT_BASE_BRANCH, ""),
            head_sha=env.get(INPUT_HEAD_SHA, ""),
            pr=env.get(INPUT_PR, ""),
            threshold=env.get(INPUT_THRESHOLD, ""),
            db=env.get(INPUT_DB, ""),
            server=env.get(INPUT_SERVER, ""),
            server_token=env.get(INPUT_SERVER_TOKEN, ""),
            out_dir=env.get(INPUT_OUT_DIR) or f"{env.get('RUNNER_TEMP') or '/tmp'}/perfgate",
            github_output=env.get("GITHUB_OUTPUT", ""),
            event_path=env.get("GITHUB_EVENT_PATH", ""),
            github_sha=env.get("GITHUB_SHA", ""),
            github_base_ref=env.get("GITHUB_BASE_REF", ""),
            repository=env.get("GITHUB_REPOSITORY", ""),
            runner_environment=env.get("RUNNER_ENVIRONMENT", ""),
            data_home=env.get("XDG_DATA_HOME") or f"{home}/.local/share",
        )


@dataclass(frozen=True)
class RunStepInputs:
    """The run step's inputs that the project's policy may also give (empty when unset)."""

    benchmarks: str = ""
    device: str = ""
    rounds: str = ""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RunStepInputs:
        env = os.environ if environ is None else environ
        return cls(
            benchmarks=env.get(INPUT_BENCHMARKS, ""),
            device=env.get(INPUT_DEVICE, ""),
            rounds=env.get(INPUT_ROUNDS, ""),
        )
