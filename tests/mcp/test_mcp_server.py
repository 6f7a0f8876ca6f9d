"""The MCP server over an episode's tools, driven by the official SDK's client."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent

from toolproof.mcp import ANSWER_TOOL, HttpEndpoint, ServeState, build_server
from toolproof.trajectory import ToolKind, ToolResult, ToolSchema, Usage

LOOKUP = ToolSchema(
    name="lookup",
    description="Look a key up.",
    parameters={
        "type": "object",
        "properties": {"key": {"type": "string", "description": "The key."}},
        "required": ["key"],
        "additionalProperties": False,
    },
)
STORE = ToolSchema(
    name="store",
    description="Store a value.",
    parameters={"type": "object", "properties": {"value": {"type": "integer"}}},
    kind=ToolKind.WRITE,
)


class Host:
    """A ToolSession stand-in that records calls; 'explode' crashes like a broken tool."""

    system_prompt = "You are careful."
    prompt = "Look up the key 'a'."

    def __init__(self, tools: list[ToolSchema] | None = None) -> None:
        self.tools = tools or [LOOKUP, STORE]
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        if arguments.get("key") == "explode":
            raise RuntimeError("the tool crashed")
        if arguments.get("key") == "missing":
            return ToolResult(call_id="c", name=name, content="error: no such key", is_error=True)
        return ToolResult(call_id="c", name=name, content=f"{name} ok")

    def record_usage(self, usage: Usage) -> None:
        pass


def text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_tools_are_offered_as_declared() -> None:
    async with Client(build_server(Host(), ServeState())) as client:
        listed = await client.list_tools()
    assert [tool.name for tool in listed.tools] == ["lookup", "store"]
    assert [tool.input_schema for tool in listed.tools] == [LOOKUP.parameters, STORE.parameters]
    assert [tool.description for tool in listed.tools] == ["Look a key up.", "Store a value."]
    hints = [tool.annotations.read_only_hint for tool in listed.tools if tool.annotations]
    assert hints == [True, False]


async def test_calls_reach_the_host_and_errors_stay_errors() -> None:
    host = Host()
    async with Client(build_server(host, ServeState())) as client:
        ok = await client.call_tool("lookup", {"key": "a"})
        bad = await client.call_tool("lookup", {"key": "missing"})
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("nonexistent", {"x": 1})
    assert (text(ok), ok.is_error) == ("lookup ok", False)
    assert (text(bad), bad.is_error) == ("error: no such key", True)
    # The MCP spec: an unknown tool is a JSON-RPC error (-32602), not an isError result.
    assert unknown.value.code == -32602
    assert "Unknown tool: 'nonexistent'; tools: lookup, store" in unknown.value.message
    assert host.calls == [  # still recorded by the gateway: it counts as a bad call
        ("lookup", {"key": "a"}),
        ("lookup", {"key": "missing"}),
        ("nonexistent", {"x": 1}),
    ]


async def test_the_task_is_a_prompt() -> None:
    async with Client(build_server(Host(), ServeState())) as client:
        listed = await client.list_prompts()
        prompt = await client.get_prompt("task")
        with pytest.raises(MCPError, match="no prompt named 'other'"):
            await client.get_prompt("other")
    assert [p.name for p in listed.prompts] == ["task"]
    (message,) = prompt.messages
    assert isinstance(message.content, TextContent)
    assert message.content.text == "You are careful.\n\nLook up the key 'a'."


async def test_the_answer_tool_ends_the_session_with_an_answer() -> None:
    state = ServeState()
    host = Host()
    async with Client(build_server(host, state, answer_tool=True)) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert not state.done.is_set()
        result = await client.call_tool(ANSWER_TOOL, {"answer": "42"})
    assert names == ["lookup", "store", ANSWER_TOOL]
    assert not result.is_error
    assert state.done.is_set() and state.answer == "42"
    assert host.calls == []  # not a task tool: never reaches the gateway


async def test_a_typed_answer_tool_is_served_as_the_tasks_own() -> None:
    """A task with a typed answer offers its own submit_answer: served once, through the
    gateway (which checks the declared type), and a valid call ends the session."""
    state = ServeState()
    host = Host([LOOKUP.model_copy(update={"name": ANSWER_TOOL})])
    async with Client(build_server(host, state, answer_tool=True)) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        result = await client.call_tool(ANSWER_TOOL, {"key": "a"})
    assert names == [ANSWER_TOOL]
    assert not result.is_error
    assert host.calls == [(ANSWER_TOOL, {"key": "a"})]
    assert state.done.is_set()


async def test_a_crashing_tool_ends_the_session() -> None:
    state = ServeState()
    async with Client(build_server(Host(), state)) as client:
        result = await client.call_tool("lookup", {"key": "explode"})
    assert result.is_error and "the harness failed" in text(result)
    assert state.done.is_set()
    assert isinstance(state.crash, RuntimeError)


async def test_streamable_http_with_the_sdk_client_session() -> None:
    host = Host()
    async with HttpEndpoint(build_server(host, ServeState())) as endpoint:
        assert endpoint.url.startswith("http://127.0.0.1:") and endpoint.url.endswith("/mcp")
        async with (
            streamable_http_client(endpoint.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            listed = await session.list_tools()
            result = await session.call_tool("store", {"value": 3})
            assert not endpoint.session_ended.is_set()
        await asyncio.wait_for(endpoint.session_ended.wait(), 10)  # the client's DELETE
        async with Client(endpoint.url) as client:  # the stateless 2026 revision works too
            again = await client.call_tool("lookup", {"key": "b"})
    assert [tool.name for tool in listed.tools] == ["lookup", "store"]
    assert text(result) == "store ok" and text(again) == "lookup ok"
    assert host.calls == [("store", {"value": 3}), ("lookup", {"key": "b"})]


async def test_calls_after_the_answer_are_refused_and_never_run() -> None:
    state = ServeState()
    host = Host()
    async with Client(build_server(host, state, answer_tool=True)) as client:
        await client.call_tool("lookup", {"key": "a"})
        await client.call_tool(ANSWER_TOOL, {"answer": "42"})
        late = await client.call_tool("store", {"value": 1})
        again = await client.call_tool(ANSWER_TOOL, {"answer": "changed my mind"})
    assert late.is_error and "the episode is over (an answer was handed in)" in text(late)
    assert again.is_error
    assert state.answer == "42"  # the first answer stands
    assert host.calls == [("lookup", {"key": "a"})]  # the late call never reached the gateway


async def test_a_call_waiting_behind_the_answer_is_refused() -> None:
    """Concurrent requests: a call queued while the answer is handed in does not run after it."""
    state = ServeState()
    entered, release = asyncio.Event(), asyncio.Event()

    class SlowHost(Host):
        async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
            if name == "lookup":
                entered.set()
                await release.wait()
            return await super().call_tool(name, arguments)

    host = SlowHost()
    async with Client(build_server(host, state, answer_tool=True)) as client:
        slow = asyncio.ensure_future(client.call_tool("lookup", {"key": "a"}))
        await asyncio.wait_for(entered.wait(), 30)
        answer = asyncio.ensure_future(client.call_tool(ANSWER_TOOL, {"answer": "42"}))
        late = asyncio.ensure_future(client.call_tool("store", {"value": 1}))
        await asyncio.sleep(0.05)
        release.set()
        results = await asyncio.gather(slow, answer, late)
    assert not results[0].is_error and not results[1].is_error
    assert results[2].is_error  # queued behind the answer: refused
    assert [name for name, _ in host.calls] == ["lookup"]


async def test_calls_after_a_crash_are_refused() -> None:
    state = ServeState()
    host = Host()
    async with Client(build_server(host, state)) as client:
        crashed = await client.call_tool("lookup", {"key": "explode"})
        late = await client.call_tool("lookup", {"key": "a"})
    assert crashed.is_error and late.is_error
    assert "the harness failed" in text(late)
    assert len(host.calls) == 1


async def test_an_oversized_request_body_is_refused_unread() -> None:
    import httpx

    from toolproof.mcp._http import MAX_BODY

    host = Host()
    async with HttpEndpoint(build_server(host, ServeState())) as endpoint:
        async with httpx.AsyncClient() as client:
            declared = await client.post(
                endpoint.url,
                content=b"x" * (MAX_BODY + 1),
                headers={"content-type": "application/json"},
            )
        async with Client(endpoint.url) as sdk:  # the endpoint still serves
            ok = await sdk.call_tool("lookup", {"key": "a"})
    assert declared.status_code == 413 and "request body over" in declared.text
    assert text(ok) == "lookup ok" and host.calls == [("lookup", {"key": "a"})]
