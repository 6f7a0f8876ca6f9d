"""Run budgets: ``--limit``, ``--sample``, ``--max-tokens``, ``--max-cost``.

A budget the run reaches stops it cleanly (no new episode starts; the finished ones are
kept), the summary is marked incomplete with the reason, the exit status is 3, and
``--resume`` with a raised budget finishes it. The agent is the real OpenAI adapter over
HTTP against the scripted model server, so the tokens and cost are the adapter's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from toolproof.engine import RunConfig
from toolproof.spec import load_suite, resolve_suite_path
from toolproof.testing import ModelServer, ScriptedReply, sequence_policy
from toolproof_helpers import CliResult

Invoke = Callable[..., CliResult]
TASKS = [task.id for task in load_suite("core").tasks[:6]]
"""Six core tasks; each episode is one model reply of 100,000 + 10,000 tokens ($0.021)."""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # a resume asks for the key again
    replies = [ScriptedReply("done", usage=(100_000, 10_000))]
    with ModelServer(sequence_policy(replies, when_exhausted="done")) as served:
        yield served


def _run(server: ModelServer, out: Path, *extra: str) -> list[str]:
    return [
        "run", "core", "--agent", "openai:gpt-4o-mini",
        "--agent-arg", f"base_url={server.base_url}",
        *(f"--task={t}" for t in TASKS), "--parallel", "1", "-o", str(out), *extra,
    ]  # fmt: skip


def _summary(run_dir: Path) -> dict[str, Any]:
    return dict(json.loads((run_dir / "summary.json").read_text()))


@pytest.mark.parametrize(
    ("budget", "raised", "reason"),
    [
        (["--max-tokens", "250000"], ["--max-tokens", "10000000"], "token budget reached"),
        (["--max-cost", "0.05"], ["--max-cost", "1"], "cost budget reached"),
    ],
)
def test_a_budget_stops_the_run_and_resume_raises_it(
    invoke: Invoke,
    server: ModelServer,
    tmp_path: Path,
    budget: list[str],
    raised: list[str],
    reason: str,
) -> None:
    run_dir = tmp_path / "run"
    first = invoke(*_run(server, run_dir, *budget))
    assert first.code == 3, first.err
    episodes = _summary(run_dir)["episodes"]
    assert episodes["complete"] is False
    assert episodes["finished"] == 3  # 110k, 220k, 330k tokens: the third passes 250k
    assert reason in episodes["stop_reason"]
    assert reason in first.err and "toolproof run --resume" in first.err
    assert f"stopped: {reason}" in first.err or f"stopped: {reason}" in first.out
    assert "tokens 300000 in + 30000 out" in first.out + first.err

    same = invoke("run", "--resume", run_dir, "-q")  # the same budget: still reached
    assert same.code == 3 and reason in same.err
    assert _summary(run_dir)["episodes"]["finished"] == 3

    done = invoke("run", "--resume", run_dir, *raised)
    assert done.code == 0, done.err
    summary = _summary(run_dir)
    assert summary["episodes"]["complete"] is True and summary["episodes"]["finished"] == 6
    assert "stop_reason" not in summary["episodes"]
    assert summary["tokens"]["total"] == 6 * 110_000
    assert "cost $0.1260" in done.out  # 6 x (0.1 M x $0.15 + 0.01 M x $0.60)


def test_tokens_and_cost_show_on_the_console_and_in_show(
    invoke: Invoke, server: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(*_run(server, Path("runs/one"), "--limit", "2"))
    assert result.code == 0, result.err
    line = "tokens 200000 in + 20000 out (110000 per episode); cost $0.0420 ($0.0210 per episode)"
    assert line in result.out
    shown = invoke("show", "--no-tasks")  # no argument: the latest run under ./runs
    assert shown.code == 0, shown.err
    assert line in shown.out and "latest run: runs/one" in shown.err


def test_show_without_runs_says_where_it_looked(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("show")
    assert result.code == 2
    assert "no run folder in" in result.err and "give RUN_DIR" in result.err


def test_limit_and_sample_select_and_a_resume_may_raise_them(
    invoke: Invoke, server: ModelServer, tmp_path: Path
) -> None:
    run_dir = tmp_path / "run"
    assert invoke(*_run(server, run_dir, "--limit", "2", "-q")).code == 0
    assert sorted(_summary(run_dir)["tasks"]) == sorted(TASKS[:2])
    assert invoke("run", "--resume", run_dir, "--limit", "4", "-q").code == 0
    summary = _summary(run_dir)
    assert sorted(summary["tasks"]) == sorted(TASKS[:4])
    assert summary["episodes"]["planned"] == 4 and summary["episodes"]["complete"]


def test_sample_is_seeded_and_a_larger_sample_keeps_the_smaller() -> None:
    suite = load_suite(str(resolve_suite_path("core")))

    def pick(n: int, seed: int) -> list[str]:
        return RunConfig(suite="core", agent="noop", sample=n, seed=seed).select(suite)

    assert pick(5, 1) == pick(5, 1)
    assert pick(5, 1) != pick(5, 2)
    assert set(pick(5, 1)) <= set(pick(9, 1))
    assert len(pick(5, 1)) == 5
    assert pick(10_000, 1) == [t.id for t in suite.tasks]
    ids = pick(5, 1)  # in suite order
    order = [t.id for t in suite.tasks]
    assert ids == sorted(ids, key=order.index)


def test_budgets_are_not_the_runs_identity() -> None:
    a = RunConfig(suite="core", agent="noop", limit=2, max_tokens=5)
    b = RunConfig(suite="core", agent="noop", limit=9, max_cost_usd=1.0, sample=3)
    assert a.identity() == b.identity()


@pytest.mark.parametrize("option", ["--limit", "--sample", "--max-tokens", "--max-cost"])
@pytest.mark.parametrize("value", ["0", "-1", "x", "nan"])
def test_bad_budgets_are_refused(invoke: Invoke, tmp_path: Path, option: str, value: str) -> None:
    result = invoke("run", "core", "-a", "oracle", option, value, "-o", tmp_path / "r", "-q")
    assert result.code == 2 and option in result.err
    assert not (tmp_path / "r").exists()


def test_the_json_end_event_carries_spend_and_the_stop_reason(
    invoke: Invoke, server: ModelServer, tmp_path: Path
) -> None:
    result = invoke(*_run(server, tmp_path / "r", "--max-tokens", "150000", "--json"))
    assert result.code == 3
    end = json.loads(result.out.splitlines()[-1])
    assert end["event"] == "end" and end["cause"] == "incomplete"
    assert end["tokens"] == 220_000 and end["cost_usd"] == pytest.approx(0.042)
    assert "token budget reached" in end["stop_reason"] and end["resume"]
