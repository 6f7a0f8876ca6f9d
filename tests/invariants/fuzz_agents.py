"""In-process agents that play a generated script of hostile turns (``python:fuzz_agents:NAME``).

A property sets :data:`SCRIPT` before each run; every episode's agent plays it from the
start. Values are put in with ``model_construct`` (no validation), as an agent that edits
its objects after making them could: the harness sees exactly the hostile values.
"""

from __future__ import annotations

from typing import Any

from toolproof.agents import AgentTurn, Observation, ToolSession
from toolproof.trajectory import ToolCall, Usage

SCRIPT: list[dict[str, Any]] = []
"""The turns to play: dicts of ``content``, ``calls`` [(name, arguments, id)], ``usage``
(input, output, cost), ``give_up``, ``retries``; for :class:`Driven`, also ``model_call``
and ``answer``."""


def _usage(numbers: tuple[Any, Any, Any] | None) -> Usage | None:
    if numbers is None:
        return None
    tokens_in, tokens_out, cost = numbers
    return Usage.model_construct(
        input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost, estimated=False
    )


def _calls(turn: dict[str, Any]) -> list[ToolCall]:
    return [
        ToolCall.model_construct(id=call_id, name=name, arguments=arguments, raw_arguments=None)
        for name, arguments, call_id in turn.get("calls", [])
    ]


class Scripted:
    """Harness-driven: each ``act`` returns the next scripted turn, then a plain answer."""

    def __init__(self) -> None:
        self.script = list(SCRIPT)

    async def act(self, observation: Observation) -> AgentTurn:
        if observation.step >= len(self.script):
            return AgentTurn(content="done")
        turn = self.script[observation.step]
        return AgentTurn.model_construct(
            content=turn.get("content"),
            tool_calls=_calls(turn),
            usage=_usage(turn.get("usage")),
            give_up=turn.get("give_up", False),
            retries=turn.get("retries", 0),
        )


class Driven:
    """Agent-driven: calls its tools, reports usage and model calls, answers as scripted."""

    def __init__(self) -> None:
        self.script = list(SCRIPT)

    async def run(self, session: ToolSession) -> Any:
        answer: Any = "done"
        for turn in self.script:
            for name, arguments, _ in turn.get("calls", []):
                await session.call_tool(name, arguments)
            usage = _usage(turn.get("usage"))
            if usage is not None:
                session.record_usage(usage)  # may refuse: the agent's error
            call = turn.get("model_call")
            record = getattr(session, "record_model_call", None)
            if call is not None and callable(record):
                record(call)
            answer = turn.get("answer", answer)
        return answer
