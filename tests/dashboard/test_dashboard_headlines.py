"""Run verdicts for the project page: compared once, and again only when their inputs change."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from functools import partial

from perfgate.api.dashboard import runcompare
from perfgate.api.dashboard.headlines import Headline, HeadlineCache
from perfgate.results import make_key, parse_document
from perfgate.store import catalog
from perfgate.store.connect import Store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

T0 = datetime(2026, 5, 1, tzinfo=timezone.utc)
SLOW_KEY = make_key("kernel", {"n": 64, "variant": 0})


def upload(store: Store, i: int, *, slowdown: float | None = None) -> None:
    doc = synthetic_document(
        benchmarks=2,
        samples=10,
        seed=i,
        commit=f"{i:040x}",
        started_at=T0 + timedelta(hours=i),
        slowdown={SLOW_KEY: slowdown} if slowdown else None,
        ops_per_benchmark=2,
    )
    store_document(store.sessions, parse_document(doc))


def headlines(store: Store, cache: HeadlineCache) -> dict[str, Headline]:
    with store.sessions() as session:
        project = catalog.list_projects(session, names=["acme/models"])[0]
        runs = catalog.list_runs(session, project_id=project.id)
        state = (project.id, project.runs, project.latest_run_at)
        return {
            run.id: cache.get(run.id, state, partial(runcompare.prepare, session, project.id, run))
            for run in runs
        }


def test_an_upload_compares_only_the_runs_whose_inputs_changed(store: Store) -> None:
    for i in range(4):
        upload(store, i)
    cache = HeadlineCache()
    first = headlines(store, cache)
    # The oldest run has nothing before it; the other three are compared with their previous.
    assert cache.compared == 3
    notes = [h.note for h in first.values() if h.note]
    assert len(notes) == 1 and "no earlier commit" in notes[0]
    headlines(store, cache)
    assert cache.compared == 3  # nothing new: answered from the cache
    upload(store, 4, slowdown=1.4)
    after = headlines(store, cache)
    assert cache.compared == 4  # only the new run
    [newest] = [run_id for run_id in after if run_id not in first]
    assert after[newest].counts["regression"] == 1
    assert after[newest].worst == "regression"
