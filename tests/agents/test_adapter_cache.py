"""The model-call cache: record every request and reply, replay them with no provider call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from adapter_support import STOCK_SUM, mini_core, provider_options, run_core

from toolproof.agents.adapters._cache import ModelCache, request_key
from toolproof.agents.adapters._reply import ModelReply, ReplyCall
from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.testing import ModelServer, sequence_policy
from toolproof.trajectory import Trajectory

TIMINGS = {"started_at", "duration_s", "agent_s", "tool_s"}


def comparable(trajectory: Trajectory) -> Any:
    """The trajectory without wall-clock fields."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in TIMINGS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(trajectory.model_dump(mode="json"))


def entries(cache: Path) -> list[Path]:
    return sorted(cache.rglob("*.json"))


def test_keys_are_canonical() -> None:
    a = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}
    b = {"temperature": 0.5, "messages": [{"content": "hi", "role": "user"}], "model": "m"}
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key({**a, "temperature": 0.6})


def test_entries_are_written_atomically_and_unreadable_ones_are_misses(tmp_path: Path) -> None:
    cache = ModelCache(tmp_path)
    request = {"model": "m", "messages": []}
    reply = ModelReply(content=None, tool_calls=[ReplyCall(id="c", name="f", arguments="{")])
    path = cache.put(request, reply)
    assert [p.name for p in tmp_path.rglob("*")] == [path.parent.name, path.name]
    assert json.loads(path.read_text())["request"] == request
    assert cache.get(request) == reply
    path.write_text('{"key": "torn')
    assert cache.get(request) is None
    assert (cache.hits, cache.misses) == (1, 1)


async def test_a_replay_makes_no_provider_call_and_gives_the_same_trajectory(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"
    with ModelServer(STOCK_SUM) as server:
        options = provider_options(server, "openai", cache=str(cache), temperature=0.0)
        recorded, score = await run_core("openai:gpt-4o", options)
        assert server.calls == 3
        # The script is used up: any further request would get a 500.
        replayed, again = await run_core("openai:gpt-4o", options)
        streamed, _ = await run_core("openai:gpt-4o", {**options, "stream": True})
        assert server.calls == 3
    assert score.passed_loose and again.passed_loose
    assert len(entries(cache)) == 3
    assert comparable(replayed) == comparable(recorded)
    assert comparable(streamed) == comparable(recorded)
    # Usage and cost replay too.
    assert replayed.usage() == recorded.usage()


async def test_anthropic_replays_too(tmp_path: Path) -> None:
    with ModelServer(STOCK_SUM) as server:
        options = provider_options(server, "anthropic", cache=str(tmp_path))
        recorded, _ = await run_core("anthropic:claude-haiku-4-5", options)
        replayed, score = await run_core("anthropic:claude-haiku-4-5", options)
        calls = server.calls
    assert calls == 3
    assert score.passed_loose
    assert comparable(replayed) == comparable(recorded)


async def test_other_parameters_are_other_entries(tmp_path: Path) -> None:
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        options = provider_options(server, "openai", cache=str(tmp_path))
        await run_core("openai:gpt-4o", options)
        await run_core("openai:gpt-4o", {**options, "temperature": 1.0})
        await run_core("openai:gpt-4o-mini", options)
        calls = server.calls
    assert calls == 9
    assert len(entries(tmp_path)) == 9


async def test_concurrent_episodes_share_a_cache(tmp_path: Path) -> None:
    suite = mini_core(tmp_path / "suite", ["stock-sum"])
    cache = tmp_path / "cache"
    with ModelServer(sequence_policy(STOCK_SUM)) as server:
        options = provider_options(server, "openai", cache=str(cache))
        config = RunConfig(suite=str(suite), agent="openai:gpt-4o", agent_options=options, epochs=6)
        first = await Runner(config, tmp_path / "first", parallel=6).run()
        recorded = server.calls
        second = await Runner(config, tmp_path / "second", parallel=6).run()
        assert server.calls == recorded
    # Every epoch asks the same questions, but each epoch is its own sample.
    assert recorded == 18
    assert len(entries(cache)) == 18
    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp")]
    for run in ("first", "second"):
        with RunReader(tmp_path / run) as reader:
            assert all(r.score.passed_loose for r in reader.records())
    assert first.keys() == second.keys()
