"""The viewer in headless Chromium: live runs refresh by themselves, infra-error runs are
visibly distinct, and no chart label is clipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_helpers import record
from test_viewer_browser import TIMEOUT_MS, Page, browser_page

from toolproof.metrics import summarize
from toolproof.results import EpisodeRecord, RunStore
from toolproof.trajectory import Termination
from toolproof.viewer import running_viewer

pytestmark = pytest.mark.slow
__all__ = ["browser_page"]  # the fixture, shared with the other browser tests

LONG = "a-category-name-much-longer-than-any-chart-column"
REFUSED = "connection refused: http://127.0.0.1:9/act"
META: dict[str, Any] = {
    "config": {"agent": "crafted"},
    "track": "standard",
    "suite": {"name": "crafted", "version": "1", "seed": 0, "digest": "d"},
}

NOT_CLIPPED = """() => {
  const out = [];
  for (const svg of document.querySelectorAll('.chart svg')) {
    const [x0, y0, w, h] = svg.getAttribute('viewBox').split(' ').map(Number);
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBBox();
      const out_x = b.x < x0 - 0.5 || b.x + b.width > x0 + w + 0.5;
      if (out_x || b.y < y0 - 0.5 || b.y + b.height > y0 + h + 0.5)
        out.push(`${t.textContent} [${b.x.toFixed(1)}, ${(b.x + b.width).toFixed(1)}] of ${w}`);
    }
  }
  return out;
}"""


def infra(task_id: str) -> EpisodeRecord:
    rec = record(task_id, text="x")
    rec.score.termination = Termination.INFRA_ERROR
    rec.trajectory.termination = Termination.INFRA_ERROR
    rec.trajectory.error = REFUSED
    return rec


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder of crafted runs and the viewer over it."""
    with running_viewer(tmp_path) as base:
        yield tmp_path, base


def _write(run_dir: Path, records: list[EpisodeRecord], planned: int, finish: bool) -> RunStore:
    store = RunStore(run_dir)
    store.set_meta({**META, "planned": planned})
    for r in records:
        store.append(r)
    if finish:
        store.finalize(summarize(records, {**META, "planned": planned}))
    return store


def test_a_live_run_refreshes_by_itself_until_it_is_done(
    runs: tuple[Path, str], browser_page: Page
) -> None:
    root, base = runs
    first = [record("t1", passed=True)]
    store = _write(root / "live", first, planned=3, finish=False)
    try:
        page = browser_page.page
        page.goto(base + "/runs/live")
        page.wait_for_selector("#main[data-live=true]")
        assert page.locator("#live").is_visible()
        assert "1 of 3 episodes" in page.inner_text("#live")
        assert page.get_attribute("#episodes", "data-total") == "1"
        more = [record("t2", passed=False), record("t3", passed=True)]
        for r in more:
            store.append(r)
        # no reload: the page polls while the run is live
        page.wait_for_function(
            "() => document.querySelector('#episodes').dataset.total === '3'", timeout=TIMEOUT_MS
        )
        store.finalize(summarize(first + more, {**META, "planned": 3}))
        page.wait_for_selector("#main[data-live=false]", timeout=TIMEOUT_MS)
        assert not page.locator("#live").is_visible()
        assert "66.7%" in page.inner_text("#cards")
    finally:
        store.close()


def test_an_infra_error_run_is_visibly_distinct(runs: tuple[Path, str], browser_page: Page) -> None:
    root, base = runs
    _write(root / "down", [infra("t1"), infra("t2"), infra("t3")], planned=3, finish=True).close()
    page = browser_page.page
    page.goto(base + "/runs/down")
    page.wait_for_selector("#infra-banner")
    banner = page.inner_text("#infra-banner")
    assert "3 of 3 episodes were infrastructure errors: not scored (nothing was scored)" in banner
    assert "first error: " + REFUSED in banner
    cards = page.inner_text("#cards")
    assert "no episode scored" in cards and "3 infra errors excluded" in cards
    page.wait_for_selector("#main[data-live=false]")
    browser_page.shot("run-infra.png")
    page.goto(base + "/")
    page.wait_for_selector("#runs tr[data-run=down]")
    row = page.inner_text("#runs tr[data-run=down]")
    assert "nothing scored" in row and "3 infra errors" in row


def test_no_chart_label_is_clipped(runs: tuple[Path, str], browser_page: Page) -> None:
    root, base = runs
    records = [record(f"t{i}", passed=i % 2 == 0, category=f"{LONG}-{i % 3}") for i in range(9)] + [
        record("t9", passed=True, category="short")
    ]
    _write(root / "labels", records, planned=len(records), finish=True).close()
    page = browser_page.page
    page.goto(base + "/runs/labels")
    page.wait_for_selector("#charts[data-state=ready] .chart svg")
    assert page.evaluate(NOT_CLIPPED) == []
    titles = page.locator(".chart svg text.label title").all_text_contents()
    assert f"{LONG}-0" in titles  # the whole label on hover, shortened on the chart


def test_a_comparison_with_an_infra_error_run_says_it_cannot_gate(
    runs: tuple[Path, str], browser_page: Page
) -> None:
    root, base = runs
    _write(root / "good", [record(f"t{i}", passed=True) for i in range(3)], 3, True).close()
    _write(root / "down", [infra(f"t{i}") for i in range(3)], 3, True).close()
    page = browser_page.page
    page.goto(base + "/compare?a=good&b=down")
    page.wait_for_selector("#cannot-gate")
    text = page.inner_text("#cannot-gate")
    assert "B has no scored episodes: 3 of 3 were infrastructure errors" in text
    assert REFUSED in text
