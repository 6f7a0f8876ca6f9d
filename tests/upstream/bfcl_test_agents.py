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


PLAYS: dict[str, list[list[list[tuple[str, dict[str, Any]]]]]] = {}
"""Multi-turn plays by task id (per user turn, per step, the calls), set by the test."""


class _Scripted:
    """Plays a multi-turn corpus entry: each user turn's steps, then a reply."""

    def __init__(self, play: list[list[list[tuple[str, dict[str, Any]]]]]) -> None:
        self._play = play

    async def act(self, observation: Observation) -> AgentTurn:
        roles = [m.role for m in observation.messages]
        turn = roles.count("user") - 1
        since = len(roles) - 1 - roles[::-1].index("user")
        step = roles[since:].count("assistant")
        steps = self._play[turn] if turn < len(self._play) else []
        if step >= len(steps):
            return AgentTurn(content="turn done")
        calls = [
            ToolCall(id=f"s{observation.step}_{n}", name=name, arguments=args)
            for n, (name, args) in enumerate(steps[step])
        ]
        return AgentTurn(tool_calls=calls)


def scripted(ctx: Any) -> _Scripted:
    """The play the test put in :data:`PLAYS` for this task."""
    return _Scripted(PLAYS[ctx.task_id])


class _Driven:
    async def run(self, session: Any) -> str:
        return "done"


def driven(ctx: Any) -> _Driven:
    """An agent that owns its loop (and so cannot take a second user turn)."""
    return _Driven()


class _HostileMulti:
    """Every kind of bad call on a BFCL backend world in the first turn, then replies."""

    async def act(self, observation: Observation) -> AgentTurn:
        if observation.step == 0:
            bad: list[tuple[str, dict[str, Any]]] = [
                ("open", {"file": "/etc/passwd"}),  # not a tool
                ("cd", {"folder": 123}),  # the schema refuses it
                ("mkdir", {"dir_name": "x", "__class__": 1}),  # the method refuses it
                ("cat", {"file_name": "../../../../etc/passwd"}),  # BFCL's own in-memory error
                ("sort", {"file_name": "x"}),  # held back until a later turn (miss_func)
            ]
            return AgentTurn(
                tool_calls=[
                    ToolCall(id=f"h{n}", name=name, arguments=args)
                    for n, (name, args) in enumerate(bad)
                ]
            )
        return AgentTurn(content="done")


def hostile_multi(ctx: Any) -> _HostileMulti:
    """Bad calls on a multi-turn BFCL world."""
    return _HostileMulti()
