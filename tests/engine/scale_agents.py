"""Agents for tests/engine/test_scale.py, importable as ``python:scale_agents:...``."""

from __future__ import annotations

import asyncio

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.agents.builtin.oracle import OracleAgent


class HangsOnStockSum:
    """Plays the oracle, except that on ``stock-sum`` it never answers."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self._hang = ctx.instance.task.id == "stock-sum"
        self._oracle = OracleAgent(ctx)

    async def act(self, observation: Observation) -> AgentTurn:
        if self._hang:
            await asyncio.sleep(3600)
        return await self._oracle.act(observation)
