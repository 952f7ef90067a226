"""A workflow_run report links the run that measured (the event's), never its own run."""

from __future__ import annotations

from perfgate.github.event import parse_event

RUN = "https://github.example/acme/models/actions/runs/5"


def _event(html_url: object) -> dict[str, object]:
    return {"workflow_run": {"id": 5, "head_sha": "b" * 40, "html_url": html_url}}


def test_the_measuring_run_is_read_from_the_event() -> None:
    assert parse_event(_event(RUN), name="workflow_run").run_url == RUN


def test_anything_but_a_run_page_is_not_a_link() -> None:
    for bad in ("javascript:alert(1)", f"{RUN})[x](https://evil.example", RUN + "\n", 5, None):
        assert parse_event(_event(bad), name="workflow_run").run_url is None
    # Only workflow_run events name another run.
    assert parse_event({"pull_request": {"number": 7}}, name="pull_request").run_url is None
