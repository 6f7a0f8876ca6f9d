"""The HTML report in headless Chromium from file://, offline: charts drawn, no errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from report_helpers import screenshots_dir

from toolproof.report import write_report

pytestmark = pytest.mark.slow


def test_report_renders_offline_with_charts(
    chromium: Any, core_runs: dict[str, Path], tmp_path: Path
) -> None:
    report = write_report(
        core_runs["random"],
        tmp_path / "report.html",
        compare=core_runs["oracle"],
        allow_mismatch=True,
    )
    context = chromium.new_context(offline=True, viewport={"width": 1360, "height": 900})
    requests: list[str] = []
    errors: list[str] = []

    def block(route: Any) -> None:
        if not route.request.url.startswith("file://"):
            requests.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    try:
        context.route("**/*", block)
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(report.as_uri())
        charts = page.locator(".chart").count()
        assert charts >= 8
        page.wait_for_function(
            "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n", arg=charts
        )
        assert page.locator(".js-plotly-plot .main-svg .trace").count() >= charts
        assert page.evaluate(LABELS_INSIDE) == []
        # with --compare, the comparison is the first thing after the headline, on screen
        compare = page.locator("#compare").bounding_box()
        assert compare is not None and compare["y"] < 900
        assert compare["y"] < (page.locator("#charts").bounding_box() or {"y": 0})["y"]
        folder = screenshots_dir()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(folder / "report.png"))

        rows = page.locator("#task-table tbody tr")
        page.fill("#task-filter", "hello")
        visible = rows.evaluate_all("rs => rs.filter(r => r.offsetParent !== null).length")
        assert 0 < visible < rows.count()
        page.fill("#task-filter", "")
        link = page.locator("#task-table a.badge").first
        target = link.get_attribute("href")
        link.click()
        page.wait_for_function("t => location.hash === t", arg=target)
        assert page.locator(f"{target}:target").count() == 1
    finally:
        context.close()
    assert requests == []
    assert errors == []


LABELS_INSIDE = """() => {
  const out = [];
  for (const chart of document.querySelectorAll('.chart')) {
    const box = chart.getBoundingClientRect();
    for (const t of chart.querySelectorAll('.xtick text, .ytick text, .gtitle')) {
      const r = t.getBoundingClientRect();
      if (!r.width) continue;
      const out_x = r.left < box.left - 1 || r.right > box.right + 1;
      const out_y = r.top < box.top - 1 || r.bottom > box.bottom + 1;
      if (out_x || out_y)
        out.push(`${t.textContent}: [${r.left}, ${r.right}] x [${r.top}, ${r.bottom}]`);
    }
  }
  return out;
}"""


def test_charts_keep_long_labels_inside_and_the_banner_shows(
    chromium: Any, make_run: Any, tmp_path: Path
) -> None:
    from report_helpers import record

    from toolproof.trajectory import Termination

    long = "a-category-name-much-longer-than-any-chart-column"
    records = [record(f"t{i}", passed=i % 2 == 0, category=f"{long}-{i}") for i in range(9)]
    down = record("t9", text="x")
    down.score.termination = down.trajectory.termination = Termination.INFRA_ERROR
    down.trajectory.error = "connection refused: http://127.0.0.1:9/act"
    run = make_run("labels", [*records, down])
    report = write_report(run, tmp_path / "report.html")
    context = chromium.new_context(offline=True, viewport={"width": 1360, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(report.as_uri())
        charts = page.locator(".chart").count()
        page.wait_for_function(
            "n => document.querySelectorAll('.js-plotly-plot .main-svg').length >= n", arg=charts
        )
        assert page.evaluate(LABELS_INSIDE) == []
        banner = page.locator("#infra-banner")
        assert banner.is_visible() and banner.bounding_box()["y"] < 900  # above the fold
        assert "1 of 10 episodes were infrastructure errors" in banner.inner_text()
        assert page.locator("#failures .recorded-error").first.is_visible()
    finally:
        context.close()
