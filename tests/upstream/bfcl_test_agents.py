"""Agents that send BFCL tasks hostile first turns, to test the whole pipeline."""

from __future__ import annotations

from typing import Any

from toolproof.agents import AgentTurn, Observation
from toolproof.trajectory import ToolCall


class _Once:
    def __init__(self, calls: list[ToolCall]) -> None:
        self._calls = calls

    async def act(self, observation: Observation) -> AgentTurn:
        if observation.step == 0:
            return AgentTurn(tool_calls=self._calls)
        return AgentTurn(content="done")


def wrong_type(ctx: Any) -> _Once:
    """Every argument of the first tool as a string nobody accepts (the gateway refuses it)."""
    tool = ctx.tools[0]  # the schema as the agent is offered it
    args = {name: "not-a-number" for name in tool.parameters.get("properties", {})}
    return _Once([ToolCall(id="c0", name=tool.name, arguments=args)])


def garbage(ctx: Any) -> _Once:
    """Arguments that are not JSON at all."""
    tool = ctx.tools[0]  # the schema as the agent is offered it
    return _Once([ToolCall(id="c0", name=tool.name, raw_arguments="{base: 10,")])


def invented(ctx: Any) -> _Once:
    """A call to a tool the task does not have."""
    return _Once([ToolCall(id="c0", name="rm_rf_everything", arguments={"path": "/"})])
