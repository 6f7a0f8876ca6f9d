"""Agents for ``test_harness_loop.py``, run as ``python:harness_loop_agents:X`` with
``--agent-arg loop=harness``. Each notes where its code ran in :data:`SEEN`."""

from __future__ import annotations

import asyncio
import threading
import time
import types
from typing import Any

from toolproof.agents import AgentTurn, EpisodeContext, Observation, ToolSession
from toolproof.trajectory import ToolCall

SEEN: list[tuple[str, int, Any]] = []
"""(what, thread id, running loop) for each call of the agents' code."""


def _seen(what: str) -> None:
    try:
        loop: Any = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    SEEN.append((what, threading.get_ident(), loop))


class Stock:
    """Looks up product A, then answers with its stock (7 in the test task)."""

    def __init__(self, ctx: EpisodeContext) -> None:
        _seen("factory")

    async def act(self, observation: Observation) -> AgentTurn:
        _seen("act")
        await asyncio.sleep(0)
        if observation.step == 0:
            call = ToolCall(id="a", name="get_stock", arguments={"product_id": "A"})
            return AgentTurn(tool_calls=[call])
        return AgentTurn(content="7 units")

    async def aclose(self) -> None:
        _seen("aclose")


class Blocks:
    """Blocks the loop for 0.6 s with ``time.sleep`` in its first turn."""

    async def act(self, observation: Observation) -> AgentTurn:
        await asyncio.sleep(0)
        time.sleep(0.6)
        return AgentTurn(content="7 units")


class Spins:
    """Spins the CPU for 0.6 s, then would go on awaiting and spinning: stopped at once."""

    turns = 0

    async def act(self, observation: Observation) -> AgentTurn:
        Spins.turns += 1
        end = time.perf_counter() + 0.6
        while time.perf_counter() < end:
            pass
        await asyncio.sleep(0)
        Spins.turns += 100  # never reached: the stretch over the limit ends the call
        return AgentTurn(content="7 units")


class Plain:
    """A plain ``def act``: it would block the harness's loop."""

    def act(self, observation: Observation) -> AgentTurn:
        return AgentTurn(content="7 units")


class Exits:
    """Raises SystemExit from its ``act``."""

    async def act(self, observation: Observation) -> AgentTurn:
        await asyncio.sleep(0)
        raise SystemExit("bye")


class Waits:
    """Awaits far longer than any step limit (cancelled by the harness)."""

    cancelled = 0

    async def act(self, observation: Observation) -> AgentTurn:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            Waits.cancelled += 1
            raise
        return AgentTurn(content="7 units")


class Drives:
    """An agent that owns its loop: one tool call through the session, then the answer."""

    async def run(self, session: ToolSession) -> str:
        _seen("run")
        result = await session.call_tool("get_stock", {"product_id": "A"})
        return f"{result.content} -> 7 units"


class _BlockingAwaitable:
    """Not a coroutine: an object whose ``__await__`` blocks before it yields."""

    def __await__(self) -> Any:
        time.sleep(0.6)
        yield None
        return AgentTurn(content="7 units")


class AwaitsAnObject:
    """``act`` returns an awaitable object, not a coroutine, that blocks inside."""

    def act(self, observation: Observation) -> Any:
        return _BlockingAwaitable()


class SlowToMake:
    """Its making (the factory, called in place on the harness's loop) blocks 0.6 s."""

    def __init__(self, ctx: EpisodeContext) -> None:
        time.sleep(0.6)

    async def act(self, observation: Observation) -> AgentTurn:
        return AgentTurn(content="7 units")


STOPPED: list[int] = []
"""Epochs whose agent stopped the harness's loop (once per process)."""


class StopsTheLoopOnce:
    """On the harness's loop an agent can stop the run: this one does, once."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.epoch = ctx.epoch

    async def act(self, observation: Observation) -> AgentTurn:
        await asyncio.sleep(0.01 * self.epoch)
        if self.epoch == 3 and not STOPPED:
            STOPPED.append(self.epoch)
            asyncio.get_running_loop().stop()
        return AgentTurn(content="7 units")


class BlocksBeforeItsCoroutine:
    """A plain ``act`` that blocks, then returns a coroutine: the call itself is timed."""

    def act(self, observation: Observation) -> Any:
        time.sleep(0.6)
        return self._turn()

    async def _turn(self) -> AgentTurn:
        return AgentTurn(content="7 units")


@types.coroutine
def _bad_yield() -> Any:
    yield 42  # not a future: asyncio refuses it


class YieldsGarbage:
    """Its coroutine yields a plain value up to the harness's event loop."""

    async def act(self, observation: Observation) -> AgentTurn:
        await _bad_yield()
        return AgentTurn(content="7 units")
