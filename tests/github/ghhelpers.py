"""Constants and builders shared by the GitHub tests (fixtures live in conftest.py)."""

from __future__ import annotations

from fake_github import FakeGitHub

from perfgate.results import parse_document
from perfgate.stats.compare_documents import compare_documents
from perfgate.stats.model import Comparison
from synthetic import synthetic_document

BASE_SHA = "a" * 40
HEAD_SHA = "b" * 40
SLOW_KEY = "kernel[n=128,variant=0]"
# Every variable perfgate reads from Actions; tests set the ones they need, the rest are unset.
ACTIONS_VARIABLES = (
    "GITHUB_ACTIONS",
    "GITHUB_TOKEN",
    "GITHUB_REPOSITORY",
    "GITHUB_EVENT_PATH",
    "GITHUB_EVENT_NAME",
    "GITHUB_API_URL",
    "GITHUB_SERVER_URL",
    "GITHUB_RUN_ID",
    "GITHUB_SHA",
    "GITHUB_REF_NAME",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_OUTPUT",
    "PERFGATE_SERVER",
)


def make_comparison(*, slow: float = 2.5, benchmarks: int = 20) -> Comparison:
    base = synthetic_document(benchmarks=benchmarks, samples=40, seed=1, commit=BASE_SHA)
    head = synthetic_document(
        benchmarks=benchmarks,
        samples=40,
        seed=2,
        commit=HEAD_SHA,
        branch="feature",
        slowdown={SLOW_KEY: slow} if slow != 1.0 else None,
    )
    return compare_documents([parse_document(base)], [parse_document(head)])


def body_of(fake: FakeGitHub, number: int = 7) -> str:
    (only,) = fake.perfgate_comments(number)
    text: str = only["body"]
    return text
