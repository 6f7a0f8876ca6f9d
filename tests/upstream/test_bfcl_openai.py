"""A BFCL category through the real OpenAI SDK over loopback HTTP (the scripted model server)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall

pytest.importorskip("openai")


def _run(replies: list[ScriptedReply], out: Path) -> tuple[dict[str, Any], list[Any]]:
    with ModelServer(replies) as server:
        options = {"base_url": server.base_url, "api_key": "test", "timeout": 30}
        config = RunConfig(
            suite="bfcl:parallel",
            agent="openai:gpt-4o",
            agent_options=options,
            tasks=["parallel_0"],
        )
        summary = asyncio.run(Runner(config, out, parallel=1).run())
        return summary, server.requests


def test_parallel_calls_in_the_first_turn_pass_in_either_order(tmp_path: Path) -> None:
    calls = [
        ScriptedToolCall("spotify_play", {"artist": "Maroon 5", "duration": 15}),
        ScriptedToolCall("spotify_play", {"artist": "Taylor Swift", "duration": 20}),
    ]
    summary, requests = _run([ScriptedReply(tool_calls=calls), ScriptedReply("Playing.")], tmp_path)
    assert summary["success"]["successes"] == 1
    tools = requests[0]["tools"]
    assert [t["function"]["name"] for t in tools] == ["spotify_play"]
    assert tools[0]["function"]["parameters"]["type"] == "object"  # BFCL's "dict"


def test_a_wrong_value_fails_and_a_later_fix_does_not_count(tmp_path: Path) -> None:
    wrong = [
        ScriptedToolCall("spotify_play", {"artist": "Taylor Swift", "duration": 25}),
        ScriptedToolCall("spotify_play", {"artist": "Maroon 5", "duration": 15}),
    ]
    right = [
        ScriptedToolCall("spotify_play", {"artist": "Taylor Swift", "duration": 20}),
        ScriptedToolCall("spotify_play", {"artist": "Maroon 5", "duration": 15}),
    ]
    replies = [
        ScriptedReply(tool_calls=wrong),
        ScriptedReply(tool_calls=right),
        ScriptedReply("ok"),
    ]
    summary, _ = _run(replies, tmp_path)
    assert summary["success"]["successes"] == 0
    assert summary["bfcl"]["categories"]["parallel"]["accuracy"] == 0.0


def test_a_multi_turn_entry_over_the_real_sdk_gets_each_user_turn(tmp_path: Path) -> None:
    pytest.importorskip("mpmath", reason="BFCL's MathAPI backend needs mpmath==1.3.0")
    from toolproof.upstream import _bfcl_backends as backends
    from toolproof.upstream import _bfcl_multi as multi
    from toolproof.upstream import _bfcl_upstream as upstream

    entry = upstream.load_entries("multi_turn_miss_func")[0]
    truth = upstream.load_answers("multi_turn_miss_func")[entry["id"]]
    params = backends.method_parameters(list(entry["involved_classes"]))
    replies: list[ScriptedReply] = []
    for turn in truth:
        calls = [multi.parse_call(text, params, entry) for text in turn]
        if calls:
            replies.append(
                ScriptedReply(tool_calls=[ScriptedToolCall(c.tool, c.args) for c in calls])
            )
        replies.append(ScriptedReply("Done."))
    with ModelServer(replies) as server:
        options = {"base_url": server.base_url, "api_key": "test", "timeout": 30}
        config = RunConfig(
            suite="bfcl:multi_turn_miss_func",
            agent="openai:gpt-4o",
            agent_options=options,
            tasks=[entry["id"]],
        )
        summary = asyncio.run(Runner(config, tmp_path, parallel=1).run())
        requests = server.requests
    assert summary["success"]["successes"] == 1
    assert summary["bfcl"]["categories"]["multi_turn_miss_func"]["accuracy"] == 1.0
    users = [m["content"] for m in requests[-1]["messages"] if m["role"] == "user"]
    assert len(users) == len(truth) and users[3] == multi.ADDED_FUNCTIONS_PROMPT
    offered = [{t["function"]["name"] for t in r["tools"]} for r in requests]
    assert "sort" not in offered[0] and "sort" in offered[-1]  # held back until its turn
