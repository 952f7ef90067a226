"""Discovery: file patterns, nested folders, -k expressions, import failures, duplicate keys."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch")

from perfgate.errors import UsageError
from perfgate.harness.discovery import ImportFailure, discover, find_files
from perfgate.harness.keyfilter import compile_filter

BENCH = """
import perfgate

@perfgate.benchmark(params={{"n": [1, 2]}})
def {name}(n):
    return lambda: None
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def test_file_patterns_and_nested_directories(tmp_path):
    _write(tmp_path / "bench_a.py", BENCH.format(name="a"))
    _write(tmp_path / "deep" / "er" / "b_bench.py", BENCH.format(name="b"))
    _write(tmp_path / "helpers.py", BENCH.format(name="not_me"))
    _write(tmp_path / "benchmark_c.py", BENCH.format(name="not_me_either"))
    _write(tmp_path / ".hidden" / "bench_h.py", BENCH.format(name="hidden"))
    _write(tmp_path / "__pycache__" / "bench_p.py", BENCH.format(name="cached"))
    names = sorted(p.name for p in find_files([tmp_path]))
    assert names == ["b_bench.py", "bench_a.py"]
    keys = [i.key for i in discover([tmp_path]).instances]
    assert sorted(keys) == ["a[n=1]", "a[n=2]", "b[n=1]", "b[n=2]"]


def test_an_explicit_file_is_taken_whatever_its_name(tmp_path):
    path = _write(tmp_path / "anything.py", BENCH.format(name="x"))
    assert [i.key for i in discover([path]).instances] == ["x[n=1]", "x[n=2]"]


def test_filter_selects_keys(tmp_path):
    _write(tmp_path / "bench_f.py", BENCH.format(name="matmul") + BENCH.format(name="softmax"))
    selection = discover([tmp_path], "matmul and not n=2")
    assert [i.key for i in selection.instances] == ["matmul[n=1]"]
    assert selection.discovered == 4


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("", ["matmul[n=1]", "softmax[n=2]", "sdpa[n=1]"]),
        ("MATMUL", ["matmul[n=1]"]),
        ("matmul or sdpa", ["matmul[n=1]", "sdpa[n=1]"]),
        ("not matmul", ["softmax[n=2]", "sdpa[n=1]"]),
        ("(softmax or sdpa) and n=1", ["sdpa[n=1]"]),
        ("not (softmax or sdpa)", ["matmul[n=1]"]),
        ("[n=2]", ["softmax[n=2]"]),
    ],
)
def test_filter_expressions(expression, expected):
    keys = ["matmul[n=1]", "softmax[n=2]", "sdpa[n=1]"]
    matches = compile_filter(expression)
    assert [k for k in keys if matches(k)] == expected


@pytest.mark.parametrize("expression", ["matmul and", "(matmul", "or x", "a b or c"])
def test_bad_filter_is_a_usage_error(expression):
    with pytest.raises(UsageError, match="-k"):
        compile_filter(expression)


def test_import_error_becomes_an_entry_and_the_rest_still_load(tmp_path):
    _write(tmp_path / "bench_ok.py", BENCH.format(name="ok"))
    _write(tmp_path / "bench_broken.py", "import perfgate\nraise RuntimeError('boom\\nmore')\n")
    selection = discover([tmp_path])
    failures = [i for i in selection.items if isinstance(i, ImportFailure)]
    assert len(failures) == 1
    assert failures[0].name == "bench_broken" == failures[0].key
    assert failures[0].message == "import failed: RuntimeError: boom"
    assert [i.key for i in selection.instances] == ["ok[n=1]", "ok[n=2]"]


def test_duplicate_keys_across_files_are_refused(tmp_path):
    _write(tmp_path / "bench_1.py", BENCH.format(name="same"))
    _write(tmp_path / "bench_2.py", BENCH.format(name="same"))
    with pytest.raises(UsageError, match="defined twice"):
        discover([tmp_path])


def test_missing_path_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        discover([tmp_path / "nope"])


def test_reimporting_a_file_does_not_duplicate(tmp_path):
    _write(tmp_path / "bench_r.py", BENCH.format(name="r"))
    assert len(discover([tmp_path]).instances) == 2
    assert len(discover([tmp_path]).instances) == 2


def test_expression_without_operators_is_one_substring():
    matches = compile_filter("name with space")
    assert matches("x[s=name with space]")
    assert not matches("name")
