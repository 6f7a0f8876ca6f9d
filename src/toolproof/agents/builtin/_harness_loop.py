"""A ``python:`` agent on the harness's own event loop (``--agent-arg loop=harness``).

By default a ``python:`` agent runs on a thread and loop of its own (``_own_thread``), so
that one that blocks stalls only its episode. That isolation costs two thread hops per
call, which at a thousand episodes in flight is most of the run's CPU. An agent whose
``act`` (or ``run``) is an ``async def`` that never blocks can run on the harness's loop
instead, like the built-in agents and the SDK adapters, at the engine's own cost.

On the harness's loop a blocking call stalls every episode, and no time limit can fire
while it blocks. So each stretch the agent's coroutine runs between two awaits is timed:
the first one longer than ``block_limit_s`` (1 s unless set) ends the agent's call, and its
episode, as ``agent_error`` naming the stretch, so a blocking agent cannot pass unnoticed
while it slows the others. What the agent returns and raises is checked and contained by
the engine exactly as for any agent.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Generator
from typing import Any

from ..base import Agent, AgentTurn, DrivenAgent, Observation, ToolSession, drives
from ._own_thread import AgentCodeError

BLOCK_LIMIT_S = 1.0
"""The longest an agent on the harness's loop may run between two awaits, by default."""


class Blocked(AgentCodeError):
    """The agent held the harness's loop longer than its limit in one stretch."""


def check_stretch(stretch: float, limit: float, what: str, coro: Any = None) -> None:
    """Raise :class:`Blocked` (closing ``coro``) when ``stretch`` seconds exceed ``limit``."""
    if stretch > limit:
        if coro is not None:
            with contextlib.suppress(BaseException):  # one that ignores the close is left
                coro.close()
        raise Blocked(
            f"{what} held the harness's event loop for {stretch:.2f}s without awaiting (the "
            f"limit is {limit:g}s with --agent-arg loop=harness: such an agent must not "
            "block; run it on its own thread by leaving `loop` unset)"
        )


class _Timed:
    """Await ``coro`` (a coroutine, or the generator an awaitable's ``__await__`` gives),
    timing each stretch it runs between two awaits (its ``send``)."""

    __slots__ = ("_coro", "_limit", "_what")

    def __init__(self, coro: Any, what: str, limit: float) -> None:
        self._coro = coro
        self._what = what
        self._limit = limit

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, what, limit = self._coro, self._what, self._limit
        clock = time.perf_counter
        value: Any = None
        error: BaseException | None = None
        while True:
            t0 = clock()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as stop:
                check_stretch(clock() - t0, limit, what, coro)
                return stop.value
            except BaseException:
                check_stretch(clock() - t0, limit, what, coro)
                raise
            check_stretch(clock() - t0, limit, what, coro)
            try:
                value, error = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation (or a throw) goes into the agent
                value, error = None, exc


async def _guarded(call: Callable[[], object], what: str, limit: float) -> Any:
    """Call the agent's method and await what it returns, the call and each stretch timed."""
    started = time.perf_counter()
    value = call()
    check_stretch(time.perf_counter() - started, limit, what, value)
    if inspect.iscoroutine(value):
        return await _Timed(value, what, limit)
    if inspect.isawaitable(value):  # an object with __await__: its iterator is timed too
        steps = value.__await__()
        if hasattr(steps, "send") and hasattr(steps, "throw"):
            return await _Timed(steps, what, limit)
        raise AgentCodeError(
            f"{what} returned an awaitable whose __await__ gives no generator; with "
            "--agent-arg loop=harness return a coroutine (an async def)"
        )
    raise AgentCodeError(
        f"{what} returned {type(value).__name__}, not a coroutine: with --agent-arg "
        "loop=harness it must be an async def (a plain def blocks the harness's loop; "
        "leave `loop` unset to run it on its own thread)"
    )


def _awaitable(closer: Callable[[], object]) -> Callable[[], object]:
    """A closer as :func:`_guarded` takes it: a plain ``close()`` may return None."""

    def call() -> object:
        value = closer()
        return value if inspect.isawaitable(value) else _done(value)

    return call


async def _done(value: object) -> object:
    return value


class _OnHarnessLoop:
    def __init__(self, agent: object, limit: float) -> None:
        self._agent = agent
        self._limit = limit

    @property
    def agent(self) -> object:
        """The user's agent this runs."""
        return self._agent

    async def aclose(self) -> None:
        """The agent's own ``aclose``/``close``, if it has one, timed like its turns."""
        for name in ("aclose", "close"):
            closer = getattr(self._agent, name, None)
            if callable(closer):
                await _guarded(_awaitable(closer), f"{name}()", self._limit)
                return


class HarnessLoopAgent(_OnHarnessLoop):
    """A harness-driven agent whose ``act`` runs on the harness's loop, timed."""

    _agent: Agent

    async def act(self, observation: Observation) -> AgentTurn:
        """The agent's next turn (the engine checks and copies it)."""
        agent = self._agent
        turn: AgentTurn = await _guarded(lambda: agent.act(observation), "act()", self._limit)
        return turn


class HarnessLoopDrivenAgent(_OnHarnessLoop):
    """An agent-driven agent whose ``run`` runs on the harness's loop, timed."""

    _agent: DrivenAgent

    async def run(self, session: ToolSession) -> str:
        """Run the agent (the engine checks its answer)."""
        agent = self._agent
        answer: str = await _guarded(lambda: agent.run(session), "run()", self._limit)
        return answer


def on_harness_loop(
    agent: Agent | DrivenAgent, limit: float = BLOCK_LIMIT_S
) -> Agent | DrivenAgent:
    """Wrap a user's agent so that it runs on the harness's loop, each stretch timed."""
    if drives(agent):
        return HarnessLoopDrivenAgent(agent, limit)
    return HarnessLoopAgent(agent, limit)
