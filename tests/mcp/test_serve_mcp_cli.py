"""``toolproof serve-mcp``: an outside MCP client (the official SDK's) drives a core task.

The server runs as its own process, as a client would start it; each test then
reads the run directory it recorded: the calls as steps, and the final state scored.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from toolproof.results import EpisodeRecord, RunReader

CLI = [sys.executable, "-c", "from toolproof.cli import main; main()", "serve-mcp"]
PATH = "/workspace/data/hello.txt"
HELLO = "Hello, AgentBench!"


def recorded(run_dir: Path, within_s: float = 20.0) -> EpisodeRecord:
    """The one episode stored in run_dir, once the server has written it."""
    deadline = time.monotonic() + within_s
    while not (run_dir / "summary.json").exists():
        assert time.monotonic() < deadline, f"no summary.json in {run_dir}"
        time.sleep(0.05)
    with RunReader(run_dir) as reader:
        (record,) = reader.records()
    return record


def environment() -> dict[str, str]:
    return {**os.environ, "TOOLPROOF_NO_PLUGINS": "1"}


async def test_stdio_client_completes_hello_file(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    params = StdioServerParameters(
        command=CLI[0], args=[*CLI[1:], "core", "hello-file", "--record", str(run_dir)],
        env=environment(),
    )  # fmt: skip
    errlog = (tmp_path / "stderr").open("w+")
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        prompt = await session.get_prompt("task")
        await session.call_tool("create_file", {"path": PATH})
        refused = await session.call_tool("write_file", {"path": PATH})  # no content
        await session.call_tool("write_file", {"path": PATH, "content": HELLO})
    assert {t.name for t in listed.tools} == {
        "create_file",
        "write_file",
        "read_file",
        "list_files",
    }
    errlog.seek(0)
    ready = [json.loads(line) for line in errlog if line.startswith("{")]
    errlog.close()
    # The ready line goes to stderr under stdio (stdout is the protocol's): no url, no port.
    assert ready == [
        {"event": "ready", "transport": "stdio", "tools": [t.name for t in listed.tools]}
    ]
    assert HELLO in str(prompt.messages[0].content)
    assert refused.is_error
    record = recorded(run_dir)
    assert record.score.passed
    assert record.agent == "mcp-serve:stdio"
    calls = record.trajectory.tool_calls()
    assert [(c.name, sorted(c.arguments)) for c, _ in calls] == [
        ("create_file", ["path"]),
        ("write_file", ["path"]),
        ("write_file", ["content", "path"]),
    ]
    assert [r.error_kind if r else None for _, r in calls] == [None, "invalid_arguments", None]


async def test_stdio_answer_tool_ends_the_episode_while_the_client_is_connected(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    args = ["core", "stock-sum", "--answer-tool", "--record", str(run_dir)]
    params = StdioServerParameters(command=CLI[0], args=[*CLI[1:], *args], env=environment())
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.call_tool("get_stock", {"product_id": "A"})
        done = await session.call_tool("submit_answer", {"answer": 42})  # typed: an integer
        record = recorded(run_dir)  # stored before this client lets go of the server
    assert not done.is_error
    assert record.trajectory.final_answer == "42"
    # a typed answer is the recorded submit_answer call scoring reads
    assert [c.name for c, _ in record.trajectory.tool_calls()] == ["get_stock", "submit_answer"]
    assert not record.score.passed  # it never looked up B nor calculated


async def _ready_line(stderr: asyncio.StreamReader, within_s: float = 30.0) -> dict[str, Any]:
    """The machine-readable ready line serve-mcp writes on stderr once a client can connect."""

    async def scan() -> dict[str, Any]:
        while line := (await stderr.readline()).decode():
            if line.startswith("{"):
                ready: dict[str, Any] = json.loads(line)
                assert ready["event"] == "ready"
                return ready
        raise AssertionError("serve-mcp exited without its ready line")

    return await asyncio.wait_for(scan(), within_s)


def _announced_url(ready: dict[str, Any]) -> str:
    assert ready["transport"] == "http" and ready["host"] == "127.0.0.1"
    url: str = ready["url"]
    assert url == f"http://127.0.0.1:{ready['port']}/mcp" and ready["port"] > 0
    return url


async def test_http_client_answers_stock_sum_with_the_answer_tool(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = ["core", "stock-sum", "--transport", "http", "--answer-tool", "--record", str(run_dir)]
    proc = await asyncio.create_subprocess_exec(
        *CLI, *args, env=environment(), stderr=asyncio.subprocess.PIPE
    )
    assert proc.stderr is not None
    try:
        ready = await _ready_line(proc.stderr)
        url = _announced_url(ready)  # --port 0 (the default): the port it chose
        async with (
            streamable_http_client(url, terminate_on_close=False) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()  # at once: the line is out once a client can connect
            listed = [t.name for t in (await session.list_tools()).tools]
            assert ready["tools"] == listed  # what is served: the task's tools, submit_answer
            for product in ("A", "B"):
                await session.call_tool("get_stock", {"product_id": product})
            total = await session.call_tool("calculate", {"expression": "15 + 27"})
            done = await session.call_tool("submit_answer", {"answer": 42})  # typed: an integer
        assert not total.is_error and not done.is_error
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    record = recorded(run_dir)
    assert record.score.passed
    assert record.trajectory.final_answer == "42"
    assert [c.name for c, _ in record.trajectory.tool_calls()] == [
        "get_stock",
        "get_stock",
        "calculate",
        "submit_answer",
    ]


async def test_ctrl_c_ends_the_session_and_the_episode_is_still_scored(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    args = ["core", "hello-file", "--transport", "http", "--record", str(run_dir)]
    proc = await asyncio.create_subprocess_exec(
        *CLI, *args, env=environment(), stderr=asyncio.subprocess.PIPE
    )
    assert proc.stderr is not None
    try:
        _announced_url(await _ready_line(proc.stderr))
        proc.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    record = recorded(run_dir)
    assert record.trajectory.termination.value == "completed"
    assert record.trajectory.tool_calls() == []
    assert not record.score.passed


def test_an_unknown_task_is_a_clear_error(invoke: Callable[..., Any]) -> None:
    result = invoke("serve-mcp", "core", "no-such-task")
    assert result.code == 2
    assert "no task 'no-such-task'; tasks: " in result.err and "hello-file" in result.err
