"""The @benchmark decorator: params product, keys, device injection, validation."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

from perfgate.harness.api import benchmark, collect


def _specs(module: str = __name__):
    return collect(module)


def test_params_product_and_keys():
    @benchmark(params={"n": [2, 1], "dtype": ["float32", "bfloat16"]})
    def mm(n, dtype):
        return lambda: None

    (spec,) = _specs()
    keys = [i.key for i in spec.instances()]
    assert keys == [
        "mm[dtype=float32,n=2]",
        "mm[dtype=bfloat16,n=2]",
        "mm[dtype=float32,n=1]",
        "mm[dtype=bfloat16,n=1]",
    ]
    assert spec.instances()[1].params == {"n": 2, "dtype": "bfloat16"}


def test_bare_decorator_and_name_override():
    @benchmark
    def plain():
        return lambda: None

    @benchmark(name="other", tags=["x"])
    def renamed():
        return lambda: None

    specs = _specs()
    assert [s.instances()[0].key for s in specs] == ["plain", "other"]
    assert specs[1].tags == ("x",)
    assert plain.__perfgate_benchmark__ is specs[0]  # the function itself is returned


def test_device_passed_only_when_declared():
    seen = {}

    @benchmark(params={"n": [3]})
    def with_device(n, device):
        seen["with"] = (n, device)
        return lambda: None

    @benchmark(params={"n": [4]})
    def without(n):
        seen["without"] = n
        return lambda: None

    a, b = _specs()
    a.instances()[0].call_setup("DEV")
    b.instances()[0].call_setup("DEV")
    assert seen == {"with": (3, "DEV"), "without": 4}


def test_keyword_defaults_are_not_params_but_reach_items():
    @benchmark(items=lambda batch, seq: batch * seq, unit="tokens")
    def gpt_decode(batch: int = 8, seq: int = 128, device=None):
        return lambda: None

    (spec,) = _specs()
    (instance,) = spec.instances()
    assert instance.key == "gpt_decode"
    assert instance.params == {}
    assert instance.item_count() == 8 * 128


def test_items_from_params_and_int():
    @benchmark(params={"batch": [2, 3]}, items=lambda batch: batch * 10)
    def a(batch):
        return lambda: None

    @benchmark(items=7)
    def b():
        return lambda: None

    spec_a, spec_b = _specs()
    assert [i.item_count() for i in spec_a.instances()] == [20, 30]
    assert spec_b.instances()[0].item_count() == 7


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"params": {"m": [1]}}, "not an argument"),
        ({"params": {"n": []}}, "has no values"),
        ({"params": {"n": [object()]}}, "must be str, int, float, bool or None"),
        ({"params": {"device": ["cpu"]}}, "chosen by the runner"),
        ({"items": 0}, "items must be"),
        ({"max_time": 0}, "max_time"),
    ],
)
def test_bad_declarations_are_refused(kwargs, message):
    with pytest.raises((TypeError, ValueError), match=message):

        @benchmark(**kwargs)
        def bad(n=1):
            return lambda: None


def test_setup_argument_without_value_is_refused():
    with pytest.raises(ValueError, match="argument 'n' has no value"):

        @benchmark
        def needs_n(n):
            return lambda: None


def test_importing_the_api_does_not_import_torch():
    code = "import sys, perfgate, perfgate.harness.api; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
