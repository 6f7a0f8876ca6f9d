"""A tiny MCP client agent with a fixed plan for the core task ``hello-file``.

It shows the two ways toolproof hands an MCP client its task:

* as a command-line agent::

      toolproof run core --task hello-file --agent 'cmd:python examples/mcp_client_agent.py'

  toolproof serves the task's tools at ``$TOOLPROOF_MCP_URL``, puts the task in
  ``$TOOLPROOF_PROMPT`` and takes what this prints as the final answer;

* in process::

      toolproof run core --task hello-file --agent mcp:mcp_client_agent:agent

  (from ``examples/``): toolproof calls ``agent(task)`` with the endpoint and the task.

The "model" is a regular expression: it reads the path and the text from the
task, then calls ``create_file`` and ``write_file``. Needs ``pip install 'toolproof[mcp]'``.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from typing import Any

PLAN = re.compile(r"Create the file (\S+) and write exactly this text into it:\s*(.+)", re.S)


async def solve(session: Any, prompt: str) -> str:
    """Follow the plan with an initialized ``mcp.ClientSession``; return the answer."""
    match = PLAN.search(" ".join(prompt.split()))
    if match is None:
        return "I only know how to create a file with a given text."
    path, text = match.group(1), match.group(2).strip()
    listed = await session.list_tools()
    names = {tool.name for tool in listed.tools}
    if not {"create_file", "write_file"} <= names:
        return f"I need create_file and write_file, but the tools are {sorted(names)}."
    for name, arguments in (
        ("create_file", {"path": path}),
        ("write_file", {"path": path, "content": text}),
    ):
        result = await session.call_tool(name, arguments)
        if result.is_error:
            return f"{name} failed: {result.content[0].text}"
    return f"Created {path} with the text."


async def agent(task: Any) -> str:
    """The ``mcp:`` entry point: ``task`` is a ``toolproof.mcp.McpTask``."""
    async with task.connect() as session:
        return await solve(session, task.prompt)


async def main() -> str:
    """The ``cmd:`` entry point: the endpoint and the task come from the environment."""
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    url = os.environ["TOOLPROOF_MCP_URL"]
    prompt = os.environ["TOOLPROOF_PROMPT"]
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await solve(session, prompt)


if __name__ == "__main__":
    if "TOOLPROOF_MCP_URL" not in os.environ:
        sys.exit("run me through toolproof: --agent 'cmd:python examples/mcp_client_agent.py'")
    print(asyncio.run(main()))
