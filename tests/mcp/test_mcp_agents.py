"""MCP client agents: ``mcp:module:function`` in process, and ``mcp-serve`` for outside clients."""

from __future__ import annotations

import asyncio
import functools
import io
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.mcp import McpServeAgent, McpTask
from toolproof.results import EpisodeRecord
from toolproof.spec import SpecError, Suite, load_suite, resolve_suite_path
from toolproof.trajectory import Termination, ToolResult, ToolSchema, Usage

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(
    agent: str, options: dict[str, Any] | None = None, task: str = "hello-file"
) -> EpisodeRecord:
    """Run one episode of a core task, as `toolproof run` would."""
    config = RunConfig(
        suite=str(core().root), agent=agent, agent_options=options or {}, tasks=[task]
    )
    return await Worker(config, None, core()).run(EpisodeJob(task, 0))


async def test_the_example_as_an_in_process_mcp_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    record = await run_task("mcp:mcp_client_agent:agent")
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed
    assert [call.name for call, _ in trajectory.tool_calls()] == ["create_file", "write_file"]
    assert trajectory.final_answer == "Created /workspace/data/hello.txt with the text."


async def lists_tools(task: McpTask) -> str:
    async with task.connect() as session:
        listed = await session.list_tools()
    return f"{task.options} {sorted(tool.name for tool in listed.tools)}"


async def returns_a_number(task: McpTask) -> Any:
    return 42


def not_async(task: McpTask) -> str:
    return "no"


async def test_the_function_gets_the_options_and_must_return_text() -> None:
    record = await run_task(f"mcp:{__name__}:lists_tools", {"temperature": 0})
    options, _, tools = (record.trajectory.final_answer or "").partition("} ")
    assert tools == "['create_file', 'list_files', 'read_file', 'write_file']"
    assert options.startswith("{'temperature': 0, 'base_url': 'http://127.0.0.1:")
    assert options.endswith("/openai/v1', 'api_key': 'toolproof-gateway', 'provider': 'openai'")
    record = await run_task(f"mcp:{__name__}:returns_a_number")
    assert record.trajectory.termination is Termination.AGENT_ERROR
    assert "returned int, not the answer text" in (record.trajectory.error or "")


def test_spec_errors_name_the_fix() -> None:
    with pytest.raises(SpecError, match="need a function"):
        build_agent(parse_agent_spec("mcp"))
    with pytest.raises(SpecError, match="must be an async function"):
        build_agent(parse_agent_spec(f"mcp:{__name__}:not_async"))
    with pytest.raises(SpecError, match="'stdio' or 'http', not 'sse'"):
        build_agent(parse_agent_spec("mcp-serve:sse"))
    with pytest.raises(SpecError, match="no option 'transport'"):
        build_agent(parse_agent_spec("mcp-serve:http", {"transport": "x"}))


class Host:
    system_prompt = ""
    prompt = "Say hi."
    tools = [ToolSchema(name="hi", description="Say hi.", parameters={"type": "object"})]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(call_id="c", name=name, content="hi")

    def record_usage(self, usage: Usage) -> None:
        pass


async def _url(announced: io.StringIO, within_s: float = 10.0) -> str:
    for _ in range(int(within_s / 0.01)):
        if " at http://" in announced.getvalue():
            return announced.getvalue().rsplit(" at ", 1)[1].strip()
        await asyncio.sleep(0.01)
    raise AssertionError("the agent never announced its URL")


async def test_serving_ends_when_the_client_ends_its_session() -> None:
    announced = io.StringIO()
    serving = asyncio.ensure_future(McpServeAgent("http", announce=announced).run(Host()))
    url = await _url(announced)
    assert "serving tools [hi] over MCP at" in announced.getvalue()
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("hi", {})
        assert not result.is_error
        assert not serving.done()
    assert await asyncio.wait_for(serving, 10) == ""


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def openai_loop(task: McpTask) -> str:
    """A real tool loop: the official openai SDK (through task.options) and the MCP tools."""
    import openai

    opts = task.options
    client = openai.AsyncOpenAI(base_url=opts["base_url"], api_key=opts["api_key"], max_retries=0)
    async with client, task.connect() as session:
        listed = (await session.list_tools()).tools
        tools: Any = [
            {"type": "function", "function": {"name": t.name, "parameters": t.input_schema}}
            for t in listed
        ]
        messages: list[Any] = [{"role": "user", "content": task.prompt}]
        while True:
            reply = await client.chat.completions.create(
                model=opts["model"], messages=messages, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = await session.call_tool(
                    call.function.name, json.loads(call.function.arguments)
                )
                messages.append({"role": "tool", "tool_call_id": call.id, "content": _text(result)})


async def anthropic_loop(task: McpTask) -> str:
    """The same loop on the official anthropic SDK."""
    import anthropic

    opts = task.options
    client = anthropic.AsyncAnthropic(
        base_url=opts["base_url"], api_key=opts["api_key"], max_retries=0
    )
    async with client, task.connect() as session:
        listed = (await session.list_tools()).tools
        tools: Any = [{"name": t.name, "input_schema": t.input_schema} for t in listed]
        messages: list[Any] = [{"role": "user", "content": task.prompt}]
        while True:
            reply = await client.messages.create(
                model=opts["model"], max_tokens=512, messages=messages, tools=tools
            )
            uses = [block for block in reply.content if block.type == "tool_use"]
            if not uses:
                return "".join(b.text for b in reply.content if b.type == "text")
            messages.append({"role": "assistant", "content": [b.model_dump() for b in uses]})
            results = []
            for use in uses:
                result = await session.call_tool(use.name, dict(use.input))
                results.append(
                    {"type": "tool_result", "tool_use_id": use.id, "content": _text(result)}
                )
            messages.append({"role": "user", "content": results})


@pytest.mark.parametrize(
    ("provider", "model", "prices"),
    [("openai", "gpt-4o-mini", (0.15, 0.6)), ("anthropic", "claude-haiku-4-5", (1.0, 5.0))],
)
async def test_an_mcp_agents_model_calls_are_recorded_priced_and_cached(
    provider: str, model: str, prices: tuple[float, float], tmp_path: Path
) -> None:
    pytest.importorskip(provider)
    from toolproof.testing import ModelServer, sequence_policy
    from toolproof_helpers import STOCK_SUM_PRICED

    agent = f"mcp:{__name__}:{provider}_loop"
    options = {"provider": provider, "model": model, "cache": str(tmp_path / "cache")}
    url = "anthropic_base_url" if provider == "anthropic" else "base_url"
    with ModelServer(sequence_policy(STOCK_SUM_PRICED)) as server:
        first = await run_task(
            agent, {**options, "api_key": "sk-real", "base_url": getattr(server, url)}, "stock-sum"
        )
        assert server.calls == 3, first.trajectory.error
        assert all(r.model == model for r in server.chat_requests)
    trajectory = first.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert first.score.passed_loose
    assert [c.name for c, _ in trajectory.tool_calls()] == ["get_stock", "get_stock", "calculate"]
    usage = trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (380, 42, False)
    assert usage.cost_usd == pytest.approx((380 * prices[0] + 42 * prices[1]) / 1e6)
    listed = [c for s in trajectory.steps for c in s.annotations.get("model_calls", [])]
    assert [(c["api"], c["model"], c["cached"]) for c in listed] == [(provider, model, False)] * 3
    with ModelServer([]) as empty:  # --cache: the rerun calls no provider
        again = await run_task(
            agent, {**options, "api_key": "sk-real", "base_url": getattr(empty, url)}, "stock-sum"
        )
        assert empty.calls == 0
    assert again.trajectory.termination is Termination.COMPLETED, again.trajectory.error
    assert again.score == first.score
    assert again.trajectory.usage() == usage
    assert again.trajectory.final_answer == trajectory.final_answer


async def shows_options(task: McpTask) -> str:
    return json.dumps(task.options, sort_keys=True)


async def test_an_mcp_agent_never_sees_the_real_key_the_provider_or_the_cache(
    tmp_path: Path,
) -> None:
    secret = {"api_key": "sk-real-secret", "base_url": "https://provider.example/v1"}
    options = {**secret, "cache": str(tmp_path), "prices": "", "max_model_calls": 2}
    record = await run_task(f"mcp:{__name__}:shows_options", options)
    seen = json.loads(record.trajectory.final_answer or "{}")
    assert seen["api_key"] == "toolproof-gateway"
    assert seen["base_url"].startswith("http://127.0.0.1:")
    assert not {"cache", "prices", "max_model_calls"} & set(seen)
    assert "sk-real-secret" not in json.dumps(seen) and "provider.example" not in json.dumps(seen)


@pytest.mark.parametrize(
    ("option", "flag"),
    [("cache", "--cache"), ("model", "--model"), ("api_key", "--agent-arg api_key")],
)
def test_mcp_serve_refuses_model_settings_naming_the_flag(option: str, flag: str) -> None:
    with pytest.raises(SpecError, match=f"{flag}.*never pass through toolproof.*drop {flag}"):
        build_agent(parse_agent_spec("mcp-serve:http", {option: "x"}))
