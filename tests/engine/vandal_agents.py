"""A ``python:`` agent that vandalises every tool schema it is handed (test_shared_schemas)."""

from __future__ import annotations

from typing import Any

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.trajectory import ToolCall

SEEN: list[dict[str, Any]] = []
"""What each episode's agent was handed, as JSON, before it vandalised it."""


class Vandal:
    """Records its schemas, then edits them all (context and observation), then answers."""

    def __init__(self, ctx: EpisodeContext) -> None:
        SEEN.append({"ctx": [t.model_dump(mode="json") for t in ctx.tools], "epoch": ctx.epoch})
        for tool in ctx.tools:
            tool.parameters.clear()
            tool.parameters["vandal"] = ctx.epoch
        ctx.tools.clear()

    async def act(self, observation: Observation) -> AgentTurn:
        SEEN.append({"step": [t.model_dump(mode="json") for t in observation.tools]})
        for tool in observation.tools:
            tool.parameters.setdefault("properties", {})["vandal"] = {"type": "string"}
            tool.parameters["required"] = ["vandal"]
        observation.tools.append(observation.tools[0])
        if observation.step == 0:
            call = ToolCall(id="a", name="get_stock", arguments={"product_id": "A"})
            return AgentTurn(tool_calls=[call])
        return AgentTurn(content="done")
