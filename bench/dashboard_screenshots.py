"""Screenshots of every dashboard page at a desktop and a phone width, as a person sees them.

Seeds a scratch SQLite store (25 main runs with a +30% step at run 15 in one benchmark, memory
and flops too, and one pull request's run that slows another benchmark by 25%), serves it as a
private server, logs in through the form with a read token (the triage buttons need an upload
token: the trend page is shot once more logged in with one), and saves a full-page PNG of each
page at each width into --out, printing each page's width as the browser lays it out
(`document.documentElement.scrollWidth`, which must not exceed the window's width).

Needs Debian's headless Chromium and chromedriver (/usr/bin/chromium, /usr/bin/chromedriver)
and selenium (the dev extra). Usage:

    python bench/dashboard_screenshots.py --out DIR [--widths 1400,420]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import uvicorn

from perfgate.api.app import create_app
from perfgate.config import Settings
from perfgate.results import make_key, parse_document
from perfgate.store import tokens
from perfgate.store.connect import open_store
from perfgate.store.uploads import store_document
from synthetic import synthetic_document

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PROJECT = "acme/models"
MAIN_RUNS = 25
STEP_AT = 15
STEP = 1.3
STEPPED_KEY = make_key("kernel", {"n": 64, "variant": 0})
PR_KEY = make_key("kernel", {"n": 128, "variant": 0})
PR_NUMBER = 42
T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
# Tall enough for the longest page; the shot is cut to the page's own height.
MAX_HEIGHT = 4000


def commit_of(seed: int) -> str:
    return hashlib.sha1(f"commit-{seed}".encode()).hexdigest()


def seed(url: str) -> dict[str, Any]:
    """The store's history; returns the ids and tokens the pages need."""
    main = [
        synthetic_document(
            benchmarks=4,
            samples=12,
            seed=i,
            commit=commit_of(i),
            started_at=T0 + timedelta(hours=i),
            slowdown={STEPPED_KEY: STEP} if i >= STEP_AT else None,
            ops_per_benchmark=3,
        )
        for i in range(MAIN_RUNS)
    ]
    pr = synthetic_document(
        benchmarks=4,
        samples=12,
        seed=500,
        commit=commit_of(500),
        branch="fix/faster-attention",
        started_at=T0 + timedelta(hours=MAIN_RUNS + 2),
        slowdown={STEPPED_KEY: STEP, PR_KEY: 1.25},
        ops_per_benchmark=3,
    )
    pr["run"]["pr"] = PR_NUMBER
    pr["run"]["base_commit"] = commit_of(MAIN_RUNS - 1)
    with open_store(url) as store:
        for doc in [*main, pr]:
            store_document(store.sessions, parse_document(doc))
        read = tokens.create_token(store.sessions, project=PROJECT, scope="read")
        upload = tokens.create_token(store.sessions, project=PROJECT, scope="upload")
    return {
        "step_run": main[STEP_AT]["run"]["id"],
        "pr_run": pr["run"]["id"],
        "read": read.token,
        "upload": upload.token,
    }


def pages(seeded: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, path) of each page to shoot."""
    project = f"/p/{PROJECT}"

    def trend(**query: str) -> str:
        return f"{project}/trend?{urlencode({'key': STEPPED_KEY, **query})}"

    return [
        ("projects", "/"),
        ("project", project),
        ("trend", trend()),
        ("trend-memory", trend(metric="peak_memory")),
        (
            "trend-pr-overlay",
            f"{project}/trend?{urlencode({'key': PR_KEY})}&head={quote(seeded['pr_run'])}",
        ),
        ("run-step", f"{project}/runs/{seeded['step_run']}"),
        ("run-pr", f"{project}/runs/{seeded['pr_run']}"),
        (
            "compare",
            f"{project}/compare?"
            + urlencode({"base": commit_of(STEP_AT - 1), "head": commit_of(STEP_AT)}),
        ),
    ]


@contextmanager
def live_server(url: str) -> Iterator[str]:
    config = uvicorn.Config(
        create_app(Settings(db_url=url, public_read=False)),
        host="127.0.0.1",
        port=0,
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the dashboard server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--force-device-scale-factor=1",
        "--hide-scrollbars",
        "--lang=en-US",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def log_in(driver: Any, base: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{base}/login")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login-submit").click()
    deadline = time.monotonic() + 20
    while driver.get_cookie("perfgate_token") is None:
        if time.monotonic() > deadline:
            raise RuntimeError("the login form did not set its cookie")
        time.sleep(0.05)


def _viewport(driver: Any, width: int, height: int) -> None:
    # A window cannot outgrow headless Chromium's screen; the emulated viewport can.
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )


def shoot(driver: Any, url: str, width: int, out: Path) -> int:
    """Save a full-page PNG of `url` at `width`; return the page's laid-out width."""
    _viewport(driver, width, 1000)
    driver.get(url)
    # The trend chart draws after load; wait for it so the shot shows it.
    driver.execute_script(
        "return new Promise(r => { const t0 = Date.now(); (function wait() {"
        " const c = document.getElementById('trend-chart');"
        " if (!c || c.dataset.rendered === 'true' || Date.now() - t0 > 5000) r(); else"
        " setTimeout(wait, 50); })(); });"
    )
    scroll_width = int(driver.execute_script("return document.documentElement.scrollWidth"))
    height = int(driver.execute_script("return document.documentElement.scrollHeight"))
    _viewport(driver, width, min(height, MAX_HEIGHT))
    driver.save_screenshot(str(out))
    return scroll_width


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    parser.add_argument("--widths", default="1400,420", help="window widths, comma-separated")
    args = parser.parse_args(argv)
    widths = [int(w) for w in args.widths.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    too_wide = 0
    with tempfile.TemporaryDirectory() as scratch:
        url = f"sqlite:///{Path(scratch) / 'perfgate.db'}"
        seeded = seed(url)
        with live_server(url) as base:
            driver = browser()
            try:
                shots = [(name, path, seeded["read"]) for name, path in pages(seeded)]
                trend_path = dict(pages(seeded))["trend"]
                shots.append(("trend-triage", trend_path, seeded["upload"]))
                token = None
                print(f"{'page':<18} {'window':>6} {'page width':>10}  file")
                for name, path, needed in shots:
                    if needed != token:
                        log_in(driver, base, needed)
                        token = needed
                    for width in widths:
                        out = args.out / f"dashboard-{name}-{width}.png"
                        laid_out = shoot(driver, base + path, width, out)
                        too_wide += laid_out > width
                        print(f"{name:<18} {width:>6} {laid_out:>10}  {out}")
            finally:
                driver.quit()
    if too_wide:
        print(f"{too_wide} page(s) wider than their window", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
