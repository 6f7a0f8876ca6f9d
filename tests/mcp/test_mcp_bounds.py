"""An MCP endpoint is bounded per episode, and tool-call arguments pass the ingress.

Over real HTTP on loopback: a flood of ``initialize`` requests (each opening a session)
cannot grow the harness past :data:`MAX_SESSIONS` sessions, and is answered with the SDK's
JSON-RPC error; a flood of idle connections cannot hold more than :data:`MAX_CONNECTIONS`
open. Arguments that are not plain bounded JSON (nested too deep, a lone surrogate escape)
are the agent's error, answered as an ``isError`` result, and never reach the host.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from toolproof.mcp import HttpEndpoint, ServeState, build_server
from toolproof.mcp._http import MAX_CONNECTIONS, MAX_SESSIONS
from toolproof.trajectory import ToolResult, ToolSchema, Usage

LOOKUP = ToolSchema(
    name="lookup",
    description="Look a key up.",
    parameters={"type": "object", "properties": {"key": {}}, "required": ["key"]},
)
HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "flood", "version": "1"},
    },
}


class Host:
    """A ToolSession stand-in that records the calls that reach it."""

    system_prompt = ""
    prompt = "Look up 'a'."
    tools = [LOOKUP]

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        self.calls.append((name, arguments))
        return ToolResult(call_id="c", name=name, content=f"{name} ok")

    def record_usage(self, usage: Usage) -> None:
        pass


def text(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


async def test_repeated_initialize_is_capped_per_episode_with_a_json_rpc_error() -> None:
    host = Host()
    async with HttpEndpoint(build_server(host, ServeState())) as endpoint:
        async with httpx.AsyncClient(timeout=30) as client:
            answers = [
                await client.post(endpoint.url, json=INITIALIZE, headers=HEADERS)
                for _ in range(MAX_SESSIONS + 40)
            ]
            opened = [a.headers["mcp-session-id"] for a in answers if a.status_code == 200]
            refused = [a for a in answers if a.status_code != 200]
            assert len(opened) == MAX_SESSIONS
            assert {a.status_code for a in refused} == {503}
            error = json.loads(refused[0].text)
            assert error["jsonrpc"] == "2.0" and "sessions" in error["error"]["message"]
            # Ending a session makes room for a new one.
            ended = await client.delete(
                endpoint.url, headers={**HEADERS, "mcp-session-id": opened[0]}
            )
            assert ended.status_code < 300
            again = await client.post(endpoint.url, json=INITIALIZE, headers=HEADERS)
            assert again.status_code == 200
        async with Client(endpoint.url) as sdk:  # the stateless revision needs no session
            served = await sdk.call_tool("lookup", {"key": "a"})
    assert text(served) == "lookup ok"


async def test_idle_connections_to_an_endpoint_stay_bounded() -> None:
    host = Host()
    opened: list[socket.socket] = []
    async with HttpEndpoint(build_server(host, ServeState())) as endpoint:
        try:
            for _ in range(MAX_CONNECTIONS * 3):
                opened.append(socket.create_connection(("127.0.0.1", endpoint.port), timeout=10))
            async with Client(endpoint.url) as sdk:  # served all the same
                served = await sdk.call_tool("lookup", {"key": "a"})
            await asyncio.sleep(0.2)
            closed = 0
            for sock in opened:
                sock.settimeout(0.0)
                try:
                    closed += sock.recv(1) == b""
                except BlockingIOError:
                    pass
                except OSError:
                    closed += 1
        finally:
            for sock in opened:
                sock.close()
    assert text(served) == "lookup ok"
    assert closed >= MAX_CONNECTIONS * 2  # the oldest idle connections were closed


def _nested(depth: int, value: Any = "leaf") -> Any:
    """``value`` inside ``depth`` lists."""
    for _ in range(depth):
        value = [value]
    return value


async def test_arguments_nested_too_deep_are_the_agents_error_and_never_run() -> None:
    host = Host()
    async with Client(build_server(host, ServeState())) as client:
        deep = await client.call_tool("lookup", {"key": _nested(60)})
        fine = await client.call_tool("lookup", {"key": _nested(5)})
        lone = await client.call_tool("lookup", {"key": "\udcff"})  # in memory: no parser
    assert deep.is_error and "nests deeper than" in text(deep)
    assert lone.is_error and "lone UTF-16 surrogate" in text(lone)
    assert not fine.is_error
    assert host.calls == [("lookup", {"key": _nested(5)})]


async def test_a_lone_surrogate_escape_in_arguments_never_reaches_the_host() -> None:
    host = Host()
    async with HttpEndpoint(build_server(host, ServeState())) as endpoint:
        async with (
            streamable_http_client(endpoint.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            ok = await session.call_tool("lookup", {"key": "a"})
        async with httpx.AsyncClient(timeout=30) as client:
            init = await client.post(endpoint.url, json=INITIALIZE, headers=HEADERS)
            sid = init.headers["mcp-session-id"]
            session_headers = {
                **HEADERS,
                "mcp-session-id": sid,
                "mcp-protocol-version": "2025-06-18",
            }
            await client.post(
                endpoint.url,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers=session_headers,
            )
            raw = (
                b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": '
                b'{"name": "lookup", "arguments": {"key": "\\udcff"}}}'
            )
            answer = await client.post(endpoint.url, content=raw, headers=session_headers)
    assert not ok.is_error
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == -32700  # the SDK's parse error: the agent's
    assert host.calls == [("lookup", {"key": "a"})]  # the surrogate never reached the host


FUZZ = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "0") or 0)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=20,
)


@settings(max_examples=max(FUZZ, 60), derandomize=True, deadline=None)
@given(value=json_values, depth=st.integers(0, 50))
def test_property_arguments_reach_the_host_as_plain_json_or_are_refused(
    value: Any, depth: int
) -> None:
    arguments = {"key": _nested(depth, value)}

    async def call() -> tuple[Host, Any]:
        host = Host()
        async with Client(build_server(host, ServeState())) as client:
            return host, await client.call_tool("lookup", arguments)

    host, result = asyncio.run(call())
    if result.is_error:
        assert host.calls == []
        assert text(result).startswith("error: arguments")
    else:
        ((name, seen),) = host.calls
        assert name == "lookup"
        assert json.loads(json.dumps(seen)) == seen  # plain JSON data, nothing else
