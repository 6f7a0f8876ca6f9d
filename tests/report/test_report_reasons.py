"""The report says why: infra-error banner, failures with the recorded error first, a readable
Metrics table whose definitions link to docs/metrics.md, and the comparison at the top."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from report_helpers import record

from toolproof.report import render_report
from toolproof.report._metrics import ANCHORS, metric_rows
from toolproof.results import EpisodeRecord
from toolproof.trajectory import Termination

DOCS = Path(__file__).parents[2] / "docs" / "metrics.md"
REFUSED = "connection refused: http://127.0.0.1:9/act"


def infra(task_id: str, error: str = REFUSED) -> EpisodeRecord:
    rec = record(task_id, text="x")
    rec.score.termination = Termination.INFRA_ERROR
    rec.trajectory.termination = Termination.INFRA_ERROR
    rec.trajectory.error = error
    rec.attempts = 3
    return rec


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", heading.strip().lower()).replace(" ", "-")


def test_an_infra_error_run_has_a_banner_and_lists_its_errors(
    make_run: Callable[..., Path],
) -> None:
    run = make_run("down", [infra("t1"), infra("t2"), infra("t3")])
    html = render_report(run, charts=False)
    banner = html.split('id="infra-banner"', 1)[1].split("</p>", 1)[0]
    assert (
        "3 of 3 episodes were infrastructure errors: not scored (nothing was scored); "
        "first error: connection refused" in banner
    )
    assert "no episode scored" in html  # not "0.0%" as if the agent failed everything
    failures = html.split('<section id="failures">', 1)[1].split("</section>", 1)[0]
    assert 'data-mode="infra_error"' in failures and "infra_error</b> (3" in failures
    assert failures.count(f"<b>error:</b> {REFUSED}") == 3
    assert "3 attempts" in failures


def test_a_clean_run_has_no_banner(make_run: Callable[..., Path]) -> None:
    html = render_report(make_run("ok", [record("t1", passed=True)]), charts=False)
    assert 'id="infra-banner"' not in html and "No episode failed." in html


def test_failures_show_the_recorded_error_before_the_checks_escaped(
    make_run: Callable[..., Path],
) -> None:
    crashed = record("t1", text="answer does not state 82")
    crashed.trajectory.error = "agent crashed: <img src=x onerror=alert(1)>"
    run = make_run("mixed", [crashed, record("t2", passed=True), infra("t3")])
    html = render_report(run, charts=False)
    assert "<img src=x" not in html
    failures = html.split('<section id="failures">', 1)[1].split("</section>", 1)[0]
    assert "1 failed of 2 scored episodes, and 1 infrastructure errors" in failures
    row = failures.split('data-mode="wrong_answer"', 1)[1].split("</tr>", 2)[1]
    error_at = row.index("<b>error:</b> agent crashed: &lt;img src=x onerror=alert(1)&gt;")
    assert error_at < row.index("check check: answer does not state 82")
    banner = html.split('id="infra-banner"', 1)[1].split("</p>", 1)[0]
    assert banner.split("<b>Infrastructure errors.</b> ")[1].startswith("1 of 3 episodes")


def test_the_metrics_section_is_a_readable_table_with_units_and_links(
    core_runs: dict[str, Path],
) -> None:
    html = render_report(core_runs["random"], charts=False)
    section = html.split('<section id="metrics">', 1)[1].split("</section>", 1)[0]
    assert "toolproof_summary" not in section and '"rate"' not in section
    value = {
        m: v
        for m, v in re.findall(
            r'data-metric="([^"]+)">.*?<td class="num value">([^<]*)</td>', section, re.S
        )
    }
    assert value["success"].endswith("%") and value["redundancy.rate"].endswith("%")
    assert value["latency.episode_s"].endswith((" ms", " s"))
    assert value["tool_use.calls_per_episode"].endswith(" calls")
    assert value["efficiency.passed"] == "\N{EN DASH}"  # random passes nothing: no ratio
    oracle = render_report(core_runs["oracle"], charts=False)
    assert (
        'data-metric="efficiency.passed"><td><a href="docs/metrics.md#the-metric-block"' in oracle
    )
    assert '<td class="num value">1.00\N{MULTIPLICATION SIGN}</td>' in oracle
    headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", DOCS.read_text(), re.M)}
    assert set(ANCHORS) <= headings
    links = set(re.findall(r'href="docs/metrics\.md#([a-z0-9-]+)"', html))
    assert links and links <= headings
    assert {m.anchor for m in metric_rows({})} <= set(ANCHORS)


def test_with_compare_the_comparison_comes_first_with_directions(
    core_runs: dict[str, Path],
) -> None:
    html = render_report(core_runs["random"], compare=core_runs["oracle"], charts=True)
    assert html.index('<section id="compare">') < html.index('<section class="charts"')
    assert html.index('<section id="compare">') < html.index('<section id="metrics">')
    table = html.split('id="compare-metrics">', 1)[1].split("</table>", 1)[0]
    assert "<th>better</th>" in table
    directions = dict(
        re.findall(r"<td>(\w+) <span.*?<td class=\"direction\"[^>]*>(\w+)</td>", table, re.S)
    )
    assert directions["success"] == "higher" and directions["efficiency"] == "lower"
    assert directions["hallucination"] == "lower" and directions["tokens"] == "lower"


def test_a_partial_comparison_says_it_cannot_gate(make_run: Callable[..., Path]) -> None:
    before = make_run("before", [record("t1", passed=True), record("t2", passed=True)])
    after = make_run("after", [record("t1", passed=True), infra("t2")])
    html = render_report(after, compare=before, charts=False)
    problems = re.findall(r'class="error compare-problem">([^<]*)<', html)
    assert any("B scored fewer episodes than A: 1 against 2" in p for p in problems)
    assert any("tasks scored only in A (1): t2" in p for p in problems)
