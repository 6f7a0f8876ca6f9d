"""Agents for tests/engine/test_scale.py, importable as ``python:scale_agents:...``."""

from __future__ import annotations

import asyncio

from toolproof.agents import AgentTurn, EpisodeContext, Observation


class HangsOnStockSum:
    """Answers at once, except that on ``stock-sum`` it never answers.

    A ``python:`` agent is not given the answer key, so it cannot play the oracle.
    """

    def __init__(self, ctx: EpisodeContext) -> None:
        self._hang = ctx.task_id == "stock-sum"

    async def act(self, observation: Observation) -> AgentTurn:
        if self._hang:
            await asyncio.sleep(3600)
        return AgentTurn(content="done")
