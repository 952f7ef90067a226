"""Dashboard pages over real HTTP: status codes, content, escaping, login, PR-comment tables."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote, urlencode

import httpx
import pytest
from dashhelpers import (
    FEATURE_BRANCH,
    FEATURE_RUNS,
    HOSTILE_NAME,
    HOSTILE_PROJECT,
    MAIN_RUNS,
    PR_NUMBER,
    PROJECT,
    SHIFT_AT,
    SHIFTED_KEY,
    LiveServer,
    Seeded,
    commit_of,
)
from markupsafe import escape

from perfgate.report.markdown import render_markdown
from perfgate.stats.two_sample import CompareSettings

PROJECT_PATH = f"/p/{PROJECT}"


def trend_path(key: str, **query: str) -> str:
    return f"{PROJECT_PATH}/trend?{urlencode({'key': key, **query})}"


def chart_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="trend-data">(.*?)</script>', page, re.S)
    assert found, "the trend page embeds no chart data"
    data: dict[str, Any] = json.loads(found.group(1))
    return data


class TableCells(HTMLParser):
    """Every table's rows as lists of cell texts, in document order."""

    def __init__(self, root_id: str) -> None:
        super().__init__()
        self.root_id = root_id
        self.depth = 0  # > 0 inside the element with id root_id
        self.tables: list[list[list[str]]] = []
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth:
            self.depth += 1
        elif dict(attrs).get("id") == self.root_id:
            self.depth = 1
        if not self.depth:
            return
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if not self.depth:
            return
        self.depth -= 1
        if tag in ("td", "th") and self.cell is not None:
            self.tables[-1][-1].append("".join(self.cell).strip())
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def page_tables(page: str, root_id: str = "comment") -> list[list[list[str]]]:
    parser = TableCells(root_id)
    parser.feed(page)
    return parser.tables


def markdown_tables(markdown: str) -> list[list[list[str]]]:
    """The tables of the PR comment, cells unescaped as GitHub shows them (no `code` ticks)."""
    tables: list[list[list[str]]] = []
    previous_was_row = False
    for line in markdown.splitlines():
        if not line.startswith("|"):
            previous_was_row = False
            continue
        if re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line):
            continue
        if not previous_was_row:
            tables.append([])
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        tables[-1].append([c.strip().replace("\\|", "|").strip("`") for c in cells])
        previous_was_row = True
    return tables


def shown_as_on_page(cell: str) -> str:
    """A comment cell as the page shows it: verdict icons become badges (their word stays),
    block sparklines an SVG (no text)."""
    cell = re.sub(r"^(🔴|🟢|⚪|🟡|⚫|🆕|❌) ", "", cell)
    return "" if re.fullmatch(r"\[?[▁-█]+→[▁-█](\]\(.*\))?", cell) else cell


@pytest.fixture
def client(backend_server: tuple[LiveServer, Seeded]) -> Iterator[httpx.Client]:
    server, _ = backend_server
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture
def seeded(backend_server: tuple[LiveServer, Seeded]) -> Seeded:
    return backend_server[1]


def test_projects_page_lists_projects_with_names_escaped(client: httpx.Client) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert f'href="/p/{PROJECT}"' in page.text
    assert str(escape(HOSTILE_PROJECT)) in page.text
    assert HOSTILE_PROJECT not in page.text
    assert "<b>" not in page.text
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy


def test_project_page_shows_each_benchmark_with_sparkline_and_latest_change(
    client: httpx.Client, seeded: Seeded
) -> None:
    page = client.get(PROJECT_PATH)
    assert page.status_code == 200
    table = page.text[page.text.index('id="benchmarks"') :]
    rows = re.findall(r'<tr data-key="([^"]+)"(?: class="attention")?>(.*?)</tr>', table, re.S)
    keys = [html.unescape(k) for k, _ in rows]
    assert sorted(keys) == sorted(b["key"] for b in seeded.main[0]["benchmarks"])
    # The benchmark with an open change point leads, though its name sorts after the others'.
    assert keys[0] == SHIFTED_KEY and min(keys) < SHIFTED_KEY
    for key, body in rows:
        assert 'class="sparkline"' in body
        assert body.count("<polyline") == 1
        if html.unescape(key) == SHIFTED_KEY:
            # The planted +30% shift: detected on this page view, marked in the sparkline.
            assert "spark-change" in body
            assert "+30" in body or "+29" in body or "+31" in body
            assert "status-open" in body
            assert commit_of(SHIFT_AT)[:7] in body
        else:
            assert "spark-change" not in body
            assert "status-" not in body
    # The feature branch has no shift: no change on its page.
    feature = client.get(PROJECT_PATH, params={"branch": FEATURE_BRANCH})
    assert feature.status_code == 200
    assert "status-open" not in feature.text
    assert f'<option value="{FEATURE_BRANCH}" selected>' in feature.text


def test_project_page_leads_with_open_changes_then_pull_requests(
    client: httpx.Client, seeded: Seeded
) -> None:
    page = client.get(PROJECT_PATH).text
    sections = [page.index(f'id="{name}"') for name in ("open-changes", "pr-runs", "benchmarks")]
    assert sections == sorted(sections)
    open_changes = page[sections[0] : page.index("</table>", sections[0])]
    assert re.findall(r'data-key="([^"]+)"', open_changes) == [html.escape(SHIFTED_KEY)]
    assert 'class="verdict-regression"' in open_changes
    # The pull request's run, from another branch than the one shown, with its verdict counts.
    pr = page[sections[1] : page.index("</table>", sections[1])]
    assert f"#{PR_NUMBER}" in pr and seeded.pr["run"]["id"][:8] in pr
    assert '<tr class="verdict-regression"' in pr
    assert '<span class="badge badge-regression">1 regression</span>' in pr
    # Recent runs carry a verdict: the planted shift's run is one regression, the PR run too.
    runs = page[page.index('id="runs"') :]
    assert "<th>verdict</th>" in runs
    assert f'data-run="{seeded.pr["run"]["id"]}"' in runs


def test_trend_page_embeds_points_and_change_points_per_branch(client: httpx.Client) -> None:
    page = client.get(trend_path(SHIFTED_KEY))
    assert page.status_code == 200
    data = chart_data(page.text)
    assert data["branch"] == "main"
    assert len(data["points"]) == MAIN_RUNS
    assert data["change_points"] == [SHIFT_AT]
    shifted = data["points"][SHIFT_AT]
    assert shifted["commit"] == commit_of(SHIFT_AT)
    assert shifted["url"] == f"/p/{PROJECT}/runs/{shifted['run']}"
    assert shifted["change"]["status"] == "open"
    assert all(p["ci"] and p["ci"][0] <= p["median"] <= p["ci"][1] for p in data["points"])
    # The vendored chart library, never a CDN.
    assert "/static/vendor/uplot/uPlot.iife.min.js" in page.text
    assert "https://" not in page.text.split("<main>")[0]

    feature = client.get(trend_path(SHIFTED_KEY, branch=FEATURE_BRANCH))
    assert feature.status_code == 200
    feature_data = chart_data(feature.text)
    assert len(feature_data["points"]) == FEATURE_RUNS
    assert feature_data["change_points"] == []


def test_trend_page_errors_are_html_pages(client: httpx.Client) -> None:
    unknown = client.get(trend_path("no-such-benchmark"))
    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("text/html")
    assert "no-such-benchmark" in unknown.text
    empty_branch = client.get(trend_path(SHIFTED_KEY, branch="nowhere"))
    assert empty_branch.status_code == 404
    # The filter stays on the page so a person can pick another branch.
    assert 'id="trend-filters"' in empty_branch.text
    assert client.get("/p/no/such-project").status_code == 404
    assert client.get(f"{PROJECT_PATH}/trend").status_code == 404


def test_hostile_benchmark_name_is_escaped_everywhere(client: httpx.Client, seeded: Seeded) -> None:
    project_page = client.get(f"/p/{quote(HOSTILE_PROJECT, safe='/')}")
    assert project_page.status_code == 200
    assert HOSTILE_NAME not in project_page.text
    assert str(escape(HOSTILE_NAME)) in project_page.text
    trend = client.get(
        f"/p/{quote(HOSTILE_PROJECT, safe='/')}/trend", params={"key": seeded.hostile_key}
    )
    assert trend.status_code == 200
    assert HOSTILE_NAME not in trend.text
    # In the chart's JSON the markup is \u003c-escaped, so it cannot close the script element.
    assert chart_data(trend.text)["key"] == seeded.hostile_key


def test_run_page_renders_the_pr_comment_tables(client: httpx.Client, seeded: Seeded) -> None:
    head = seeded.main[SHIFT_AT]["run"]
    page = client.get(f"{PROJECT_PATH}/runs/{head['id']}")
    assert page.status_code == 200
    assert "1 regression" in page.text
    assert f"/p/{PROJECT}/runs/{seeded.main[SHIFT_AT - 1]['run']['id']}" in page.text

    # The same comparison made the CLI's way (`perfgate compare BASE HEAD` on the store) gives
    # the PR comment; the page must show its tables cell for cell.
    from perfgate.cli.compare import build_comparison

    comparison = build_comparison(
        base=commit_of(SHIFT_AT - 1),
        head=commit_of(SHIFT_AT),
        settings=CompareSettings(),
        project=PROJECT,
        base_branch="main",
        db_url=seeded.url,
        max_bytes=1 << 30,
    )
    expected = [
        [[shown_as_on_page(cell) for cell in row] for row in table]
        for table in markdown_tables(render_markdown(comparison, limit=1 << 40))
    ]
    shown = page_tables(page.text)
    assert len(expected) >= 3  # changes, the ops behind the regression, all results
    assert shown == expected
    regression_rows = [row for table in shown for row in table if "regression" in row[-1]]
    assert regression_rows and regression_rows[0][0] == SHIFTED_KEY
    # The regression's row carries its verdict class and badge, its trend an SVG sparkline.
    row = re.search(r'<tr class="verdict-regression">(.*?)</tr>', page.text, re.S)
    assert row is not None and html.escape(SHIFTED_KEY) in row.group(1)
    assert '<span class="badge badge-regression">regression</span>' in row.group(1)
    assert '<svg class="sparkline"' in row.group(1)
    assert any(row[0] == "aten::copy_" for table in shown for row in table)


def test_compare_page_and_run_without_base(client: httpx.Client, seeded: Seeded) -> None:
    page = client.get(
        f"{PROJECT_PATH}/compare",
        params={"base": commit_of(SHIFT_AT - 1), "head": commit_of(SHIFT_AT)},
    )
    assert page.status_code == 200
    assert "1 regression" in page.text
    # The PR comment links to SERVER/compare?project=&base=&head= (perfgate comment --server).
    query = {"project": PROJECT, "base": commit_of(SHIFT_AT - 1), "head": commit_of(SHIFT_AT)}
    link = client.get("/compare", params=query)
    assert link.status_code == 303
    assert link.headers["location"] == (
        f"{PROJECT_PATH}/compare?{urlencode({'base': query['base'], 'head': query['head']})}"
    )
    assert client.get(link.headers["location"]).text == page.text
    first = seeded.main[0]["run"]["id"]
    lonely = client.get(f"{PROJECT_PATH}/runs/{first}")
    assert lonely.status_code == 200
    assert 'id="no-base"' in lonely.text
    nobody = "00000000-0000-4000-8000-000000000000"
    assert client.get(f"{PROJECT_PATH}/runs/{nobody}").status_code == 404
    missing = client.get(f"{PROJECT_PATH}/compare", params={"base": "main", "head": "deadbeef"})
    assert missing.status_code == 404


def test_static_assets_ship_the_chart_library_and_its_license(client: httpx.Client) -> None:
    script = client.get("/static/vendor/uplot/uPlot.iife.min.js")
    assert script.status_code == 200
    assert "uPlot" in script.text[:200]
    assert "MIT License" in client.get("/static/vendor/uplot/LICENSE").text
    assert client.get("/static/trend.js").status_code == 200
    assert client.get("/static/../pages.py").status_code == 404


# --- a private server: the login page, the cookie, and who may see what -----------------------


@pytest.fixture
def private(private_server: LiveServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=private_server.url, timeout=60) as c:
        yield c


def test_private_pages_redirect_to_login(private: httpx.Client) -> None:
    for path in ("/", PROJECT_PATH, trend_path(SHIFTED_KEY)):
        answer = private.get(path)
        assert answer.status_code == 303, path
        assert answer.headers["location"] == f"/login?next={quote(path, safe='')}"
    login = private.get("/login", params={"next": PROJECT_PATH})
    assert login.status_code == 200
    assert 'type="password"' in login.text
    assert f'value="{PROJECT_PATH}"' in login.text


def test_private_pages_accept_a_bearer_token_for_their_project_only(
    private: httpx.Client, seeded_sqlite: Seeded
) -> None:
    auth = {"Authorization": f"Bearer {seeded_sqlite.read_token}"}
    assert private.get(PROJECT_PATH, headers=auth).status_code == 200
    projects = private.get("/", headers=auth)
    assert projects.status_code == 200
    assert f'href="/p/{PROJECT}"' in projects.text
    assert "evil" not in projects.text
    other = private.get(f"/p/{quote(HOSTILE_PROJECT, safe='/')}", headers=auth)
    assert other.status_code == 403
    assert other.headers["content-type"].startswith("text/html")


def test_login_sets_an_httponly_strict_cookie_and_logout_clears_it(
    private: httpx.Client, seeded_sqlite: Seeded
) -> None:
    wrong = private.post("/login", data={"token": "pg_not-a-token", "next": PROJECT_PATH})
    assert wrong.status_code == 401
    assert "unknown or revoked" in wrong.text
    assert "set-cookie" not in wrong.headers

    good = private.post("/login", data={"token": seeded_sqlite.read_token, "next": PROJECT_PATH})
    assert good.status_code == 303
    assert good.headers["location"] == PROJECT_PATH
    cookie = good.headers["set-cookie"]
    assert cookie.startswith(f"perfgate_token={seeded_sqlite.read_token};")
    lowered = cookie.lower()
    assert "httponly" in lowered and "samesite=strict" in lowered and "path=/" in lowered
    assert "secure" not in lowered  # served over plain http here; https gets Secure
    assert private.get(PROJECT_PATH).status_code == 200  # the client keeps the cookie

    out = private.post("/logout")
    assert out.status_code == 303
    assert 'perfgate_token=""' in out.headers["set-cookie"]
    assert "max-age=0" in out.headers["set-cookie"].lower()
    assert private.get(PROJECT_PATH).status_code == 303


def test_login_refuses_other_sites_and_foreign_redirects(
    private: httpx.Client, seeded_sqlite: Seeded
) -> None:
    forged = private.post(
        "/login",
        data={"token": seeded_sqlite.read_token},
        headers={"Origin": "http://evil.example"},
    )
    assert forged.status_code == 403
    assert "set-cookie" not in forged.headers
    for target in ("//evil.example/x", "https://evil.example/", "javascript:alert(1)", "/\\evil"):
        answer = private.post("/login", data={"token": seeded_sqlite.read_token, "next": target})
        assert answer.status_code == 303
        assert answer.headers["location"] == "/", target
        private.cookies.clear()


def test_a_revoked_token_in_the_cookie_is_dropped(
    private: httpx.Client, seeded_sqlite: Seeded
) -> None:
    private.cookies.set("perfgate_token", seeded_sqlite.revoked_token)
    answer = private.get(PROJECT_PATH)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/login?next=")
    assert 'perfgate_token=""' in answer.headers["set-cookie"]


# --- the trend page as a triage tool: axis, overlay, acknowledge and dismiss ------------------


def change_status(url: str, change_id: int) -> str:
    """A change point's status as the store has it."""
    from sqlalchemy import select

    from perfgate.store import models
    from perfgate.store.connect import open_store

    with open_store(url) as store, store.sessions() as session:
        status = session.scalar(
            select(models.ChangePoint.status).where(models.ChangePoint.id == change_id)
        )
    assert status is not None, change_id
    return str(status)


def shifted_change_id(page: str) -> int:
    found = re.search(r'<tr data-change-id="(\d+)">', page)
    assert found, "the trend page lists no change point"
    return int(found.group(1))


def test_trend_axis_has_round_distinct_ticks_and_an_honest_note(client: httpx.Client) -> None:
    for metric in ("time", "peak_memory"):
        page = client.get(trend_path(SHIFTED_KEY, metric=metric)).text
        axis = chart_data(page)["y_axis"]
        assert len(set(axis["labels"])) == len(axis["labels"]) >= 2, axis
        assert axis["min"] <= min(p["median"] for p in chart_data(page)["points"])
    # peak_memory has one value per run: no band, so the note must not promise one.
    memory = client.get(trend_path(SHIFTED_KEY, metric="peak_memory")).text
    note = re.search(r'<p class="legend-note" id="legend-note">(.*?)</p>', memory, re.S)
    assert note is not None and "confidence" not in note.group(1)
    assert "One value per run" in note.group(1)
    time_note = client.get(trend_path(SHIFTED_KEY)).text
    assert "95% confidence band" in time_note


def test_trend_page_overlays_a_pull_requests_head(client: httpx.Client, seeded: Seeded) -> None:
    from dashhelpers import PR_KEY, PR_SLOWDOWN

    pr_run = seeded.pr["run"]["id"]
    page = client.get(trend_path(PR_KEY, head=pr_run))
    assert page.status_code == 200
    data = chart_data(page.text)
    overlay = data["overlay"]
    assert overlay["run"] == pr_run and overlay["label"] == f"PR #{PR_NUMBER} head"
    level = sorted(p["median"] for p in data["points"])[len(data["points"]) // 2]
    assert overlay["median"] / level == pytest.approx(PR_SLOWDOWN, rel=0.05)
    # The axis makes room for the overlay, and the PR is offered in the overlay picker.
    assert data["y_axis"]["max"] >= overlay["median"]
    assert f'<option value="{pr_run}" selected>PR #{PR_NUMBER} head' in page.text
    # The PR run's page links its regression's trend with the overlay on.
    run_page = client.get(f"{PROJECT_PATH}/runs/{pr_run}").text
    assert f"head={pr_run}" in run_page


def test_change_points_link_their_runs_and_buttons_need_an_upload_token(
    private: httpx.Client, seeded_sqlite: Seeded
) -> None:
    read = {"Authorization": f"Bearer {seeded_sqlite.read_token}"}
    page = private.get(trend_path(SHIFTED_KEY), headers=read).text
    run_id = seeded_sqlite.main[SHIFT_AT]["run"]["id"]
    row = page[page.index("<tr data-change-id=") : page.index("</tr>", page.index("data-change-"))]
    assert f'href="/p/{PROJECT}/runs/{run_id}"' in row
    assert "<button" not in row and 'id="triage-note"' in page
    upload = {"Authorization": f"Bearer {seeded_sqlite.upload_token}"}
    page = private.get(trend_path(SHIFTED_KEY), headers=upload).text
    change_id = shifted_change_id(page)
    assert f'action="/p/{PROJECT}/changes/{change_id}"' in page
    assert 'data-status="acknowledged"' in page and 'data-status="dismissed"' in page


def test_triage_form_sets_the_status_for_an_upload_login_only(
    private: httpx.Client, seeded_sqlite: Seeded
) -> None:
    upload = {"Authorization": f"Bearer {seeded_sqlite.upload_token}"}
    change_id = shifted_change_id(private.get(trend_path(SHIFTED_KEY), headers=upload).text)
    action = f"{PROJECT_PATH}/changes/{change_id}"
    back = trend_path(SHIFTED_KEY)
    form = {"status": "acknowledged", "next": back}
    # Without a login the form leads to the login page, and from there back to the trend page.
    anonymous = private.post(action, data=form)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == f"/login?next={quote(back, safe='')}"
    try:
        # A read login may look but not triage.
        private.post("/login", data={"token": seeded_sqlite.read_token})
        assert private.post(action, data=form).status_code == 403
        assert change_status(seeded_sqlite.url, change_id) == "open"
        # An upload login may, but not from another site's page (the login's own rule).
        private.post("/login", data={"token": seeded_sqlite.upload_token})
        forged = private.post(action, data=form, headers={"Origin": "http://evil.example"})
        assert forged.status_code == 403
        assert change_status(seeded_sqlite.url, change_id) == "open"
        done = private.post(action, data=form, headers={"Origin": private_origin(private)})
        assert done.status_code == 303 and done.headers["location"] == back
        assert change_status(seeded_sqlite.url, change_id) == "acknowledged"
        page = private.get(back).text
        assert 'status-acknowledged">acknowledged' in page and 'data-status="open"' in page
        # A status the store does not know is a bad request, and changes nothing.
        bad = private.post(action, data={"status": "fixed", "next": back})
        assert bad.status_code == 400 and "is not one of" in bad.text
        assert change_status(seeded_sqlite.url, change_id) == "acknowledged"
    finally:
        private.post(action, data={"status": "open", "next": back})
        private.post("/logout")
    assert change_status(seeded_sqlite.url, change_id) == "open"


def private_origin(client: httpx.Client) -> str:
    return str(client.base_url).rstrip("/")
