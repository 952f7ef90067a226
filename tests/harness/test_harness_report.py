"""Progress reporters and the run table (report/ must render without torch)."""

from __future__ import annotations

import io
import subprocess
import sys

from rich.console import Console

from perfgate.cli.progress import PlainReporter, RichReporter, make_reporter
from perfgate.harness.progress import InstanceProgress
from perfgate.report.run_table import (
    build_run_table,
    render_run_table,
)
from perfgate.report.units import format_value
from perfgate.results import parse_document

SHA = "0123456789abcdef0123456789abcdef01234567"


def _drive(reporter):
    reporter.run_started(instances=2, rounds=1)
    reporter.instance_started("mm[n=1]", round_index=1)
    progress = InstanceProgress(
        key="mm[n=1]", round_index=1, samples=30, median=1.5e-5, ci_rel=0.004, elapsed=0.2
    )
    reporter.instance_progress(progress)
    reporter.instance_finished(progress)
    reporter.instance_started("bad", round_index=1)
    reporter.instance_error("bad", "ValueError: nope", round_index=1)
    reporter.warning("bad: peak_memory not measured")
    reporter.instance_error("bench_x", "import failed: ImportError: y", round_index=0)
    reporter.run_finished()


def test_plain_reporter_writes_one_line_per_instance():
    out = io.StringIO()
    _drive(PlainReporter(out))
    lines = out.getvalue().splitlines()
    assert lines[0] == "perfgate: 2 benchmarks"
    assert lines[1] == "[1/2] mm[n=1]  15 µs ±0.4%  (30 samples, 0.2s)"
    assert lines[2] == "[2/2] bad  ERROR ValueError: nope"
    assert lines[3] == "warning: bad: peak_memory not measured"
    assert lines[4] == "[import] bench_x  ERROR import failed: ImportError: y"
    assert lines[5].startswith("perfgate: done in")
    assert "\x1b" not in out.getvalue()


def test_rich_reporter_logs_finished_instances_with_keys_intact():
    out = io.StringIO()
    _drive(RichReporter(Console(file=out, force_terminal=True, width=120)))
    text = out.getvalue()
    assert "mm[n=1]" in text  # not eaten as markup
    assert "ValueError: nope" in text


def test_make_reporter_picks_by_the_flag():
    assert isinstance(make_reporter(interactive=False), PlainReporter)
    assert isinstance(make_reporter(interactive=True, stream=io.StringIO()), RichReporter)


def _document():
    time = {
        "unit": "s",
        "direction": "lower",
        "samples": [1e-3 * (1 + i / 100) for i in range(40)],
        "rounds": [20, 20],
    }
    return parse_document(
        {
            "schema": "perfgate/results@1",
            "run": {
                "id": "6f1c2e9a-0d7b-4a43-9a51-3a0a8f1a2b3c",
                "project": "o/p",
                "commit": SHA,
                "started_at": "2026-01-01T00:00:00Z",
            },
            "environment": {"fingerprint": "x"},
            "benchmarks": [
                {
                    "name": "mm",
                    "params": {"n": 4},
                    "key": "mm[n=4]",
                    "metrics": {
                        "time": time,
                        "throughput": {
                            "unit": "tokens/s",
                            "direction": "higher",
                            "samples": [5e6] * 40,
                            "rounds": [20, 20],
                        },
                    },
                    "profile": {
                        "ops": [
                            {"op": "aten::mm", "count": 1, "self_cpu_us": 90.0},
                            {"op": "aten::add", "count": 1, "self_cpu_us": 10.0},
                        ]
                    },
                },
                {"name": "bad", "key": "bad", "error": "ValueError: nope"},
            ],
        }
    )


def test_run_table_shows_median_ci_samples_and_top_op():
    out = io.StringIO()
    render_run_table(_document(), console=Console(file=out, width=160))
    text = out.getvalue()
    assert "mm[n=4]" in text
    assert "1.19 ms" in text
    assert "40 (20+20)" in text
    assert "aten::mm 90%" in text
    assert "5M tokens/s" in text
    assert "ValueError: nope" in text
    assert build_run_table(_document()).row_count == 2


def test_formatting():
    assert format_value(1.234e-5, "s") == "12.3 µs"
    assert format_value(2.5, "s") == "2.5 s"
    assert format_value(3e-9, "s") == "3 ns"
    assert format_value(3_673_000.0, "tokens/s") == "3.67M tokens/s"
    assert format_value(262144, "B") == "256 KiB"


def test_report_modules_do_not_import_torch():
    code = (
        "import sys, perfgate.harness.progress, perfgate.report.run_table; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
