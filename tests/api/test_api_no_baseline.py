"""GET /compare with nothing in the store for the base: 404 whose code says `no_baseline`."""

from __future__ import annotations

from apihelpers import PROJECT, Api, document


def test_compare_without_a_baseline_answers_no_baseline(api: Api) -> None:
    head = document(commit="feed" + "0" * 36, branch="feature")
    assert api.post_run(head).status_code == 201
    response = api.get("/api/v1/compare", project=PROJECT, base="a" * 40, head="feed")
    assert response.status_code == 404, response.text
    error = response.json()["error"]
    assert error["code"] == "no_baseline"
    assert error["message"].startswith("no baseline: base aaaaaaaaaaaa has no runs in the store")
    unknown_head = api.get("/api/v1/compare", project=PROJECT, base="a" * 40, head="no-such")
    assert unknown_head.json()["error"]["code"] == "not_found"
