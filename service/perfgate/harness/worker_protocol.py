"""What the parent and a round's worker process say to each other: the request and event lines.

The parent writes one `WorkerRequest` as a JSON file and starts `python -m perfgate.harness.worker
REQUEST.json`; the worker answers with one JSON line per event on stdout, which the parent turns
back into calls on its `RunReporter` (`replay`). Both ends are this module, so the two sides of
the wire cannot drift apart.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, TextIO, TypeVar

from perfgate.harness.measure import MeasureSettings
from perfgate.harness.progress import InstanceProgress, RunReporter

_T = TypeVar("_T")


class WorkerRequestError(ValueError):
    """A request file the worker cannot use (names the file and the field)."""


@dataclass(frozen=True)
class WorkerRequest:
    """One round's work for one worker process: which instances, where, and how to measure."""

    #: Benchmark files to import, and the instance keys to measure from them, in order.
    files: tuple[str, ...]
    keys: tuple[str, ...]
    device: str
    threads: int
    round_index: int
    profile: bool
    #: Where the worker appends one results@1 benchmark entry (a JSON line) per instance.
    results: str
    max_time: float | None = None
    interleave: bool = False
    device_timing: str = "events"
    cold_cache: bool = False
    trace_dir: str | None = None
    pin_malloc: bool = True

    def settings(self) -> MeasureSettings:
        """The measuring options the parent's `MeasureSettings` carried over the wire."""
        return MeasureSettings(
            max_time=self.max_time,
            interleave=self.interleave,
            device_timing=self.device_timing,
            cold_cache=self.cold_cache,
            profile=self.profile,
            trace_dir=Path(self.trace_dir) if self.trace_dir else None,
        )

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str, *, source: str) -> WorkerRequest:
        """Parse a request file's text; WorkerRequestError names what is wrong."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise WorkerRequestError(f"{source}: not JSON: {exc}") from None
        if not isinstance(data, dict):
            raise WorkerRequestError(f"{source}: a worker request must be a JSON object")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise WorkerRequestError(f"{source}: unknown field {unknown[0]!r}")
        values: dict[str, Any] = {}
        for name in known:
            if name in data:
                values[name] = _checked(name, data[name], source)
            elif name in _REQUIRED:
                raise WorkerRequestError(f"{source}: missing field {name!r}")
        return cls(**values)


_REQUIRED = {"files", "keys", "device", "threads", "round_index", "profile", "results"}


def _checked(name: str, value: object, source: str) -> object:
    """One request field, type-checked (JSON has no tuples: lists of strings become tuples)."""
    expected: str
    if name in ("files", "keys"):
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        expected = "a list of strings"
    elif name in ("threads", "round_index"):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        expected = "an integer"
    elif name in ("profile", "interleave", "cold_cache", "pin_malloc"):
        if isinstance(value, bool):
            return value
        expected = "true or false"
    elif name == "max_time":
        if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
            return None if value is None else float(value)
        expected = "a number or null"
    elif name == "trace_dir":
        if value is None or isinstance(value, str):
            return value
        expected = "a string or null"
    else:
        if isinstance(value, str):
            return value
        expected = "a string"
    raise WorkerRequestError(
        f"{source}: field {name!r} must be {expected}, got {type(value).__name__}"
    )


# --- events: worker -> parent, one JSON line each ---------------------------------------------


@dataclass(frozen=True)
class InstanceStarted:
    key: str
    round_index: int

    def to_json(self) -> str:
        return json.dumps({"event": "started", "key": self.key, "round_index": self.round_index})

    def deliver(self, reporter: RunReporter) -> None:
        reporter.instance_started(self.key, round_index=self.round_index)


@dataclass(frozen=True)
class InstanceProgressed:
    progress: InstanceProgress
    #: True for the instance's last word (`instance_finished`), false while it samples.
    finished: bool = False

    def to_json(self) -> str:
        kind = "finished" if self.finished else "progress"
        return json.dumps({"event": kind, "progress": asdict(self.progress)})

    def deliver(self, reporter: RunReporter) -> None:
        if self.finished:
            reporter.instance_finished(self.progress)
        else:
            reporter.instance_progress(self.progress)


@dataclass(frozen=True)
class InstanceFailed:
    key: str
    message: str
    round_index: int

    def to_json(self) -> str:
        return json.dumps(
            {
                "event": "error",
                "key": self.key,
                "message": self.message,
                "round_index": self.round_index,
            }
        )

    def deliver(self, reporter: RunReporter) -> None:
        reporter.instance_error(self.key, self.message, round_index=self.round_index)


@dataclass(frozen=True)
class Warned:
    message: str

    def to_json(self) -> str:
        return json.dumps({"event": "warning", "message": self.message})

    def deliver(self, reporter: RunReporter) -> None:
        reporter.warning(self.message)


WorkerEvent = InstanceStarted | InstanceProgressed | InstanceFailed | Warned


def parse_event(line: str) -> WorkerEvent | None:
    """One stdout line of a worker as an event; None for a line that is not one."""
    try:
        data = json.loads(line)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    kind = data.get("event")
    try:
        if kind == "started":
            return InstanceStarted(_field(data, "key", str), _field(data, "round_index", int))
        if kind in ("progress", "finished"):
            progress = InstanceProgress(**_field(data, "progress", dict))
            return InstanceProgressed(progress, finished=kind == "finished")
        if kind == "error":
            return InstanceFailed(
                _field(data, "key", str),
                _field(data, "message", str),
                _field(data, "round_index", int),
            )
        if kind == "warning":
            return Warned(_field(data, "message", str))
    except (KeyError, TypeError):
        return None
    return None


def _field(data: dict[str, Any], name: str, kind: type[_T]) -> _T:
    value = data[name]
    if not isinstance(value, kind):
        raise TypeError(f"{name} is {type(value).__name__}, not {kind.__name__}")
    return value


class EventWriter:
    """A RunReporter that writes each event as one JSON line for the parent to replay."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def _emit(self, event: WorkerEvent) -> None:
        self._stream.write(event.to_json() + "\n")
        self._stream.flush()

    def run_started(self, *, instances: int, rounds: int) -> None:
        return None

    def instance_started(self, key: str, *, round_index: int) -> None:
        self._emit(InstanceStarted(key, round_index))

    def instance_progress(self, progress: InstanceProgress) -> None:
        self._emit(InstanceProgressed(progress))

    def instance_finished(self, progress: InstanceProgress) -> None:
        self._emit(InstanceProgressed(progress, finished=True))

    def instance_error(self, key: str, message: str, *, round_index: int) -> None:
        self._emit(InstanceFailed(key, message, round_index))

    def warning(self, message: str) -> None:
        self._emit(Warned(message))

    def run_finished(self) -> None:
        return None


def replay(line: str, reporter: RunReporter, started: set[str]) -> None:
    """Forward one worker line to the reporter, noting the keys that started (lines that are not
    events are ignored)."""
    event = parse_event(line)
    if event is None:
        return
    if isinstance(event, InstanceStarted):
        started.add(event.key)
    event.deliver(reporter)
