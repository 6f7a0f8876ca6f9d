"""``anthropic:MODEL`` end to end: the official SDK over real HTTP against the scripted server."""

from __future__ import annotations

import sys

import pytest
from adapter_support import STOCK_SUM, provider_options, results, run_core

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters.anthropic_messages import anthropic_messages
from toolproof.spec import SpecError
from toolproof.testing import (
    ModelServer,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
    sequence_policy,
)
from toolproof.trajectory import Message, Termination, ToolCall

MODEL = "anthropic:claude-haiku-4-5"
"""A current model: the SDK warns about deprecated ones, and warnings are errors here."""


async def test_solves_a_multi_step_core_task_with_parallel_calls() -> None:
    with ModelServer(STOCK_SUM) as server:
        trajectory, score = await run_core(MODEL, provider_options(server, "anthropic"))
        requests = server.requests
    assert score.passed_loose, trajectory.error
    assert len(requests) == 3
    opening = requests[0]
    assert opening["system"] == trajectory.prompt[0].content
    assert opening["max_tokens"] == 4096
    assert [t["name"] for t in opening["tools"]] == [
        "get_stock",
        "calculate",
        "list_products",
        "submit_answer",
    ]
    assert opening["tools"][0]["input_schema"]["required"] == ["product_id"]
    calls = trajectory.steps[0].message.tool_calls
    assert [c.arguments for c in calls] == [{"product_id": "A"}, {"product_id": "B"}]
    # Both results of the parallel turn travel in one user message.
    assistant, user = requests[1]["messages"][1:]
    assert [b["type"] for b in assistant["content"]] == ["tool_use", "tool_use"]
    assert user["role"] == "user"
    assert [(b["type"], b["tool_use_id"]) for b in user["content"]] == [
        ("tool_result", calls[0].id),
        ("tool_result", calls[1].id),
    ]


async def test_malformed_input_and_unknown_tools_are_recoverable() -> None:
    replies = [
        ScriptedReply(tool_calls=[ScriptedToolCall("get_stock", "product A please")]),
        ScriptedReply(tool_calls=[ScriptedToolCall("stock_of", {"id": "A"})]),
        *STOCK_SUM,
    ]
    with ModelServer(replies) as server:
        trajectory, score = await run_core(MODEL, provider_options(server, "anthropic"))
        later = server.requests[1]["messages"]
    assert score.passed_loose, trajectory.error
    assert [(name, kind) for name, kind, _ in results(trajectory)[:2]] == [
        ("get_stock", "invalid_arguments"),
        ("stock_of", "unknown_tool"),
    ]
    assert trajectory.steps[0].message.tool_calls[0].raw_arguments == "product A please"
    # A malformed call goes back as an empty input; the error result quotes it.
    assert later[1]["content"][0]["input"] == {}
    assert "not valid JSON" in later[2]["content"][0]["content"]


async def test_overload_and_rate_limits_are_retried_and_counted() -> None:
    replies = [
        ScriptedReply(error=ScriptedError(529)),
        ScriptedReply(error=ScriptedError(429, retry_after=0.001)),
        *STOCK_SUM,
    ]
    with ModelServer(replies) as server:
        trajectory, score = await run_core(MODEL, provider_options(server, "anthropic"))
        calls = server.calls
    assert score.passed_loose, trajectory.error
    assert calls == 5
    assert trajectory.steps[0].annotations == {"retries": 2}


async def test_server_errors_outliving_the_retries_are_an_infra_error() -> None:
    with ModelServer([ScriptedReply(error=ScriptedError(503, times=99))]) as server:
        options = provider_options(server, "anthropic", max_retries=1)
        trajectory, _ = await run_core(MODEL, options)
        calls = server.calls
    assert trajectory.termination is Termination.INFRA_ERROR
    assert calls == 2
    assert "HTTP 503" in (trajectory.error or "")


async def test_a_bad_key_is_an_infra_error_without_retries() -> None:
    with ModelServer([ScriptedReply(error=ScriptedError(401, message="invalid x-api-key"))]) as s:
        trajectory, _ = await run_core(MODEL, provider_options(s, "anthropic"))
        calls = s.calls
    assert trajectory.termination is Termination.INFRA_ERROR
    assert calls == 1
    assert "HTTP 401: invalid x-api-key" in (trajectory.error or "")


async def test_usage_and_cost_per_step() -> None:
    replies = [
        ScriptedReply(tool_calls=STOCK_SUM[0].tool_calls, usage=(1000, 100)),
        ScriptedReply(tool_calls=STOCK_SUM[1].tool_calls, usage=(1000, 100)),
        ScriptedReply(STOCK_SUM[2].content, usage=(1000, 100)),
    ]
    with ModelServer(sequence_policy(replies)) as server:
        trajectory, _ = await run_core(MODEL, provider_options(server, "anthropic"))
        unpriced, _ = await run_core(
            "anthropic:claude-unreleased", provider_options(server, "anthropic")
        )
    # claude-haiku-4-5: $1 in, $5 out per million tokens.
    assert [s.usage.cost_usd for s in trajectory.steps if s.usage] == pytest.approx([0.0015] * 3)
    assert unpriced.steps[0].usage is not None
    assert unpriced.steps[0].usage.cost_usd is None


async def test_streaming_assembles_blocks_and_usage() -> None:
    bad = ScriptedReply(tool_calls=[ScriptedToolCall("get_stock", '{"product_id": "A"')])
    with ModelServer([bad, *STOCK_SUM], stream_chunk_chars=2) as server:
        options = provider_options(server, "anthropic", stream=True, temperature=0.0)
        trajectory, score = await run_core(MODEL, options)
        requests = server.requests
    assert score.passed_loose, trajectory.error
    assert all(r["stream"] is True and r["temperature"] == 0.0 for r in requests)
    assert trajectory.steps[0].message.tool_calls[0].raw_arguments == '{"product_id": "A"'
    assert [c.arguments for c in trajectory.steps[1].message.tool_calls] == [
        {"product_id": "A"},
        {"product_id": "B"},
    ]
    assert trajectory.final_answer == STOCK_SUM[2].content
    assert all(s.usage is not None and s.usage.output_tokens > 0 for s in trajectory.steps)


def test_transcript_conversion_merges_results_and_keeps_alternation() -> None:
    messages = [
        Message(role="system", content="be good"),
        Message(role="user", content="go"),
        Message(
            role="assistant",
            content="",
            tool_calls=[ToolCall(id="t1", name="f", arguments={"x": 1})],
        ),
        Message(role="tool", content="1", tool_call_id="t1", name="f"),
        Message(role="user", content="and now?"),
    ]
    system, converted = anthropic_messages(messages)
    assert system == "be good"
    assert converted == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"x": 1}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1"},
                {"type": "text", "text": "and now?"},
            ],
        },
    ]


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[anthropic\]'"):
        build_agent(parse_agent_spec(MODEL, {"api_key": "k"}))


def test_seed_is_refused_with_the_reason() -> None:
    with pytest.raises(SpecError, match="has no seed"):
        build_agent(parse_agent_spec(MODEL, {"api_key": "k", "seed": 1}))
