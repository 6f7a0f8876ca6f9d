"""MCP client agents: ``mcp:module:function`` in process, and ``mcp-serve`` for outside clients."""

from __future__ import annotations

import asyncio
import functools
import io
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
    assert record.trajectory.final_answer == (
        "{'temperature': 0} ['create_file', 'list_files', 'read_file', 'write_file']"
    )
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
