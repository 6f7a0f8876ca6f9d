"""In-process agents that attack the harness, for ``tests/engine/test_hostile_runs.py``.

Importable as ``python:hostile_agents:NAME`` once this directory is on ``sys.path``.
Each plays the oracle on every task but ``stock-sum``, where it misbehaves.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from toolproof.agents import AgentTurn, EpisodeContext, Observation
from toolproof.agents.builtin.oracle import OracleAgent
from toolproof.spec import Suite, TaskInstance, load_suite, render
from toolproof.trajectory import ToolCall

RELEASE = threading.Event()
"""Set by the test once every episode is stored; blocked agents wait for it till then."""
HOLD_S = 30.0
"""The longest a blocked agent holds its thread when the test never releases it."""
TARGET = "stock-sum"
SUITE: list[Suite] = []
"""The suite the test runs, loaded by the test: these agents are blind like any ``python:``
agent, so to play the reference they render the task themselves, as test code that holds
the suite's files may."""


def use_suite(root: str) -> None:
    """Load the suite the agents play (once, before the run: loading takes a while)."""
    SUITE[:] = [load_suite(root)]


def _instance(ctx: EpisodeContext) -> TaskInstance:
    suite = SUITE[0]
    return render(
        suite.task(ctx.task_id),
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=ctx.epoch,
        limits=suite.config.limits,
        system_prompt=suite.config.system_prompt,
    )


class _Base:
    def __init__(self, ctx: EpisodeContext) -> None:
        self.target = ctx.task_id == TARGET
        self.oracle = OracleAgent(_instance(ctx))


class SleepsInSyncAct(_Base):
    """A plain ``def act`` that blocks its thread (like ``time.sleep``) on the target."""

    def act(self, observation: Observation) -> Any:
        if self.target:
            RELEASE.wait(HOLD_S)
            time.sleep(0.01)
        return self.oracle.act(observation)  # a coroutine: awaited on the agent's loop


class SleepsInAsyncAct(_Base):
    """An ``async def act`` that blocks its event loop on the target."""

    async def act(self, observation: Observation) -> AgentTurn:
        if self.target:
            RELEASE.wait(HOLD_S)
        return await self.oracle.act(observation)


class SpinsInAsyncAct(_Base):
    """An ``async def act`` that spins the CPU on the target."""

    async def act(self, observation: Observation) -> AgentTurn:
        if self.target:
            deadline = time.monotonic() + HOLD_S
            while not RELEASE.is_set() and time.monotonic() < deadline:
                pass
        return await self.oracle.act(observation)


class ExitsOnTarget(_Base):
    """Raises ``SystemExit`` on the target."""

    async def act(self, observation: Observation) -> AgentTurn:
        if self.target:
            raise SystemExit("bye")
        return await self.oracle.act(observation)


class InterruptsOnTarget(_Base):
    """Raises ``KeyboardInterrupt`` on the target, from a plain ``def act``."""

    def act(self, observation: Observation) -> Any:
        if self.target:
            raise KeyboardInterrupt
        return self.oracle.act(observation)  # a coroutine: awaited on the agent's loop


class BadCallOnTarget(_Base):
    """Sends a call with a non-string name and list arguments on the target."""

    async def act(self, observation: Observation) -> AgentTurn:
        if self.target:
            call = ToolCall(id="c0", name="get_stock")
            call.name = 7  # type: ignore[assignment]
            call.arguments = ["A"]  # type: ignore[assignment]
            return AgentTurn(tool_calls=[call])
        return await self.oracle.act(observation)


def factory_exits(ctx: EpisodeContext) -> Any:
    """A factory that raises SystemExit on the target."""
    if ctx.task_id == TARGET:
        raise SystemExit(2)
    return OracleAgent(_instance(ctx))
