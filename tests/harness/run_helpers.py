"""Helpers of the run_benchmarks tests: a suite folder, a run on CPU, a recording reporter."""

from __future__ import annotations

import textwrap

from perfgate.config import GitHubContext
from perfgate.harness.progress import InstanceProgress
from perfgate.harness.runner import RunOptions, run_benchmarks

SHA = "0123456789abcdef0123456789abcdef01234567"


class Recorder:
    def __init__(self):
        self.events = []

    def run_started(self, *, instances, rounds):
        self.events.append(("run_started", instances, rounds))

    def instance_started(self, key, *, round_index):
        self.events.append(("started", key, round_index))

    def instance_progress(self, progress):
        self.events.append(("progress", progress.key))

    def instance_finished(self, progress):
        assert isinstance(progress, InstanceProgress)
        self.events.append(("finished", progress.key, progress.round_index))

    def instance_error(self, key, message, *, round_index):
        self.events.append(("error", key, message, round_index))

    def warning(self, message):
        self.events.append(("warning", message))

    def run_finished(self):
        self.events.append(("run_finished",))


def write_suite(tmp_path, text, name="bench_suite.py"):
    folder = tmp_path / "benchmarks"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(textwrap.dedent(text))
    return folder


def run_on_cpu(tmp_path, **kwargs):
    kwargs.setdefault("max_time", 0.05)
    reporter = kwargs.pop("reporter", None)
    return run_benchmarks(
        RunOptions(commit=SHA, **kwargs), reporter=reporter, github=GitHubContext(), cwd=tmp_path
    )
