"""The import use case: other tools' result files, or torch Measurements, as one results document
with the run's commit, branch and project (options, else what the files say, else GitHub Actions
and the local git checkout, as for `perfgate run`)."""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from perfgate.config import GitHubContext
from perfgate.errors import DocumentError, DocumentTooLargeError, UsageError
from perfgate.importers import FORMATS, SIMPLE_FORMATS
from perfgate.importers.common import ImportedFile, RunFields, build_document
from perfgate.results import ResultsDocument

_HEX = re.compile(r"[0-9a-fA-F]{7,64}")
_RUN_NAMESPACE = uuid.UUID("6f1c2b7e-2d4a-5b8e-9c3f-0a1b2c3d4e5f")


def import_files(
    fmt: str,
    paths: Sequence[Path],
    *,
    max_bytes: int,
    commit: str | None = None,
    branch: str | None = None,
    project: str | None = None,
    pr: int | None = None,
    github: GitHubContext | None = None,
    cwd: Path | None = None,
) -> tuple[ResultsDocument, list[ImportedFile]]:
    """Read `paths` as `fmt` files and build one document (each file one round of its benchmarks).

    Returns the document and what each file held. Raises DocumentError (exit 2) naming the file
    and the field of the first problem, UsageError for an unknown format or disagreeing files.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if not paths:
        raise UsageError("no files to import")
    contents = [_read_bytes(path, max_bytes) for path in paths]
    files = [
        _import_one(fmt, path, raw, max_bytes) for path, raw in zip(paths, contents, strict=True)
    ]
    environment = _local_environment() if fmt == "torch-pickle" else None
    if environment is not None:
        files = [_with_environment(f, environment) for f in files]
    run = resolve_run(
        files, commit=commit, branch=branch, project=project, pr=pr, github=github, cwd=cwd
    )
    if all(f.started_at is not None for f in files):
        # The same files imported again for the same commit are the same run, stored once,
        # rather than a second run that the comparator would pool as more evidence.
        run = replace(run, id=content_run_id(fmt, contents, run))
    return build_document(files, run), files


def content_run_id(fmt: str, contents: Sequence[bytes], run: RunFields) -> str:
    """A run id that depends only on the format, the files' bytes and the run's fields."""
    digest = hashlib.sha256(fmt.encode())
    for content in contents:
        digest.update(hashlib.sha256(content).digest())
    fields = (run.project, run.commit, run.branch, run.pr, run.base_commit)
    digest.update(json.dumps(fields, default=str).encode())
    return str(uuid.uuid5(_RUN_NAMESPACE, digest.hexdigest()))


def from_measurements(
    measurements: Sequence[Any],
    *,
    commit: str | None = None,
    branch: str | None = None,
    project: str | None = None,
    pr: int | None = None,
    environment: dict[str, Any] | None = None,
) -> ResultsDocument:
    """A results document from `torch.utils.benchmark.Measurement` objects.

    Each Measurement is a round of per-call times of its task (label, sub_label, description,
    env, num_threads); several Measurements of one task are several rounds. The environment is
    this process's (torch, CPU, threads) unless given, as a Measurement records none.
    """
    from perfgate.importers.torch_measurements import import_measurements

    imported = import_measurements(measurements, source="measurements")
    imported = _with_environment(imported, environment or _local_environment())
    run = resolve_run(
        [imported], commit=commit, branch=branch, project=project, pr=pr, github=None, cwd=None
    )
    return build_document([imported], run)


def resolve_run(
    files: Sequence[ImportedFile],
    *,
    commit: str | None,
    branch: str | None,
    project: str | None,
    pr: int | None,
    github: GitHubContext | None,
    cwd: Path | None,
) -> RunFields:
    """The run's fields: the options, else what all the files agree on, else resolve_git's."""
    from perfgate.harness.gitinfo import resolve_git

    # Asked only when the option is absent: an option settles disagreeing files.
    if commit is None:
        commit = _agreed(files, "commit", lambda f: f.commit if _is_commit(f.commit) else None)
    if branch is None:
        branch = _agreed(files, "branch", lambda f: f.branch)
    git = resolve_git(
        commit=commit,
        branch=branch,
        project=project,
        pr=pr,
        github=github if github is not None else GitHubContext.from_env(),
        cwd=cwd,
    )
    return RunFields(
        project=git.project,
        commit=git.commit,
        branch=git.branch,
        pr=git.pr,
        base_commit=git.base_commit,
        ci=git.ci,
    )


def _is_commit(value: str | None) -> bool:
    return value is not None and _HEX.fullmatch(value) is not None


def _agreed(files: Sequence[ImportedFile], what: str, read: Any) -> str | None:
    found: dict[str, str] = {}
    for file in files:
        value = read(file)
        if value is not None:
            found.setdefault(value, file.source)
    if len(found) > 1:
        (a, first), (b, second) = list(found.items())[:2]
        raise UsageError(
            f"{first} was recorded at {what} {a}, {second} at {b}: import them separately "
            f"or pass --{what}"
        )
    return next(iter(found), None)


def _import_one(fmt: str, path: Path, raw: bytes, max_bytes: int) -> ImportedFile:
    source = str(path)
    if fmt == "asv":
        from perfgate.importers.asv_results import import_asv

        # asv keeps the suite's types, units and parameter names beside the machine folders.
        suite = path.parent.parent / "benchmarks.json"
        if not suite.is_file():
            return import_asv(raw, source=source)
        return import_asv(
            raw,
            source=source,
            benchmarks_json=_read_bytes(suite, max_bytes),
            benchmarks_source=str(suite),
        )
    return SIMPLE_FORMATS[fmt](raw, source)


def _read_bytes(path: Path, max_bytes: int) -> bytes:
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise DocumentTooLargeError(
                f"{path}: {size} bytes is over the document size limit of {max_bytes} bytes "
                "(raise it with --max-size or PERFGATE_MAX_DOCUMENT_BYTES)"
            )
        return path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"cannot read file: {exc.strerror}", source=str(path)) from None


def _with_environment(file: ImportedFile, environment: dict[str, Any]) -> ImportedFile:
    return replace(file, environment={**environment, **file.environment})


def _local_environment() -> dict[str, Any]:
    """This process's environment, for Measurements (which record none): torch's when present."""
    from perfgate.harness import environment as env

    try:
        found = env.collect_environment("unrecorded")
    except ImportError:
        import os
        import platform

        found = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpu": env.cpu_model(),
            "cores": os.cpu_count(),
        }
    # The harness's own settings and device say nothing of how the Measurements were taken.
    for field in ("fingerprint", "device", "malloc", "sampling"):
        found.pop(field, None)
    return found
