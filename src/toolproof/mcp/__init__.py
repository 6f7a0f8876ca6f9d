"""Serving one episode's tools over MCP, with the official ``mcp`` SDK (extra ``[mcp]``).

Map::

    ToolHost (an episode's ToolSession)
      └─ build_server(host, state) ─▶ mcp low-level Server     (_server)
           tools/list   the task's tools (JSON Schema as declared, read-only hints)
           tools/call   ─▶ host.call_tool ─▶ ToolGateway (validation, faults) ─▶ recorded step
           prompts      "task": the system prompt and the task
           submit_answer (optional) the outside client's final answer
      ├─ HttpEndpoint(server) ─▶ streamable HTTP on 127.0.0.1, on the episode's loop   (_http)
      ├─ serve_stdio(server)  ─▶ this process's stdin/stdout, stoppable at any time     (_stdio)
      └─ McpServeAgent          stdio or HTTP until the client is done                  (_serve)
    McpTask                     what an in-process MCP client agent gets: url, prompt  (_client)

Users: ``toolproof serve-mcp SUITE TASK`` (an outside client is the agent),
``cmd:"COMMAND"`` (a command-line agent gets ``TOOLPROOF_MCP_URL``) and
``mcp:module:attr`` (an async function gets an :class:`McpTask`). The SDK is
imported only when a server is built or a client connects.
"""

from ._client import McpTask
from ._http import HttpEndpoint
from ._serve import McpServeAgent, Transport
from ._server import ANSWER_TOOL, TASK_PROMPT, ServeState, ToolHost, build_server, task_text

__all__ = [
    "ANSWER_TOOL",
    "TASK_PROMPT",
    "HttpEndpoint",
    "McpServeAgent",
    "McpTask",
    "ServeState",
    "ToolHost",
    "Transport",
    "build_server",
    "task_text",
]
