"""torch backend switches: saved and restored around each instance, recorded per benchmark."""

from __future__ import annotations

import random
import textwrap

import pytest

torch = pytest.importorskip("torch")

from perfgate.config import GitHubContext, cuda_behaviour_variables  # noqa: E402
from perfgate.harness.backend_flags import (  # noqa: E402
    describe_changes,
    read_backend_flags,
    restore_backend_flags,
)
from perfgate.harness.environment import collect_environment, fingerprint  # noqa: E402
from perfgate.harness.runner import RunOptions, run_benchmarks  # noqa: E402

SHA = "0123456789abcdef0123456789abcdef01234567"

# The first benchmark's setup turns on TF32-class switches; the second only reads them.
LEAKY = """
import torch, perfgate
SEEN = {}

@perfgate.benchmark
def a_sets_flags():
    torch.set_float32_matmul_precision("high")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.deterministic = True
    x = torch.randn(8, 8)
    return lambda: x @ x

@perfgate.benchmark
def b_reads_flags():
    seen = (torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark)
    x = torch.randn(8, 8)
    def call():
        # The flags in force while timing, not only at setup.
        assert (torch.get_float32_matmul_precision(), torch.backends.cudnn.benchmark) == seen
        return x @ x
    assert seen == ("highest", False), f"flags leaked from the previous instance: {seen}"
    return call
"""


@pytest.fixture
def clean_flags():
    saved = read_backend_flags()
    yield
    restore_backend_flags(saved)


@pytest.mark.parametrize("interleave", [False, True])
def test_a_setup_cannot_change_the_flags_of_later_instances(tmp_path, clean_flags, interleave):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "bench_flags.py").write_text(textwrap.dedent(LEAKY))
    before = read_backend_flags()
    doc = run_benchmarks(
        RunOptions(paths=[folder], commit=SHA, max_time=0.05, profile=False, interleave=interleave),
        github=GitHubContext(),
        cwd=tmp_path,
    )
    by_key = {b.key: b for b in doc.benchmarks}
    assert by_key["b_reads_flags"].error is None
    assert by_key["a_sets_flags"].error is None
    note = by_key["a_sets_flags"].metrics["time"].note
    assert "float32_matmul_precision=high" in note
    assert "cudnn.benchmark=True" in note and "cudnn.deterministic=True" in note
    assert by_key["b_reads_flags"].metrics["time"].note is None
    assert read_backend_flags() == before  # and the process is left as it was
    assert doc.environment.backend_flags == before


def test_restore_after_random_changes(clean_flags):
    rng = random.Random(0)

    def change():
        choice = rng.randrange(6)
        if choice == 0:
            torch.set_float32_matmul_precision(rng.choice(["highest", "high", "medium"]))
        elif choice == 1:
            torch.backends.cuda.matmul.allow_tf32 = rng.random() < 0.5
        elif choice == 2:
            torch.backends.cudnn.benchmark = rng.random() < 0.5
        elif choice == 3 and hasattr(torch.backends.cuda.matmul, "fp32_precision"):
            torch.backends.cuda.matmul.fp32_precision = rng.choice(["ieee", "tf32", "none"])
        elif choice == 4:
            torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = rng.random() < 0.5
        else:
            torch.use_deterministic_algorithms(rng.random() < 0.5)

    for _ in range(100):
        for _ in range(rng.randrange(3)):
            change()
        saved = read_backend_flags()
        for _ in range(rng.randrange(1, 5)):
            change()
        restore_backend_flags(saved)
        now = read_backend_flags()
        assert all(v == "mixed" or now[k] == v for k, v in saved.items()), describe_changes(
            saved, now
        )


def test_environment_records_flags_and_cuda_variables(clean_flags):
    env = collect_environment("cpu")
    assert env["backend_flags"] == read_backend_flags()
    assert set(env["cuda_env"]) == {
        "NVIDIA_TF32_OVERRIDE",
        "CUBLAS_WORKSPACE_CONFIG",
        "PYTORCH_CUDA_ALLOC_CONF",
        "CUDA_LAUNCH_BLOCKING",
    }
    torch.backends.cudnn.benchmark = not torch.backends.cudnn.benchmark
    assert fingerprint(collect_environment("cpu")) != env["fingerprint"]
    assert cuda_behaviour_variables({"NVIDIA_TF32_OVERRIDE": "0"})["NVIDIA_TF32_OVERRIDE"] == "0"
    assert (
        fingerprint({**env, "cuda_env": {**env["cuda_env"], "NVIDIA_TF32_OVERRIDE": "0"}})
        != (env["fingerprint"])
    )
