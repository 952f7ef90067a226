"""The project page's queries: change points detected as `perfgate trend` does, and only again
after a new run; sparklines from the branch's recent runs; the default branch."""

from __future__ import annotations

from dashhelpers import SHIFT_AT, SHIFTED_KEY, commit_of, feature_document, main_document

from perfgate.api.dashboard import queries
from perfgate.results import parse_document
from perfgate.store import reads
from perfgate.store.connect import Store
from perfgate.store.trends import load_series
from perfgate.store.uploads import store_document


def test_branch_detection_matches_the_trend_use_case_and_is_cached(store: Store) -> None:
    for i in range(SHIFT_AT + 10):
        store_document(store.sessions, parse_document(main_document(i)))
    store_document(store.sessions, parse_document(feature_document(0)))
    with store.sessions() as session:
        project_id = reads.get_project(session, name="acme/models").id
        assert queries.default_branch(session, project_id=project_id) == "main"
    cache = queries.DetectionCache()
    queries.detect_branch(
        store.sessions, project_id=project_id, branch="main", metric="time", cache=cache
    )
    with store.sessions() as session:
        rows = {
            r.key: r
            for r in queries.benchmark_rows(
                session, project_id=project_id, branch="main", metric="time", window=12
            )
        }
        state = queries.branch_state(session, project_id=project_id, branch="main")
    shifted = rows[SHIFTED_KEY]
    assert shifted.change is not None and shifted.change.commit == commit_of(SHIFT_AT)
    assert shifted.runs == SHIFT_AT + 10 and len(shifted.sparkline) == 12
    assert shifted.sparkline_changes == [12 - 10]
    assert all(r.change is None for k, r in rows.items() if k != SHIFTED_KEY)
    # The trend use case, on the whole history, finds the same and only that change point.
    series = load_series(
        store.sessions, project="acme/models", key=SHIFTED_KEY, metric="time", branch="main"
    )
    assert [c.commit for c in series.change_points] == [commit_of(SHIFT_AT)]

    assert cache.fresh((project_id, "main", "time"), state)
    store_document(store.sessions, parse_document(main_document(SHIFT_AT + 10)))
    with store.sessions() as session:
        newer = queries.branch_state(session, project_id=project_id, branch="main")
    assert newer != state and not cache.fresh((project_id, "main", "time"), newer)
