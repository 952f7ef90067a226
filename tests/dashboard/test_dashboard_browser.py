"""The dashboard in real headless Chromium: the chart draws its points and change-point marks,
the branch filter reloads the series, hover and click work, and login keeps the token unseen.

Screenshots land in $PERFGATE_TEST_ARTIFACTS (default `.perfgate/test-artifacts/`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from dashhelpers import (
    FEATURE_BRANCH,
    FEATURE_RUNS,
    MAIN_RUNS,
    PROJECT,
    SHIFT_AT,
    SHIFTED_KEY,
    LiveServer,
    Seeded,
    commit_of,
)

pytestmark = pytest.mark.slow

WAIT_S = 20

# Reads the canvas back: which points have the series colour at their centre, and how much of
# each change point's column (and of a column with no change point, as a control) is red.
PIXELS_JS = """
const u = window.perfgateTrend.chart, ctx = u.ctx, pts = window.perfgateTrend.data.points;
const blue = (r, g, b, a) => a > 200 && b > 110 && r < 90 && g < 140;
const red = (r, g, b, a) => a > 200 && r > 170 && g < 110 && b < 110;
function near(x, y, test) {
  const img = ctx.getImageData(Math.round(x) - 2, Math.round(y) - 2, 5, 5).data;
  for (let k = 0; k < img.length; k += 4) {
    if (test(img[k], img[k + 1], img[k + 2], img[k + 3])) return true;
  }
  return false;
}
function redShare(i) {
  const x = Math.round(u.valToPos(i, "x", true)), top = Math.round(u.bbox.top);
  const h = Math.round(u.bbox.height);
  const img = ctx.getImageData(x - 1, top, 3, h).data;
  let rows = 0;
  for (let row = 0; row < h; row++) {
    for (let col = 0; col < 3; col++) {
      const k = (row * 3 + col) * 4;
      if (red(img[k], img[k + 1], img[k + 2], img[k + 3])) { rows++; break; }
    }
  }
  return rows / h;
}
const painted = pts.filter((p, i) =>
  near(u.valToPos(i, "x", true), u.valToPos(p.median, "y", true), blue)).length;
const marks = window.perfgateTrend.data.change_points.map(redShare);
return {painted: painted, marks: marks, control: redShare(%d)};
"""


def trend_url(server: LiveServer, **query: str) -> str:
    return f"{server.url}/p/{PROJECT}/trend?{urlencode({'key': SHIFTED_KEY, **query})}"


def wait_for_chart(browser: Any) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(browser, WAIT_S).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, "#trend-chart[data-rendered='true']"))
    )
    return browser.find_element(By.ID, "trend-chart")


def browser_errors(browser: Any) -> list[str]:
    """SEVERE console entries: script errors and Content-Security-Policy refusals."""
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_chart_draws_points_and_change_point_marks(
    browser: Any, public_server: LiveServer, artifacts_dir: Path
) -> None:
    browser.get(trend_url(public_server))
    chart = wait_for_chart(browser)
    assert chart.get_attribute("data-drawn-points") == str(MAIN_RUNS)
    assert chart.get_attribute("data-drawn-change-points") == "1"
    pixels = browser.execute_script(PIXELS_JS % 5)
    assert pixels["painted"] == MAIN_RUNS
    assert len(pixels["marks"]) == 1 and pixels["marks"][0] > 0.4, pixels
    assert pixels["control"] < 0.05, pixels
    shot = artifacts_dir / "dashboard-trend.png"
    assert browser.save_screenshot(str(shot)), shot
    assert shot.stat().st_size > 10_000
    assert browser_errors(browser) == []


def test_branch_filter_reloads_the_series(browser: Any, public_server: LiveServer) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import Select, WebDriverWait

    browser.get(trend_url(public_server))
    wait_for_chart(browser)
    Select(browser.find_element(By.ID, "branch")).select_by_value(FEATURE_BRANCH)
    WebDriverWait(browser, WAIT_S).until(ec.url_contains("branch=feature%2Fx"))
    chart = wait_for_chart(browser)
    assert chart.get_attribute("data-drawn-points") == str(FEATURE_RUNS)
    assert chart.get_attribute("data-drawn-change-points") == "0"
    selected = Select(browser.find_element(By.ID, "branch")).first_selected_option
    assert selected.get_attribute("value") == FEATURE_BRANCH


def test_hover_shows_the_commit_and_click_opens_the_run(
    browser: Any, public_server: LiveServer, seeded_sqlite: Seeded, artifacts_dir: Path
) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(trend_url(public_server))
    wait_for_chart(browser)
    over = browser.find_element(By.CSS_SELECTOR, "#trend-chart .u-over")
    x, y, width, height = browser.execute_script(
        "const u = window.perfgateTrend.chart, p = window.perfgateTrend.data.points[arguments[0]];"
        "return [u.valToPos(arguments[0], 'x'), u.valToPos(p.median, 'y'),"
        " u.over.clientWidth, u.over.clientHeight];",
        SHIFT_AT,
    )
    # Selenium offsets count from the element's centre.
    ActionChains(browser).move_to_element_with_offset(
        over, int(x - width / 2), int(y - height / 2)
    ).perform()
    tooltip = browser.find_element(By.ID, "trend-tooltip")
    WebDriverWait(browser, WAIT_S).until(lambda _: tooltip.is_displayed())
    run_id = seeded_sqlite.main[SHIFT_AT]["run"]["id"]
    assert tooltip.get_attribute("data-run") == run_id
    assert commit_of(SHIFT_AT)[:10] in tooltip.text
    assert "change point +" in tooltip.text
    browser.save_screenshot(str(artifacts_dir / "dashboard-trend-hover.png"))

    ActionChains(browser).click().perform()
    WebDriverWait(browser, WAIT_S).until(ec.url_contains(f"/runs/{run_id}"))
    headline = browser.find_element(By.CSS_SELECTOR, "#comment h3").text
    assert "1 regression" in headline
    browser.save_screenshot(str(artifacts_dir / "dashboard-run.png"))
    assert browser_errors(browser) == []


def test_project_page_in_the_browser(
    browser: Any, public_server: LiveServer, artifacts_dir: Path
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{public_server.url}/p/{PROJECT}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#benchmarks tbody tr")
    assert len(rows) == 3
    shifted = browser.find_element(By.CSS_SELECTOR, f'#benchmarks tr[data-key="{SHIFTED_KEY}"]')
    assert shifted.find_elements(By.CSS_SELECTOR, "svg.sparkline line.spark-change")
    assert "open" in shifted.text
    browser.save_screenshot(str(artifacts_dir / "dashboard-project.png"))
    shifted.find_element(By.TAG_NAME, "a").click()
    chart = wait_for_chart(browser)
    assert chart.get_attribute("data-drawn-change-points") == "1"
    assert browser_errors(browser) == []


def test_login_keeps_the_token_out_of_scripts_and_logout_ends_it(
    browser: Any, private_server: LiveServer, seeded_sqlite: Seeded
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(trend_url(private_server))
    WebDriverWait(browser, WAIT_S).until(ec.url_contains("/login?next="))
    browser.find_element(By.ID, "token").send_keys(seeded_sqlite.read_token)
    browser.find_element(By.ID, "login-submit").click()
    chart = wait_for_chart(browser)  # back where we started, now allowed
    assert chart.get_attribute("data-drawn-points") == str(MAIN_RUNS)
    cookie = browser.get_cookie("perfgate_token")
    assert cookie is not None and cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert "perfgate_token" not in browser.execute_script("return document.cookie")

    browser.find_element(By.ID, "logout").click()
    WebDriverWait(browser, WAIT_S).until(ec.url_contains("/login"))
    assert browser.get_cookie("perfgate_token") is None
    browser.get(f"{private_server.url}/p/{PROJECT}")
    WebDriverWait(browser, WAIT_S).until(ec.url_contains("/login?next="))
    browser.delete_all_cookies()


def narrow(browser: Any, width: int) -> None:
    """Lay pages out `width` CSS pixels wide (a window cannot be made that narrow everywhere)."""
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False},
    )


def test_regression_rows_carry_their_class_and_a_coloured_badge(
    browser: Any, public_server: LiveServer, seeded_sqlite: Seeded, artifacts_dir: Path
) -> None:
    from selenium.webdriver.common.by import By

    run_id = seeded_sqlite.main[SHIFT_AT]["run"]["id"]
    browser.get(f"{public_server.url}/p/{PROJECT}/runs/{run_id}")
    rows = browser.find_elements(By.CSS_SELECTOR, "#comment tr.verdict-regression")
    assert rows, "no row carries the regression's class"
    badge = rows[0].find_element(By.CSS_SELECTOR, ".badge-regression")
    assert badge.is_displayed() and badge.text == "regression"
    background = browser.execute_script(
        "return getComputedStyle(arguments[0]).backgroundColor", badge
    )
    assert background not in ("transparent", "rgba(0, 0, 0, 0)"), background
    colour = browser.execute_script("return getComputedStyle(arguments[0]).color", badge)
    assert colour != background
    # The row itself is tinted, and its trend is drawn (an SVG, not block characters).
    row_background = browser.execute_script(
        "return getComputedStyle(arguments[0].querySelector('td')).backgroundColor", rows[0]
    )
    assert row_background not in ("transparent", "rgba(0, 0, 0, 0)"), row_background
    assert rows[0].find_elements(By.CSS_SELECTOR, "svg.sparkline polyline")
    assert "▁" not in browser.find_element(By.ID, "comment").text
    assert browser_errors(browser) == []


def test_no_page_is_wider_than_a_420px_screen(
    browser: Any, public_server: LiveServer, seeded_sqlite: Seeded, artifacts_dir: Path
) -> None:
    from dashhelpers import PR_KEY

    project = f"{public_server.url}/p/{PROJECT}"
    pr_run = seeded_sqlite.pr["run"]["id"]
    pages = {
        "projects": f"{public_server.url}/",
        "project": project,
        "trend": trend_url(public_server),
        "trend-memory": trend_url(public_server, metric="peak_memory"),
        "trend-overlay": f"{project}/trend?{urlencode({'key': PR_KEY, 'head': pr_run})}",
        "run": f"{project}/runs/{seeded_sqlite.main[SHIFT_AT]['run']['id']}",
        "run-pr": f"{project}/runs/{pr_run}",
        "compare": f"{project}/compare?"
        + urlencode({"base": commit_of(SHIFT_AT - 1), "head": commit_of(SHIFT_AT)}),
        "login": f"{public_server.url}/login",
    }
    narrow(browser, 420)
    try:
        widths = {}
        for name, url in pages.items():
            browser.get(url)
            assert browser.execute_script("return window.innerWidth") == 420
            widths[name] = browser.execute_script("return document.documentElement.scrollWidth")
            browser.save_screenshot(str(artifacts_dir / f"dashboard-{name}-420.png"))
        assert all(width <= 420 for width in widths.values()), widths
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    assert browser_errors(browser) == []


def test_project_page_lists_open_change_points_first(
    browser: Any, public_server: LiveServer
) -> None:
    from selenium.webdriver.common.by import By

    browser.get(f"{public_server.url}/p/{PROJECT}")
    tops = {
        name: browser.find_element(By.ID, name).rect["y"]
        for name in ("open-changes", "pr-runs", "benchmarks", "runs")
    }
    assert sorted(tops, key=tops.__getitem__) == ["open-changes", "pr-runs", "benchmarks", "runs"]
    first_open = browser.find_element(By.CSS_SELECTOR, "#open-changes tbody tr")
    assert first_open.get_attribute("data-key") == SHIFTED_KEY
    first_bench = browser.find_element(By.CSS_SELECTOR, "#benchmarks tbody tr")
    assert first_bench.get_attribute("data-key") == SHIFTED_KEY
    pr = browser.find_element(By.CSS_SELECTOR, "#pr-runs tbody tr")
    assert "1 regression" in pr.text


def test_acknowledging_a_change_point_from_the_trend_page(
    browser: Any, private_server: LiveServer, seeded_sqlite: Seeded, artifacts_dir: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from perfgate.store import models
    from perfgate.store.connect import open_store

    def status_in_store(change_id: int) -> str:
        with open_store(seeded_sqlite.url) as store, store.sessions() as session:
            change = session.get(models.ChangePoint, change_id)
            assert change is not None
            return str(change.status)

    def log_in(token: str) -> None:
        browser.delete_all_cookies()
        browser.get(trend_url(private_server))
        WebDriverWait(browser, WAIT_S).until(ec.url_contains("/login?next="))
        browser.find_element(By.ID, "token").send_keys(token)
        browser.find_element(By.ID, "login-submit").click()
        wait_for_chart(browser)

    # A read login sees the change point but no buttons.
    log_in(seeded_sqlite.read_token)
    row = browser.find_element(By.CSS_SELECTOR, "#change-points tbody tr")
    assert not row.find_elements(By.TAG_NAME, "button")
    change_id = int(row.get_attribute("data-change-id"))

    log_in(seeded_sqlite.upload_token)
    try:
        assert status_in_store(change_id) == "open"
        browser.find_element(By.CSS_SELECTOR, "button[data-status='acknowledged']").click()
        WebDriverWait(browser, WAIT_S).until(
            ec.text_to_be_present_in_element(
                (By.CSS_SELECTOR, "#change-points .status"), "acknowledged"
            )
        )
        wait_for_chart(browser)  # back on the trend page
        assert status_in_store(change_id) == "acknowledged"
        browser.save_screenshot(str(artifacts_dir / "dashboard-trend-acknowledged.png"))
        browser.find_element(By.CSS_SELECTOR, "button[data-status='open']").click()
        WebDriverWait(browser, WAIT_S).until(
            ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#change-points .status"), "open")
        )
        assert status_in_store(change_id) == "open"
        assert browser_errors(browser) == []
    finally:
        with open_store(seeded_sqlite.url) as store:
            from perfgate.store.trends import set_change_status

            set_change_status(store.sessions, change_id=change_id, status="open")
        browser.delete_all_cookies()
