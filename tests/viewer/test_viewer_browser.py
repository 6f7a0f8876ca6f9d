"""The viewer end to end in headless Chromium: runs, run page, replay, comparison.

Every test fails when the page throws or logs a JavaScript error. With
``TOOLPROOF_SCREENSHOTS=docs/images`` the pages are saved as screenshots.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from report_helpers import screenshots_dir

from toolproof.viewer import running_viewer

pytestmark = pytest.mark.slow
TIMEOUT_MS = 60_000


@pytest.fixture(scope="module")
def viewer(runs_dir: Path) -> Iterator[str]:
    """The viewer over ``runs_dir`` on a free loopback port."""
    with running_viewer(runs_dir) as base:
        yield base


class Page:
    """A browser page that records JavaScript errors and console errors."""

    def __init__(self, chromium: Any) -> None:
        self.context = chromium.new_context(viewport={"width": 1360, "height": 900})
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        self.page.on("console", self._console)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(f"console error: {message.text}")

    def ready(self, selector: str = "#main[data-state=ready]", search: str = "") -> None:
        """Wait until the page's data is drawn (and, when given, the URL holds ``search``)."""
        self.page.wait_for_function(
            "([selector, search]) => document.querySelector(selector) !== null"
            " && location.search.includes(search)",
            arg=[selector, search],
        )

    def shot(self, name: str, full_page: bool = False) -> None:
        """Save a screenshot when TOOLPROOF_SCREENSHOTS names a folder."""
        folder = screenshots_dir()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            self.page.screenshot(path=str(folder / name), full_page=full_page)


@pytest.fixture
def browser_page(chromium: Any) -> Iterator[Page]:
    """A fresh page; the test fails if the page logged a JavaScript error."""
    page = Page(chromium)
    try:
        yield page
    finally:
        page.context.close()
    assert not page.errors, page.errors


def episode_with_a_state_change(base: str) -> tuple[str, int]:
    """A failed episode of core-random with several steps, and the index of a changing step."""
    with httpx.Client(base_url=base, timeout=60) as client:
        rows = client.get("/api/runs/core-random/episodes", params={"limit": 500}).json()["rows"]
        for row in rows:
            if row["n_steps"] < 2:
                continue
            data = client.get(f"/api/runs/core-random/episodes/{quote(row['key'], safe='')}").json()
            for position, step in enumerate(data["steps"]):
                if step["diff"] and position > 0:
                    return row["key"], position
    raise AssertionError("no episode of core-random changes state after its first step")


def test_runs_list_leads_to_a_comparison(viewer: str, browser_page: Page) -> None:
    page = browser_page.page
    page.goto(viewer + "/")
    page.wait_for_selector("#runs tbody tr[data-run='core-random']")
    assert page.locator("#runs tbody tr[data-run]").count() == 2
    assert "0.0%" in page.inner_text("#runs tbody tr[data-run='core-random']")
    page.set_viewport_size({"width": 1360, "height": 400})
    browser_page.shot("runs.png")
    page.set_viewport_size({"width": 1360, "height": 900})
    page.check("tr[data-run='core-oracle'] input[type=checkbox]")
    assert page.is_disabled("#compare")
    page.check("tr[data-run='core-random'] input[type=checkbox]")
    page.click("#compare")
    page.wait_for_url("**/compare?a=core-oracle&b=core-random")
    browser_page.ready()
    assert "worse" in page.inner_text("#metrics tr[data-metric='success']")
    # every metric states its direction
    assert page.inner_text("#metrics tr[data-metric='success'] td.direction") == "higher"
    assert page.inner_text("#metrics tr[data-metric='efficiency'] td.direction") == "lower"
    assert page.locator("#cannot-gate").count() == 0  # both runs scored every task
    assert page.locator("#tasks tr.task-row.broke").count() > 0
    assert page.locator("#flips tr.flip").count() > 0
    browser_page.shot("compare.png")
    page.uncheck("#changed-only")
    assert page.locator("#tasks tr.task-row").count() >= page.locator("#tasks tr.broke").count()
    page.click("#flips tr.flip a >> nth=1")  # B's side of the first flipped episode
    page.wait_for_url("**/runs/core-random/episodes/**")
    browser_page.ready()


def test_run_page_filters_sorts_searches_and_pages(viewer: str, browser_page: Page) -> None:
    page = browser_page.page
    page.goto(viewer + "/runs/core-random?limit=10")
    browser_page.ready("#episodes[data-state=ready]")
    page.wait_for_selector("#charts[data-state=ready] .chart svg")
    assert page.locator("#charts .chart").count() >= 6
    assert "Success" in (page.text_content("#cards") or "")
    total = int(page.get_attribute("#episodes", "data-total") or 0)
    assert total > 10

    page.select_option("select[name=passed]", "0")
    browser_page.ready("#episodes[data-state=ready]", "passed=0")
    badges = page.locator("#episodes tbody tr td:nth-child(2)").all_inner_texts()
    assert badges and set(badges) == {"failed"}

    page.click("th[data-sort=n_steps]")
    browser_page.ready("#episodes[data-state=ready]", "sort=n_steps")
    steps = [int(t) for t in page.locator("#episodes tbody td:nth-child(9)").all_inner_texts()]
    assert steps == sorted(steps)
    page.click("th[data-sort=n_steps]")
    browser_page.ready("#episodes[data-state=ready]", "dir=desc")
    steps = [int(t) for t in page.locator("#episodes tbody td:nth-child(9)").all_inner_texts()]
    assert steps == sorted(steps, reverse=True)

    page.click("#page-next")
    browser_page.ready("#episodes[data-state=ready]", "offset=10")
    assert page.inner_text("#page-info").startswith("11\N{EN DASH}20 of")

    page.fill("input[name=q]", "hello")
    browser_page.ready("#episodes[data-state=ready]", "q=hello")
    keys = page.locator("#episodes tbody tr[data-key]").evaluate_all(
        "rows => rows.map(r => r.dataset.key)"
    )
    assert keys and all(k.startswith("hello") for k in keys)
    page.click("button[type=reset]")
    browser_page.ready("#episodes[data-state=ready]")
    page.wait_for_function("() => !location.search.includes('q=')")
    page.select_option("select[name=passed]", "0")
    browser_page.ready("#episodes[data-state=ready]", "passed=0")
    page.click("#more-metrics summary")
    assert page.locator("#more-metrics .card").count() > 0
    page.click("#more-metrics summary")
    page.evaluate("window.scrollTo(0, 0)")
    browser_page.shot("run.png")
    page.evaluate("document.getElementById('episodes-title').scrollIntoView()")
    browser_page.shot("run-episodes.png")


def test_trajectory_replays_step_by_step(viewer: str, browser_page: Page) -> None:
    key, changed = episode_with_a_state_change(viewer)
    page = browser_page.page
    page.goto(viewer + "/runs/core-random?passed=0&limit=500")
    browser_page.ready("#episodes[data-state=ready]", "passed=0")
    page.click(f"#episodes tr[data-key='{key}'] a")
    page.wait_for_url(f"**/episodes/{quote(key, safe='')}")
    browser_page.ready()
    n = page.locator("#transcript .step").count()
    assert page.inner_text("#position") == f"Step 1 / {n}"
    assert page.is_disabled("#prev")

    page.click("#next")
    page.wait_for_selector("#main[data-step='1']")
    assert page.inner_text("#position") == f"Step 2 / {n}"
    page.click("#prev")
    page.wait_for_selector("#main[data-step='0']")
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#main[data-step='1']")
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#main[data-step='0']")
    page.keyboard.press("End")
    page.wait_for_selector(f"#main[data-step='{n - 1}']")
    assert page.is_visible("#final") and page.is_disabled("#next")
    page.keyboard.press("Home")
    page.wait_for_selector("#main[data-step='0']")
    assert not page.is_visible("#final")

    page.click("#play")
    page.wait_for_selector("#main[data-step='1']")
    page.click("#play")  # pause
    page.wait_for_selector("#play:has-text('Play')")

    page.click(f"#timeline button >> nth={changed}")
    page.wait_for_selector(f"#main[data-step='{changed}']")
    page.wait_for_selector("#diff #record-diff, #diff #file-changes")
    if page.locator("#file-changes").count():
        page.wait_for_selector("#file-diffs h3")
    assert (
        page.locator("#transcript .step.current >> nth=0").get_attribute("id") == f"step-{changed}"
    )
    checks = page.locator("#checks .check")
    assert checks.count() > 0
    assert page.locator("#checks .check.failed .detail").count() > 0
    browser_page.shot("trajectory.png")


def test_unknown_run_page_says_so(viewer: str, browser_page: Page) -> None:
    page = browser_page.page
    response = page.goto(viewer + "/runs/nope")
    assert response is not None and response.status == 404
    assert "no run 'nope'" in page.inner_text("main")
    expected = "status of 404"  # the browser logs the 404 of the page itself
    browser_page.errors[:] = [e for e in browser_page.errors if expected not in e]
