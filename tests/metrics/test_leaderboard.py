"""``toolproof leaderboard RUN...``: N runs ranked with confidence intervals, pass@k and
pass^k, spend per task, and the McNemar test between neighbours; runs of different
suites, versions, content or tracks are refused, naming why. The console, the HTML file,
``--json`` and the viewer's page show one ranking."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from toolproof.metrics.leaderboard import LeaderboardMismatch, leaderboard
from toolproof.viewer import create_app
from toolproof_helpers import CliResult, make_task, write_suite

Invoke = Callable[..., CliResult]
TASKS = [make_task(id=f"stock-{i}") for i in range(8)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Runs of one 8-task suite by oracle, noop and a first-tool agent (2 epochs each)."""
    from toolproof.cli import main

    root = tmp_path_factory.mktemp("board")
    suite = write_suite(root / "mini", TASKS)
    agents = {
        "oracle": "oracle",
        "noop": "noop",
        "first": "python:toolproof_test_agents:first_tool_factory",
    }
    out = {}
    for name, agent in agents.items():
        out[name] = root / "runs" / name
        try:
            main(["run", str(suite), "-a", agent, "-k", "2", "-q", "-o", str(out[name])])
        except SystemExit as exc:
            assert exc.code in (0, None), (name, exc.code)
    return out


def test_the_board_ranks_and_tests_neighbours(runs: dict[str, Path]) -> None:
    board = leaderboard([runs["noop"], runs["first"], runs["oracle"]])
    ranked = [Path(s.run).name for s in board.standings]
    assert ranked[0] == "oracle"
    top = board.standings[0]
    assert top.rank == 1 and top.success == 1.0 and top.scored == 16 and top.tasks == 8
    assert top.pass_at_k == {"1": 1.0, "2": 1.0} and top.pass_hat_k == {"1": 1.0, "2": 1.0}
    assert top.ci_low is not None and 0.7 < top.ci_low < 1.0
    assert top.tokens_per_task == 0 and top.cost_status == "no_usage"
    assert board.paired and len(board.pairs) == 2
    first = board.pairs[0]
    assert Path(first.upper).name == "oracle" and first.paired == 16
    lower = board.standings[1]
    assert first.significant == (lower.successes <= 16 - 10)  # 16 vs few: McNemar says so
    assert first.p_value is not None and 0 < first.p_value <= 1


def test_runs_of_different_suites_are_refused_naming_why(
    invoke: Invoke, runs: dict[str, Path], tmp_path: Path
) -> None:
    other = write_suite(tmp_path / "other", TASKS, version="2")
    assert invoke("run", other, "-a", "oracle", "-q", "-o", tmp_path / "o").code == 0
    with pytest.raises(LeaderboardMismatch) as caught:
        leaderboard([runs["oracle"], tmp_path / "o"])
    assert any("different suite version" in r for r in caught.value.reasons)
    result = invoke("leaderboard", runs["oracle"], tmp_path / "o")
    assert result.code == 2 and "cannot rank these runs" in result.err
    assert "different suite version" in result.err and "Traceback" not in result.err


def test_different_seeds_rank_without_pairwise_tests(
    invoke: Invoke, runs: dict[str, Path], tmp_path: Path
) -> None:
    suite = Path(json.loads((runs["oracle"] / "summary.json").read_text())["config"]["suite"])
    assert (
        invoke("run", suite, "-a", "oracle", "--seed", "99", "-q", "-o", tmp_path / "s").code == 0
    )
    board = leaderboard([runs["noop"], tmp_path / "s"])
    assert not board.paired and not board.pairs and "different seeds" in str(board.note)


def test_console_json_html_and_viewer_agree(
    invoke: Invoke, runs: dict[str, Path], tmp_path: Path
) -> None:
    order = [runs["noop"], runs["oracle"], runs["first"]]
    shown = invoke("leaderboard", *order, "--html", tmp_path / "board.html")
    assert shown.code == 0, shown.err
    assert "100.0% (16/16)" in shown.out and "exact McNemar" in shown.out
    as_json = invoke("leaderboard", *order, "--json")
    doc = json.loads(as_json.out)
    ranking = [Path(s["run"]).name for s in doc["standings"]]
    assert ranking[0] == "oracle"
    html = (tmp_path / "board.html").read_text()
    places = [html.index(str(runs[name])) for name in ranking]
    assert places == sorted(places)  # the file lists the runs in the ranking's order
    with TestClient(create_app(order[0].parent), base_url="http://127.0.0.1") as client:
        page = client.get("/leaderboard", params=[("run", p.name) for p in order])
        assert page.status_code == 200
        rows = page.text.split("<tr>")[2:]
        viewer_order = [next(n for n in ranking if f">{n}</a>" in r) for r in rows]
        assert viewer_order == ranking
        api = client.get("/api/leaderboard").json()  # no run: every listed run
        assert [Path(s["run"]).name for s in api["standings"]] == ranking
        missing = client.get("/leaderboard", params={"run": "nope"})
        assert missing.status_code == 404


def test_hostile_names_are_escaped(invoke: Invoke, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "mini", TASKS[:1])
    run = tmp_path / "runs" / "<script>x"
    assert invoke("run", suite, "-a", "oracle", "-q", "-o", run).code == 0
    with TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1") as client:
        page = client.get("/leaderboard")
    assert page.status_code == 200 and "<script>x" not in page.text
    assert "&lt;script&gt;x" in page.text
    assert invoke("leaderboard", run, "--html", tmp_path / "b.html").code == 0
    assert "<script>x" not in (tmp_path / "b.html").read_text()
