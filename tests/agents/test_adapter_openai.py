"""``openai:MODEL`` end to end: the official SDK over real HTTP against the scripted server."""

from __future__ import annotations

import json
import sys

import pytest
from adapter_support import STOCK_SUM, provider_options, results, run_core

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters.openai_chat import openai_messages
from toolproof.spec import SpecError
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply, ScriptedToolCall
from toolproof.trajectory import Message, Termination, ToolCall


async def test_solves_a_multi_step_core_task_with_parallel_calls() -> None:
    with ModelServer(STOCK_SUM) as server:
        trajectory, score = await run_core("openai:gpt-4o", provider_options(server, "openai"))
        requests = server.requests
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert score.passed_loose
    assert len(requests) == 3
    first = trajectory.steps[0]
    assert [(c.name, c.arguments) for c in first.message.tool_calls] == [
        ("get_stock", {"product_id": "A"}),
        ("get_stock", {"product_id": "B"}),
    ]
    assert [r.content for r in first.results] == [
        '{"product_id": "A", "stock": 15}',
        '{"product_id": "B", "stock": 27}',
    ]
    # The first request: the instance's system prompt, the task, the tools as function tools.
    opening = requests[0]
    assert opening["model"] == "gpt-4o"
    assert opening["messages"][0]["role"] == "system"
    assert opening["messages"][0]["content"] == trajectory.prompt[0].content
    assert opening["messages"][1] == {"role": "user", "content": trajectory.prompt[1].content}
    assert [t["function"]["name"] for t in opening["tools"]] == [
        "get_stock",
        "calculate",
        "list_products",
        "submit_answer",
    ]
    assert all(t["type"] == "function" for t in opening["tools"])
    # The second: one assistant message holding both calls, then one tool message per call.
    transcript = requests[1]["messages"][2:]
    ids = [c.id for c in first.message.tool_calls]
    assert [c["id"] for c in transcript[0]["tool_calls"]] == ids
    assert [(m["role"], m["tool_call_id"]) for m in transcript[1:]] == [("tool", i) for i in ids]
    assert trajectory.final_answer == "Products A and B have 42 units in stock together."


async def test_malformed_arguments_get_an_error_the_model_recovers_from() -> None:
    bad = ScriptedReply(tool_calls=[ScriptedToolCall("get_stock", '{"product_id": "A"')])
    with ModelServer([bad, *STOCK_SUM]) as server:
        trajectory, score = await run_core("openai:gpt-4o", provider_options(server, "openai"))
        retry = server.requests[1]["messages"]
    assert score.passed_loose, trajectory.error
    call = trajectory.steps[0].message.tool_calls[0]
    assert call.raw_arguments == '{"product_id": "A"' and call.arguments == {}
    name, kind, content = results(trajectory)[0]
    assert (name, kind) == ("get_stock", "invalid_arguments")
    # The model sees its own malformed arguments verbatim, and the error.
    assert retry[2]["tool_calls"][0]["function"]["arguments"] == '{"product_id": "A"'
    assert retry[3] == {"role": "tool", "tool_call_id": call.id, "content": content}
    assert content.startswith("error: arguments are not valid JSON")


async def test_an_unknown_tool_gets_an_error_the_model_recovers_from() -> None:
    bad = ScriptedReply(tool_calls=[ScriptedToolCall("get_inventory", {"sku": "A"})])
    with ModelServer([bad, *STOCK_SUM]) as server:
        trajectory, score = await run_core("openai:gpt-4o", provider_options(server, "openai"))
    assert score.passed_loose, trajectory.error
    name, kind, content = results(trajectory)[0]
    assert (name, kind) == ("get_inventory", "unknown_tool")
    assert "get_stock" in content


async def test_a_rate_limit_is_retried_and_the_retries_are_recorded() -> None:
    limited = ScriptedReply(error=ScriptedError(429, times=2, retry_after=0.001))
    with ModelServer([limited, *STOCK_SUM]) as server:
        trajectory, score = await run_core("openai:gpt-4o", provider_options(server, "openai"))
        calls = server.calls
    assert score.passed_loose, trajectory.error
    assert calls == 5
    assert trajectory.steps[0].annotations == {"retries": 2}
    assert [s.annotations for s in trajectory.steps[1:]] == [{}, {}]


async def test_server_errors_outliving_the_retries_are_an_infra_error() -> None:
    broken = ScriptedReply(error=ScriptedError(500, times=99, message="upstream exploded"))
    with ModelServer([broken]) as server:
        options = provider_options(server, "openai", max_retries=2)
        trajectory, score = await run_core("openai:gpt-4o", options)
        calls = server.calls
    assert trajectory.termination is Termination.INFRA_ERROR
    assert not score.passed
    assert calls == 3
    assert trajectory.error is not None
    assert "HTTP 500" in trajectory.error and "upstream exploded" in trajectory.error
    assert "gave up after 2 retries" in trajectory.error


async def test_garbage_from_the_provider_is_retried_then_an_infra_error() -> None:
    garbage = ScriptedReply(error=ScriptedError.garbage(times=99))
    with ModelServer([garbage]) as server:
        options = provider_options(server, "openai", max_retries=1)
        trajectory, _ = await run_core("openai:gpt-4o", options)
    assert trajectory.termination is Termination.INFRA_ERROR
    assert "not a chat completion" in (trajectory.error or "")


async def test_a_rejected_request_is_an_agent_error_and_not_retried() -> None:
    rejected = ScriptedReply(error=ScriptedError(400, message="context too long"))
    with ModelServer([rejected]) as server:
        trajectory, _ = await run_core("openai:gpt-4o", provider_options(server, "openai"))
        calls = server.calls
    assert trajectory.termination is Termination.AGENT_ERROR
    assert calls == 1
    assert "rejected the request: HTTP 400: context too long" in (trajectory.error or "")


async def test_usage_is_recorded_per_step_and_priced() -> None:
    replies = [
        ScriptedReply(tool_calls=STOCK_SUM[0].tool_calls, usage=(1000, 100)),
        ScriptedReply(tool_calls=STOCK_SUM[1].tool_calls, usage=(2000, 50)),
        ScriptedReply(STOCK_SUM[2].content, usage=(3000, 20)),
    ]
    with ModelServer(replies) as server:
        trajectory, _ = await run_core("openai:gpt-4o", provider_options(server, "openai"))
    usages = [s.usage for s in trajectory.steps]
    assert all(u is not None and not u.estimated for u in usages)
    assert [(u.input_tokens, u.output_tokens) for u in usages if u] == [
        (1000, 100),
        (2000, 50),
        (3000, 20),
    ]
    # gpt-4o: $2.50 in, $10 out per million tokens.
    assert [u.cost_usd for u in usages if u] == pytest.approx([0.0035, 0.0055, 0.0077])
    total = trajectory.usage()
    assert (total.input_tokens, total.output_tokens) == (6000, 170)
    assert total.cost_usd == pytest.approx(0.0167)


async def test_an_unpriced_model_has_no_cost_not_zero() -> None:
    with ModelServer(STOCK_SUM) as server:
        options = provider_options(server, "openai")
        trajectory, _ = await run_core("openai:my-local-llama", options)
    usages = [s.usage for s in trajectory.steps]
    assert all(u is not None and u.input_tokens > 0 and u.cost_usd is None for u in usages)
    assert trajectory.usage().cost_usd is None


async def test_streaming_assembles_text_parallel_calls_and_usage() -> None:
    bad = ScriptedReply(tool_calls=[ScriptedToolCall("get_stock", '{"product_id": ')])
    replies = [bad, *STOCK_SUM[:2], ScriptedReply(STOCK_SUM[2].content, usage=(70, 12))]
    with ModelServer(replies, stream_chunk_chars=3) as server:
        options = provider_options(server, "openai", stream=True)
        trajectory, score = await run_core("openai:gpt-4o", options)
        requests = server.requests
    assert score.passed_loose, trajectory.error
    assert all(r["stream"] is True for r in requests)
    assert trajectory.steps[0].message.tool_calls[0].raw_arguments == '{"product_id": '
    assert [c.arguments for c in trajectory.steps[1].message.tool_calls] == [
        {"product_id": "A"},
        {"product_id": "B"},
    ]
    assert trajectory.final_answer == STOCK_SUM[2].content
    last = trajectory.steps[-1].usage
    assert last is not None and (last.input_tokens, last.output_tokens) == (70, 12)


async def test_sampling_parameters_are_sent() -> None:
    with ModelServer(STOCK_SUM) as server:
        options = provider_options(server, "openai", temperature=0.2, seed=7, max_tokens=256)
        await run_core("openai:gpt-4o", options)
        request = server.requests[0]
    assert (request["temperature"], request["seed"]) == (0.2, 7)
    assert request["max_completion_tokens"] == 256


def test_transcript_conversion() -> None:
    messages = [
        Message(role="system", content="be good"),
        Message(role="user", content="go"),
        Message(
            role="assistant",
            content="looking",
            tool_calls=[
                ToolCall(id="c1", name="f", arguments={"x": 1}),
                ToolCall(id="c2", name="g", raw_arguments="{oops"),
            ],
        ),
        Message(role="tool", content="1", tool_call_id="c1", name="f"),
        Message(role="tool", content="error", tool_call_id="c2", name="g"),
    ]
    converted = openai_messages(messages)
    assert converted[2] == {
        "role": "assistant",
        "content": "looking",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "{oops"}},
        ],
    }
    assert converted[3:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "tool", "tool_call_id": "c2", "content": "error"},
    ]
    assert json.loads(converted[2]["tool_calls"][0]["function"]["arguments"]) == {"x": 1}


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[openai\]'"):
        build_agent(parse_agent_spec("openai:gpt-4o", {"api_key": "k"}))


@pytest.mark.parametrize(
    ("spec", "options", "message"),
    [
        ("openai", {"api_key": "k"}, "need a model, e.g. openai:gpt-4o"),
        ("openai:gpt-4o", {"api_key": "k", "temprature": 1}, "no option 'temprature'; valid"),
        ("openai:gpt-4o", {"api_key": "k", "max_tokens": 0}, "greater than 0"),
        ("openai:gpt-4o", {}, "set OPENAI_API_KEY"),
        ("openai:gpt-4o", {"api_key": "<redacted>"}, "API key is not recorded"),
    ],
)
def test_bad_specs_are_clear_errors(spec: str, options: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        build_agent(parse_agent_spec(spec, options))
