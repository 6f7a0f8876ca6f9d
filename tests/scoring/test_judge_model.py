"""``--judge-model``: the run's judge overrides the task's, through the model gateway
(recorded, priced with the run's table, cached), carried by the RunConfig."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolproof import gateway
from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord, RunReader
from toolproof.testing import ModelServer, ScriptedReply

SUITE = {"name": "judged", "version": "1.0.0", "seed": 3, "canary": "judged canary: no training"}


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield
    gateway.stop_shared()


def _suite(root: Path) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text(yaml.safe_dump(SUITE))
    task = {
        "id": "explain-sum",
        "description": "Add 2 and 3 with the calculator and explain the result.",
        "type": "single_tool",
        "tools": ["calculate"],
        "success": [
            {
                "kind": "judge",
                "name": "clarity",
                "model": "openai:the-tasks-judge",
                "base_url": "http://127.0.0.1:9/v1",  # never used: the run's judge wins
                "rubric": "Explains the sum.",
                "samples": 2,
            }
        ],
        "solution": {
            "calls": [{"tool": "calculate", "args": {"expression": "2 + 3"}}],
            "answer": "2 + 3 = 5.",
        },
    }
    (root / "tasks" / "explain-sum.yaml").write_text(yaml.safe_dump(task))
    return root


def _run(suite: Path, base_url: str, cache: Path, run_dir: Path) -> tuple[EpisodeRecord, Any]:
    prices = run_dir.parent / "prices.yaml"
    prices.write_text(yaml.safe_dump({"models": {"run-judge": {"input": 1.0, "output": 2.0}}}))
    options = {"provider": "openai", "model": "run-judge", "base_url": base_url}
    options.update(api_key="k", cache=str(cache), prices=str(prices))
    config = RunConfig(
        suite=str(suite),
        agent="oracle",
        snapshots=False,
        retries=0,
        judge_model="openai:run-judge",
        side_models={"judge": options},
    )
    # what a Ray worker gets: the config as JSON, secrets kept for it
    shipped = RunConfig.model_validate_json(config.model_dump_json(context={"with_secrets": True}))
    asyncio.run(Runner(shipped, run_dir, parallel=1).run())
    with RunReader(run_dir) as reader:
        (record,) = list(reader.records())
        summary = reader.summary()
    return record, summary


def test_the_run_judge_overrides_the_tasks_and_a_cached_rerun_is_free(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "suite")
    replies = [ScriptedReply(f'{{"score": 5, "reason": "r{i}"}}', usage=(1000, 10)) for i in (1, 2)]
    with ModelServer(replies) as server:
        first, summary = _run(suite, server.base_url, tmp_path / "cache", tmp_path / "run1")
        assert server.calls == 2
        second, _ = _run(suite, server.base_url, tmp_path / "cache", tmp_path / "run2")
        assert server.calls == 2  # the rerun was answered from the cache
        models = [r.model for r in server.chat_requests]
    assert models == ["run-judge", "run-judge"]
    (check,) = first.score.checks
    assert check.passed and check.data["model"] == "openai:run-judge"
    assert len(check.data["model_calls"]) == 2
    assert [c["cached"] for c in check.data["model_calls"]] == [False, False]
    # priced by the run's table: 2000 input at $1/M, 20 output at $2/M
    usage = check.data["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (2000, 20)
    assert usage["cost_usd"] == pytest.approx(0.00204)
    assert summary["judge"]["tokens"] == {"input": 2000, "output": 20}
    assert summary["tokens"]["total"] == 0  # the agent's spend is apart
    # the config on disk keeps no key
    assert summary["config"]["side_models"]["judge"]["api_key"] == "<redacted>"
    (again,) = second.score.checks
    assert [c["cached"] for c in again.data["model_calls"]] == [True, True]
    assert again.data["samples"] == check.data["samples"] and again.passed


def test_a_judge_waiting_on_its_model_does_not_hold_the_other_episodes(tmp_path: Path) -> None:
    """The judge's client is synchronous: its checks run off the event loop (like a custom
    check), so while one episode's judge waits, the loop keeps serving the others."""
    suite = _suite(tmp_path / "suite")
    replies = [ScriptedReply('{"score": 5, "reason": "ok"}', latency_s=1.0) for _ in range(4)]
    with ModelServer(replies) as server:
        options = {"provider": "openai", "model": "run-judge", "base_url": server.base_url}
        config = RunConfig(suite=str(suite), agent="oracle", snapshots=False, retries=0, epochs=2,
                           judge_model="openai:run-judge",
                           side_models={"judge": {**options, "api_key": "k"}})  # fmt: skip
        ticks = 0

        async def main() -> None:
            nonlocal ticks
            run = asyncio.create_task(Runner(config, tmp_path / "run", parallel=2).run())
            while not run.done():
                await asyncio.sleep(0.05)
                ticks += 1
            await run

        asyncio.run(main())
        assert server.calls == 4
    with RunReader(tmp_path / "run") as reader:
        assert [r.score.passed for r in reader.records()] == [True, True]
    # Four 1 s judge calls: a blocked loop would tick only between them.
    assert ticks >= 20
