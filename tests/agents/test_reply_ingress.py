"""A model's or an HTTP agent's reply passes the one ingress for agent bytes (invariant 8).

A lone UTF-16 surrogate (JSON's ``\\udcff`` escape alone), in the content, a tool name or
id, or the arguments of a call (``write_file``'s content), and token counts or costs that
are negative, NaN, infinite or past any limit, are the agent's ``agent_error``, naming
where they were; never an ``infra_error``, and never a run that stops: the run stores every
episode and writes its summary.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from adapter_support import FAST, RawServer, mini_core, provider_options, run_core

from toolproof.agents.adapters._cost import PriceTable
from toolproof.agents.adapters._reply import ModelReply, ReplyCall, ReplyRefused, checked_reply
from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.testing import ModelServer, ScriptedError, ScriptedReply
from toolproof.trajectory import Termination

JSON = "application/json"
SURROGATE = '"done \\udcff"'  # what a server sends: the escape, in plain ASCII JSON
WRITE = {"path": "/workspace/data/hello.txt", "content": "Hello \\udcff"}


def _run_suite(tmp_path: Path, agent: str, options: dict[str, Any]) -> dict[str, Any]:
    suite = mini_core(tmp_path / "suite", ["stock-lookup", "hello-file"])
    config = RunConfig(suite=str(suite), agent=agent, agent_options=options, retries=0)
    summary: dict[str, Any] = asyncio.run(Runner(config, tmp_path / "run", parallel=2).run())
    return summary


def _stored(tmp_path: Path) -> dict[str, Any]:
    with RunReader(tmp_path / "run") as reader:
        return {r.key: r for r in reader.records()}


def test_a_lone_surrogate_from_an_http_agent_is_its_error_and_the_run_completes(
    tmp_path: Path,
) -> None:
    with RawServer([(200, '{"content": ' + SURROGATE + "}", JSON)]).running() as server:
        summary = _run_suite(tmp_path, server.url, dict(FAST))
    assert summary["episodes"] | {"complete": True} == summary["episodes"]
    assert summary["episodes"]["finished"] == 2 and summary["episodes"]["infra_errors"] == 0
    assert (tmp_path / "run" / "summary.json").is_file()
    for record in _stored(tmp_path).values():
        assert record.score.termination is Termination.AGENT_ERROR
        assert "content holds a lone UTF-16 surrogate" in (record.trajectory.error or "")


def _turn(**fields: Any) -> str:
    return json.dumps(fields)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ('{"tool_calls": [{"name": "get_stock\\udcff", "arguments": {}}]}', "the body.tool_calls"),
        ('{"tool_calls": [{"id": "\\ud800", "name": "get_stock"}]}', "lone UTF-16 surrogate"),
        ('{"content": "x", "usage": {"input_tokens": 5, "cost_usd": NaN}}', "holds NaN"),
        ('{"content": "x", "usage": {"input_tokens": 5, "cost_usd": 1e400}}', "is inf"),
        (_turn(content="x", usage={"input_tokens": 10**20}), "usage.input_tokens must be"),
        (_turn(content="x", usage={"input_tokens": -5}), "greater than or equal to 0"),
    ],
)
async def test_hostile_http_replies_are_agent_errors_naming_the_field(body: str, said: str) -> None:
    with RawServer([(200, body, JSON)]).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST))
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert said in (trajectory.error or ""), trajectory.error


async def test_a_surrogate_in_write_file_content_from_an_http_agent_is_not_an_infra_error() -> None:
    body = json.dumps({"tool_calls": [{"id": "c1", "name": "write_file", "arguments": WRITE}]})
    body = body.replace("\\\\udcff", "\\udcff")  # the escape itself, not an escaped backslash
    with RawServer([(200, body, JSON)]).running() as server:
        trajectory, _ = await run_core(server.url, dict(FAST), task_id="hello-file")
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert "arguments.content holds a lone UTF-16 surrogate" in (trajectory.error or "")


def _completion(
    message: dict[str, Any], usage: dict[str, Any] | None = None, *, unescape: bool = True
) -> str:
    """A chat completion's JSON; ``unescape``: each ``\\\\udcff`` there becomes the escape
    of a lone surrogate (else it stays an escaped escape, e.g. inside a call's arguments)."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    text = json.dumps(body)
    return text.replace("\\\\udcff", "\\udcff") if unescape else text


def _raw(body: str) -> ScriptedReply:
    return ScriptedReply(error=ScriptedError(200, body=body, times=99))


def test_a_lone_surrogate_through_the_openai_adapter_is_an_agent_error_and_the_run_completes(
    tmp_path: Path,
) -> None:
    reply = _raw(_completion({"role": "assistant", "content": "done \\udcff"}))
    with ModelServer([reply]) as server:
        summary = _run_suite(tmp_path, "openai:gpt-4o", provider_options(server, "openai"))
    assert summary["episodes"]["finished"] == 2 and summary["episodes"]["infra_errors"] == 0
    for record in _stored(tmp_path).values():
        assert record.score.termination is Termination.AGENT_ERROR
        error = record.trajectory.error or ""
        assert "the reply of openai:gpt-4o: content holds a lone UTF-16 surrogate" in error


@pytest.mark.parametrize(
    ("unescape", "said"),
    [
        (False, "turn.tool_calls[0].arguments.content holds a lone UTF-16 surrogate"),
        (True, "the reply of openai:gpt-4o: tool_calls[0].arguments holds a lone UTF-16"),
    ],
)
async def test_a_surrogate_in_write_file_arguments_from_a_model_is_an_agent_error(
    unescape: bool, said: str
) -> None:
    # The escape inside the arguments' JSON text, or the arguments text itself holding one.
    arguments = '{"path": "/workspace/data/hello.txt", "content": "Hello \\udcff"}'
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "write_file", "arguments": arguments},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    with ModelServer([_raw(_completion(message, unescape=unescape))]) as server:
        options = provider_options(server, "openai")
        trajectory, _ = await run_core("openai:gpt-4o", options, task_id="hello-file")
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert said in (trajectory.error or ""), trajectory.error


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ({"prompt_tokens": -5, "completion_tokens": 1}, "usage.prompt_tokens must be from 0"),
        ({"prompt_tokens": 1, "completion_tokens": 1e30}, "usage.completion_tokens must be"),
        ({"prompt_tokens": 1.5, "completion_tokens": 1}, "must be a whole number"),
    ],
)
async def test_bad_token_counts_from_a_model_are_agent_errors(
    usage: dict[str, Any], said: str, tmp_path: Path
) -> None:
    reply = _raw(_completion({"role": "assistant", "content": "42"}, usage))
    with ModelServer([reply]) as server:
        options = provider_options(server, "openai", cache=str(tmp_path / "cache"))
        trajectory, _ = await run_core("openai:gpt-4o", options)
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert said in (trajectory.error or ""), trajectory.error
    assert not list((tmp_path / "cache").rglob("*.json"))  # a refused reply is never cached


async def test_a_lone_surrogate_through_the_anthropic_adapter_is_an_agent_error() -> None:
    body = json.dumps(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "content": [{"type": "text", "text": "done \\udcff"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 1, "cache_read_input_tokens": -2},
        }
    ).replace("\\\\udcff", "\\udcff")
    with ModelServer([_raw(body)]) as server:
        options = provider_options(server, "anthropic")
        trajectory, _ = await run_core("anthropic:claude-sonnet-4-5", options)
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert "usage.cache_read_input_tokens must be from 0" in (trajectory.error or "")


def test_checked_reply_names_the_field() -> None:
    good = ModelReply(content="ok", tool_calls=[ReplyCall(id="c", name="f", arguments="{}")])
    assert checked_reply(good, "m") is good
    cases = [
        (ModelReply(content="a\udcff"), "the reply of m: content"),
        (ModelReply(tool_calls=[ReplyCall(name="f\ud800")]), "tool_calls[0].name"),
        (ModelReply(tool_calls=[ReplyCall(name="f", arguments="\udcff")]), "[0].arguments"),
        (ModelReply(input_tokens=-1), "usage.input_tokens"),
        (ModelReply(cost_usd=float("inf")), "usage.cost_usd"),
        (ModelReply(tool_calls=[ReplyCall(name="f")] * 65), "the limit is 64 per turn"),
    ]
    for reply, said in cases:
        with pytest.raises(ReplyRefused, match=said.replace("[", r"\[").replace("]", r"\]")):
            checked_reply(reply, "m")


def test_a_count_the_gateway_cannot_take_is_estimated_not_stored() -> None:
    usage = PriceTable({}).usage("m", 10**30, -4, input_chars=40, output_chars=8)
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (10, 2, True)
