"""Agents and factories that block, for ``tests/engine/test_no_stalls.py``.

Importable as ``python:stall_agents:NAME`` once this directory is on ``sys.path``.
"""

from __future__ import annotations

import threading
from typing import Any

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.trajectory import ToolCall

RELEASE = threading.Event()
"""Set by the test once the other episodes are stored; blocked code waits for it till then."""
HOLD_S = 30.0
"""The longest blocked code holds its thread when the test never releases it."""
TARGET = "held"
SLEEP = "sleep 59.25"
"""The command :class:`RunsSleep` runs: a distinct argv, to find the process in /proc."""


class LooksUpStock:
    """Looks up product A with ``get_stock`` and answers with what it read (the test tasks)."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.asked = False

    async def act(self, observation: Observation) -> AgentTurn:
        if not self.asked:
            self.asked = True
            call = ToolCall(id="c0", name="get_stock", arguments={"product_id": "A"})
            return AgentTurn(tool_calls=[call])
        return AgentTurn(content=f"There are {observation.messages[-1].content} units.")


def factory_blocks(ctx: EpisodeContext) -> Any:
    """A factory that blocks its thread (like a slow model load) on the target task."""
    if ctx.task_id == TARGET:
        RELEASE.wait(HOLD_S)
    return LooksUpStock(ctx)


class RunsSleep:
    """Runs a long ``sleep`` with ``run_command``, then gives up."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.asked = False

    async def act(self, observation: Observation) -> AgentTurn:
        if self.asked:
            return AgentTurn(content="done", give_up=True)
        self.asked = True
        return AgentTurn(
            tool_calls=[ToolCall(id="c0", name="run_command", arguments={"command": SLEEP})]
        )


def check_blocks(ctx: Any) -> bool:
    """A custom check (``stall_agents:check_blocks``) that blocks until released."""
    RELEASE.wait(HOLD_S)
    return True
