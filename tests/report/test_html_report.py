"""The static HTML report: content, comparison, untrusted text, options and errors."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from report_helpers import record

from toolproof.metrics.compare import ComparisonMismatch
from toolproof.report import MissingExtraError, render_report, write_report
from toolproof.report.html import plotly_js
from toolproof.results import SUMMARY, RunReader

EVIL = '</script><script>alert("x")</script><img src=x onerror=alert(1)>'


def figures(html: str) -> list[dict[str, Any]]:
    """The chart specs embedded in the report."""
    match = re.search(r'<script type="application/json" id="tp-figures">(.*?)</script>', html, re.S)
    assert match is not None
    data = json.loads(match.group(1))
    assert isinstance(data, list)
    return data


def test_report_shows_headline_tasks_and_every_trajectory(core_runs: dict[str, Path]) -> None:
    html = render_report(core_runs["random"], max_trajectories=100_000)
    with RunReader(core_runs["random"]) as reader:
        rows = reader.rows()
        summary = reader.summary()
    assert summary is not None
    assert "95% CI" in html
    for row in rows:
        anchor = "ep-" + re.sub(r"[^A-Za-z0-9_-]", "-", row["key"])
        assert f'id="{anchor}"' in html and f'href="#{anchor}"' in html
        assert f'id="task-{row["task_id"]}"' in html
    titles = [f["title"] for f in figures(html)]
    for title in (
        "Success by category (95% CI)",
        "Success by type (95% CI)",
        "Success by difficulty (95% CI)",
        "Levels",
        "Steps per episode",
        "Episode latency",
    ):
        assert title in titles
    assert html.count('class="chart"') == len(titles)


def test_report_is_self_contained(core_runs: dict[str, Path]) -> None:
    html = render_report(core_runs["oracle"])
    bundle = plotly_js()
    assert bundle in html  # the charting library is inline
    page = html.replace(bundle, "")
    assert re.search(r'(src|href)="(https?:)?//', page) is None
    assert '<link rel="stylesheet"' not in html


def test_untrusted_text_is_escaped_everywhere(make_run: Callable[..., Path]) -> None:
    run = make_run("evil", [record("t1", text=EVIL, category=EVIL), record("t2", passed=True)])
    html = render_report(run)
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    # chart data carries the category, escaped for a script element and intact once parsed
    # (labels are shortened so they fit; the full text is kept for the hover)
    labels = [x for f in figures(html) for t in f["data"] for x in t.get("customdata", [])]
    assert EVIL in labels
    shown = [x for f in figures(html) for t in f["data"] for x in t.get("x", [])]
    assert any(str(x).startswith(EVIL[:20]) and len(str(x)) <= 28 for x in shown)
    head = html.split('id="tp-figures">', 1)[1].split("</script>", 1)[0]
    assert "</" not in head


def test_compare_shows_before_after_and_flips(core_runs: dict[str, Path]) -> None:
    html = render_report(core_runs["random"], compare=core_runs["oracle"], allow_mismatch=True)
    assert "Before and after" in html
    section = html.split('id="compare-tasks"', 1)[1].split("</table>", 1)[0]
    assert section.count("broke") >= 10
    flips = html.split('id="compare-flips"', 1)[1].split("</table>", 1)[0]
    assert flips.count('href="#ep-') >= 10  # flipped episodes link to their trajectories
    titles = [f["title"] for f in figures(html)]
    assert "Success by category, before and after" in titles


def test_compare_refuses_runs_that_do_not_pair(
    core_runs: dict[str, Path], make_run: Callable[..., Path]
) -> None:
    other = make_run("other", [record("t1")])
    with pytest.raises(ComparisonMismatch, match="different suites"):
        render_report(core_runs["random"], compare=other)


def test_trajectories_are_capped_failures_first(make_run: Callable[..., Path]) -> None:
    records = [record(f"t{i}", passed=i % 2 == 0) for i in range(10)]
    html = render_report(make_run("many", records), max_trajectories=3)
    assert html.count('<section class="episode"') == 3
    assert "3 of 10 trajectories are included" in html
    rendered = re.findall(r'<section class="episode" id="ep-(t\d)-0"', html)
    assert all(int(t[1:]) % 2 == 1 for t in rendered)  # the failed ones


def test_episodes_without_a_sandbox_are_flagged(make_run: Callable[..., Path]) -> None:
    exposed = record("t1").model_copy(update={"isolated": False})
    assert "NOT ISOLATED: 1 episode(s)" in render_report(make_run("x", [exposed, record("t2")]))
    assert "NOT ISOLATED" not in render_report(make_run("y", [record("t3")]))


def test_run_without_summary_is_summarised(make_run: Callable[..., Path]) -> None:
    run = make_run("unfinished", [record("t1"), record("t2", passed=True)], summary=False)
    assert not (run / SUMMARY).exists()
    html = render_report(run)
    assert "50.0%" in html and "Levels" in html


def test_report_without_charts_needs_no_plotly(
    core_runs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle = plotly_js()
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    with pytest.raises(MissingExtraError, match=r"toolproof\[report\]"):
        render_report(core_runs["oracle"])
    html = render_report(core_runs["oracle"], charts=False)
    assert "Charts left out" in html and bundle[:1000] not in html


def test_write_report_creates_the_folder(core_runs: dict[str, Path], tmp_path: Path) -> None:
    out = write_report(core_runs["oracle"], tmp_path / "ci" / "report.html", charts=False)
    assert out.read_text(encoding="utf-8").startswith("<!doctype html>")
