"""submit_answer for every kind of agent (issue 31), end to end on the core task bank-balance.

A harness-driven adapter (the OpenAI SDK over real HTTP against the scripted server)
sees ``submit_answer`` typed as a number, a hedge it sends is a tool error it can
correct, the valid value ends the episode (no further model call) and passes strict; the
same value in plain text passes loose only. An agent that owns its loop hands the answer
in through its session, and every later call is refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from adapter_support import FAST, RawServer, core_instance, provider_options

from toolproof.agents import ToolSession, build_agent, parse_agent_spec
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.spec import ANSWER_TOOL
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall
from toolproof.trajectory import Termination

TASK = "bank-balance"


def _facts() -> tuple[str, float]:
    instance = core_instance(TASK)
    answer = instance.task.answer
    assert answer is not None
    return str(instance.params["acc"]), float(answer.expected)


async def _run_openai(script: list[ScriptedReply]) -> Any:
    instance = core_instance(TASK)
    with ModelServer(script) as server:
        spec = "openai:gpt-4o"
        factory = build_agent(parse_agent_spec(spec, provider_options(server, "openai")))
        trajectory, score = await run_episode(instance, factory, EpisodeOptions(agent_label=spec))
        return trajectory, score, server.requests


async def test_an_adapter_submits_a_typed_answer_and_a_hedge_is_refused() -> None:
    account, balance = _facts()
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("get_balance", {"account_id": account})]),
        ScriptedReply(tool_calls=[ScriptedToolCall(ANSWER_TOOL, {"answer": f"{balance} or 12"})]),
        ScriptedReply(tool_calls=[ScriptedToolCall(ANSWER_TOOL, {"answer": balance})]),
        ScriptedReply("never asked for: the answer ended the episode"),
    ]
    trajectory, score, requests = await _run_openai(script)
    offered = {t["function"]["name"]: t["function"] for t in requests[0]["tools"]}
    assert offered[ANSWER_TOOL]["parameters"]["properties"]["answer"]["type"] == "number"
    assert len(requests) == 3
    hedge = trajectory.steps[1].results[0]
    assert hedge.is_error and hedge.error_kind == "invalid_arguments"
    assert trajectory.termination is Termination.COMPLETED and trajectory.error is None
    assert trajectory.final_answer == str(balance)
    assert score.passed and score.passed_loose
    assert score.tool_calls == 1  # handing in the answer is not a tool call


async def test_the_value_in_plain_text_passes_loose_only() -> None:
    account, balance = _facts()
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("get_balance", {"account_id": account})]),
        ScriptedReply(f"Your account holds {balance} EUR."),
    ]
    trajectory, score, _ = await _run_openai(script)
    assert trajectory.termination is Termination.COMPLETED
    assert not score.passed
    assert score.passed_loose
    (answer,) = [c for c in score.checks if c.kind == "answer"]
    assert answer.data == {
        "strict": False,
        "loose": True,
        "loose_detail": "exactly the expected value, with no rival",
        "candidates": [str(balance)],
    }


class _Driven:
    """Owns its loop: looks the balance up, submits it, then tries to go on."""

    def __init__(self, account: str, balance: float) -> None:
        self.account, self.balance = account, balance
        self.after: list[Any] = []

    async def run(self, session: ToolSession) -> str:
        assert ANSWER_TOOL in [t.name for t in session.tools]
        await session.call_tool("get_balance", {"account_id": self.account})
        done = await session.call_tool(ANSWER_TOOL, {"answer": self.balance})
        assert not done.is_error
        self.after.append(await session.call_tool("list_accounts", {}))
        return "some other text"


async def test_an_agent_that_owns_its_loop_submits_through_its_session() -> None:
    account, balance = _facts()
    driven = _Driven(account, balance)
    trajectory, score = await run_episode(
        core_instance(TASK), lambda ctx: driven, EpisodeOptions(agent_label="driven")
    )
    (refused,) = driven.after
    assert refused.is_error and "an answer was submitted" in refused.content
    assert trajectory.termination is Termination.COMPLETED
    assert trajectory.final_answer == str(balance)
    assert score.passed


async def test_an_http_agent_is_offered_and_uses_submit_answer() -> None:
    """The HTTP agent protocol carries submit_answer like any tool; the typed value ends it."""
    account, balance = _facts()
    turns = [
        {"tool_calls": [{"id": "a", "name": "get_balance", "arguments": {"account_id": account}}]},
        {"tool_calls": [{"id": "b", "name": ANSWER_TOOL, "arguments": {"answer": balance}}]},
        {"content": "never asked for"},
    ]
    responses = [(200, json.dumps(t), "application/json") for t in turns]
    with RawServer(responses).running() as server:
        factory = build_agent(parse_agent_spec(server.url, dict(FAST)))
        trajectory, score = await run_episode(
            core_instance(TASK), factory, EpisodeOptions(agent_label=server.url)
        )
        bodies = list(server.bodies)
    offered = {t["name"]: t for t in bodies[0]["tools"]}
    assert offered[ANSWER_TOOL]["parameters"]["properties"]["answer"]["type"] == "number"
    assert len(bodies) == 2
    assert trajectory.final_answer == str(balance)
    assert score.passed


async def typed_mcp_agent(task: Any) -> str:
    """An MCP client agent: reads the balance, then hands it in with submit_answer."""
    async with task.connect() as session:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        answer = listed[ANSWER_TOOL].input_schema["properties"]["answer"]
        assert answer["type"] == "number"
        account, balance = _facts()
        read = await session.call_tool("get_balance", {"account_id": account})
        assert not read.is_error
        done = await session.call_tool(ANSWER_TOOL, {"answer": balance})
        assert not done.is_error
        later = await session.call_tool("list_accounts", {})
        assert later.is_error  # the answer ended the episode
    return "the typed answer was handed in"


async def test_an_mcp_client_agent_hands_in_the_typed_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    factory = build_agent(parse_agent_spec("mcp:test_typed_answers:typed_mcp_agent", {}))
    trajectory, score = await run_episode(
        core_instance(TASK), factory, EpisodeOptions(agent_label="mcp")
    )
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    _, balance = _facts()
    assert trajectory.final_answer == str(balance)
    assert score.passed
