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
    shifted = browser.find_element(By.CSS_SELECTOR, f'tr[data-key="{SHIFTED_KEY}"]')
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
