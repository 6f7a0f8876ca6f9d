"""What an in-process MCP client agent (``mcp:module:attr``) is handed: the task and an endpoint."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mcp.client.session import ClientSession


@dataclass(frozen=True)
class McpTask:
    """One episode, as an MCP client agent sees it.

    The episode's tools are served over streamable HTTP at ``url`` for as long
    as the agent runs; every call through it is validated and recorded.

    Attributes:
        url: The MCP endpoint (``http://127.0.0.1:PORT/mcp``), for any MCP client
            (the SDK's, an agent framework's MCP adapter, ...).
        prompt: The task.
        system_prompt: The suite's system prompt.
        options: The ``--agent-arg`` options of the run, with the model settings:
            ``base_url`` (the episode's model gateway path), ``api_key`` (a placeholder),
            ``provider`` and ``model``; never the real key, ``cache`` or ``prices``.
    """

    url: str
    prompt: str
    system_prompt: str
    options: dict[str, Any] = field(default_factory=dict)

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncIterator[ClientSession]:
        """An initialized ``mcp.ClientSession`` on the endpoint, closed on exit.

        Example::

            async with task.connect() as session:
                listed = await session.list_tools()
                result = await session.call_tool("read_file", {"path": "notes.txt"})
        """
        from mcp.client.session import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        async with (
            streamable_http_client(self.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session
