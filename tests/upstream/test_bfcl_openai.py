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
