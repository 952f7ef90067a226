"""The project page's queries: change points stored at upload, read as `perfgate trend` shows
them; sparklines from the branch's recent runs; the default branch."""

from __future__ import annotations

from dashhelpers import SHIFT_AT, SHIFTED_KEY, commit_of, feature_document, main_document

from perfgate.api.dashboard import page_data
from perfgate.results import parse_document
from perfgate.store import catalog, run_lookup
from perfgate.store.connect import Store
from perfgate.store.trends import load_series
from perfgate.store.uploads import store_document


def test_branch_rows_show_the_change_points_the_trend_shows(store: Store) -> None:
    for i in range(SHIFT_AT + 10):
        store_document(store.sessions, parse_document(main_document(i)))
    store_document(store.sessions, parse_document(feature_document(0)))
    with store.sessions() as session:
        project_id = catalog.get_project(session, name="acme/models").id
        assert run_lookup.default_branch(session, project_id=project_id) == "main"
        rows = {
            r.key: r
            for r in page_data.benchmark_rows(
                session, project_id=project_id, branch="main", metric="time", window=12
            )
        }
    shifted = rows[SHIFTED_KEY]
    assert shifted.change is not None and shifted.change.commit == commit_of(SHIFT_AT)
    assert shifted.runs == SHIFT_AT + 10 and len(shifted.sparkline) == 12
    assert shifted.sparkline_changes == [12 - 10]
    assert all(r.change is None for k, r in rows.items() if k != SHIFTED_KEY)
    # The trend use case, on the whole history, shows the same and only that change point.
    with store.sessions() as session:
        series = load_series(
            session, project="acme/models", key=SHIFTED_KEY, metric="time", branch="main"
        )
    assert [c.commit for c in series.change_points] == [commit_of(SHIFT_AT)]
