"""Serving an episode to an outside MCP client until it is done.

:class:`McpServeAgent` is an agent-driven agent whose "agent" is whoever
connects: a desktop assistant, a coding agent, a test with the SDK's client.
It serves the episode's tools (stdio or streamable HTTP) and returns when the
client is done:

* stdio: the client closes the server's stdin (it exits or disconnects);
* HTTP: the client ends its session (the SDK clients send a DELETE on close);
* either: the client calls ``submit_answer`` (when offered), a tool call
  crashed the harness, the host is asked to stop (SIGINT/SIGTERM when
  ``stop_on_signal``), or the episode's time limit passes (the engine cancels it).

With ``ready`` set it writes one JSON line once a client can connect (the HTTP
server is listening, or stdio is being read), for scripts and supervisors that
start the server and must know when and where to connect::

    {"event": "ready", "transport": "http", "url": "http://127.0.0.1:43121/mcp",
     "host": "127.0.0.1", "port": 43121, "tools": ["read_file", ...]}
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Awaitable, Iterator
from typing import Literal, TextIO

from ._http import HttpEndpoint
from ._server import ANSWER_TOOL, TASK_PROMPT, ServeState, ToolHost, build_server, task_text
from ._stdio import serve_stdio

Transport = Literal["stdio", "http"]

LINGER_S = 0.5
"""Seconds the server keeps serving after the last call, so its answer reaches the client."""


@contextlib.contextmanager
def _signals_set(event: asyncio.Event, enabled: bool) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM set ``event`` instead of stopping the process."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []
    if enabled:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, event.set)
                installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


async def _first(*waits: Awaitable[object]) -> None:
    """Wait until the first of ``waits`` finishes; cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in done:
            task.result()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _lingering(event: asyncio.Event) -> None:
    """Wait for ``event``, then a little longer (it is set before the call is answered)."""
    await event.wait()
    await asyncio.sleep(LINGER_S)


class McpServeAgent:
    """Serves one episode's tools over MCP to a client outside toolproof.

    Args:
        transport: ``stdio`` (this process's stdin/stdout) or ``http``.
        host: HTTP interface (keep it local: the tools are not authenticated).
        port: HTTP port; 0 picks a free one (the URL is announced).
        answer_tool: Offer ``submit_answer``, the client's way to give a final answer.
        stop_on_signal: SIGINT/SIGTERM end the session (and the episode is scored).
        announce: Where to tell a person what is served and where (None: nowhere).
        ready: Where to write the one JSON ready line (None: nowhere); see the module.
    """

    def __init__(
        self,
        transport: Transport = "http",
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        answer_tool: bool = False,
        stop_on_signal: bool = False,
        announce: TextIO | None = None,
        ready: TextIO | None = None,
    ) -> None:
        self.transport = transport
        self.host = host
        self.port = port
        self.answer_tool = answer_tool
        self.stop_on_signal = stop_on_signal
        self.announce = announce
        self.ready = ready

    def _say(self, text: str) -> None:
        if self.announce is not None:
            print(text, file=self.announce, flush=True)

    def _ready(self, names: list[str], url: str | None = None, port: int | None = None) -> None:
        if self.ready is None:
            return
        line: dict[str, object] = {"event": "ready", "transport": self.transport}
        if url is not None:
            line.update(url=url, host=self.host, port=port)
        line["tools"] = names
        print(json.dumps(line), file=self.ready, flush=True)

    async def run(self, session: ToolHost) -> str:
        """Serve until the client is done; return the answer it handed in (or "")."""
        state = ServeState()
        stop = asyncio.Event()
        hint = f" Hand in your answer with the tool {ANSWER_TOOL!r}." if self.answer_tool else ""
        server = build_server(
            session,
            state,
            answer_tool=self.answer_tool,
            instructions=f"{task_text(session)}\n\n(The task is also the MCP prompt "
            f"{TASK_PROMPT!r}.){hint}",
        )
        tools = [t.name for t in session.tools]
        if self.answer_tool and ANSWER_TOOL not in tools:  # a typed answer already offers it
            tools.append(ANSWER_TOOL)
        names = ", ".join(tools)
        with _signals_set(stop, self.stop_on_signal):
            if self.transport == "stdio":
                self._say(f"toolproof: serving tools [{names}] over MCP on stdio")
                self._ready(tools)
                await _first(serve_stdio(server), _lingering(state.done), stop.wait())
            else:
                async with HttpEndpoint(server, host=self.host, port=self.port) as endpoint:
                    self._say(f"toolproof: serving tools [{names}] over MCP at {endpoint.url}")
                    self._ready(tools, endpoint.url, endpoint.port)  # it listens already
                    await _first(endpoint.session_ended.wait(), _lingering(state.done), stop.wait())
        if state.crash is not None:
            raise state.crash
        return state.answer or ""
