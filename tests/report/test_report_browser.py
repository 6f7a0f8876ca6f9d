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
