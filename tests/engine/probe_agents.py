"""A blind agent that pokes at every tool, for tests/engine/test_determinism.py.

Importable as ``python:probe_agents:Prober`` once this directory is on ``sys.path``.
It uses only what any agent is handed (the context's tool schemas and the results),
and records every observation exactly as it was handed over, in :data:`SEEN`.

It lists with ``ls -l``, not ``ls -la``: inside bwrap the sandbox's own ``/`` is a
tmpfs made when the command starts, so ``..`` of ``/workspace`` shows that time (a
known leak of the sandbox backend, not of the world or the tools).
"""

from __future__ import annotations

from typing import Any

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.trajectory import ToolCall, ToolSchema

SEEN: dict[str, list[str]] = {}
"""By ``task_id#epoch``: the JSON of each observation the prober was given, in order."""

COMMANDS = (
    "pwd; echo $HOME $TMPDIR $WORKSPACE; ls -l | head -8",  # -a: see the module docstring
    "cat /workspace/no-such-file; ls /no/such/dir; exit 3",
    "ls /tmp | wc -l; python3 -c 'import sys; sys.exit(\"boom\")'",
)
"""Commands that read the environment and fail in the usual ways (their output is the test)."""


def _calls(step: int, tools: list[ToolSchema]) -> list[ToolCall]:
    names = {t.name for t in tools}
    calls: list[dict[str, Any]] = []
    if step == 0:
        calls += [{"name": t.name, "arguments": {}} for t in sorted(tools, key=lambda t: t.name)]
        calls.append({"name": "no_such_tool", "arguments": {"x": 1}})
    elif step == 1 and "run_command" in names:
        calls += [{"name": "run_command", "arguments": {"command": c}} for c in COMMANDS]
    elif step == 2 and "read_output" in names:
        calls.append({"name": "read_output", "arguments": {"output_id": "o1", "stream": "stderr"}})
        calls.append({"name": "read_output", "arguments": {"output_id": "o99"}})
    elif step == 3 and "read_file" in names:
        for path in ("/workspace/missing.txt", "../../etc/passwd", "/workspace"):
            calls.append({"name": "read_file", "arguments": {"path": path}})
    return [
        ToolCall(id=f"p{step}_{n}", name=c["name"], arguments=c["arguments"])
        for n, c in enumerate(calls)
    ]


class Prober:
    """Calls every tool with no arguments, runs failing commands, reads errors; answers."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self._key = f"{ctx.task_id}#{ctx.epoch}"
        self._tools = ctx.tools
        self._phase = 0
        SEEN[self._key] = [ctx.system_prompt, ctx.prompt]

    async def act(self, observation: Observation) -> AgentTurn:
        """The probes of this step, or the answer after four steps."""
        SEEN[self._key].append(observation.model_dump_json())
        while self._phase < 4:
            calls = _calls(self._phase, self._tools)
            self._phase += 1
            if calls:
                return AgentTurn(tool_calls=calls)
        return AgentTurn(content="probed")
