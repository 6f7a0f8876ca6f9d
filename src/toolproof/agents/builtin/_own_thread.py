"""An in-process agent on its own thread and event loop, so it cannot freeze the harness.

A ``python:`` agent is the user's code, running in the harness's process. If its
``act`` called ``time.sleep()`` or spun in a CPU loop on the harness's event loop,
every other episode would stall and no time limit could fire. So each episode's
agent gets a thread (a spare one, reused) with a loop of its own, closed with what
the agent left on it when the episode ends:

* ``act`` (a coroutine function or a plain ``def``) and ``run`` execute there; the
  harness awaits the result on its loop, where the step and episode time limits
  keep working while the agent's thread is blocked (the results of many agents come
  back through one queue, ``_inbox``, that wakes the harness's loop once per batch);
* a driven agent's ``session.call_tool`` hops back to the harness's loop, where the
  gateway and the world live; its arguments are copied into plain JSON first, on
  the agent's thread;
* the agent sees copies of the transcript and returns a copy-checked turn, so it
  cannot rewrite the record of earlier steps;
* anything its code raises (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``
  and a stray ``CancelledError`` included) comes back as :class:`AgentCodeError`, an
  ordinary exception the episode scores as ``agent_error``; only an
  :class:`~toolproof.agents.AgentInfraError` that toolproof itself made, because its
  model gateway or one of its adapters saw the provider fail (``_outage``), is passed on
  as it is. One the agent's code made is its ``agent_error`` like any other.

A thread cannot be killed: an agent that never returns keeps its (daemon) thread
until it does, but its episode ends at the time limit and nothing else waits for it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import inspect
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from toolproof.trajectory import ToolResult, ToolSchema, Usage

from .._outage import UNOBSERVED, is_observed_outage
from ..base import (
    Agent,
    AgentFactory,
    AgentInfraError,
    AgentTurn,
    DrivenAgent,
    EpisodeContext,
    Observation,
    ToolSession,
    drives,
)
from ..limits import (
    AgentFault,
    checked_model_call,
    checked_turn,
    checked_usage,
    checks_its_turns,
    plain_arguments,
)
from ._closer import closer, has_closer
from ._inbox import inbox_of
from ._spare_threads import run_on_spare

T = TypeVar("T")


class AgentCodeError(Exception):
    """The agent's own code raised (any exception, BaseException included): an agent_error."""


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except Exception:  # an exception whose str() raises
        return type(exc).__name__


class _AgentLoop:
    """One thread running one event loop, started at first use.

    The thread is a spare one (``_spare_threads``): when the loop has stopped and closed,
    it goes back to wait for another episode's agent instead of ending.
    """

    def __init__(self, name: str) -> None:
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]  # at first use
        self._name = name
        self._started = False
        self._closing = False
        self._in_flight = 0
        self._tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()
        self._factory: Callable[..., asyncio.Task[Any]] | None = None

    def _main(self) -> None:
        loop = self._loop
        asyncio.set_event_loop(loop)
        while not self._closing:
            # A SystemExit in a task the agent spawned escapes run_forever: that task is
            # over, the loop (and every other call) goes on.
            with contextlib.suppress(BaseException):
                loop.run_forever()
        with contextlib.suppress(BaseException):
            pending = self._left_running(loop)
            for task in pending:
                task.cancel()
            if pending:  # let them see the cancellation (an agent ignoring it is left behind)
                loop.run_until_complete(asyncio.wait(pending, timeout=1))
            if _may_hold_asyncgens(loop):  # a turn of the loop saved when there are none
                loop.run_until_complete(loop.shutdown_asyncgens())
        with contextlib.suppress(BaseException):
            loop.close()
        with contextlib.suppress(BaseException):
            asyncio.set_event_loop(None)  # the thread's next job starts without this loop

    def _left_running(self, loop: asyncio.AbstractEventLoop) -> set[asyncio.Task[Any]]:
        """The tasks of this loop not done yet.

        Found among the tasks the loop's task factory made: ``asyncio.all_tasks(loop)``
        looks through every task of the process (those of every episode in flight) to find
        this loop's, and at a thousand episodes in flight that was most of an agent
        thread's CPU. An agent that set a task factory of its own gets the full search.
        """
        if self._factory is not None and loop.get_task_factory() is self._factory:
            return {task for task in self._tasks if not task.done()}
        return asyncio.all_tasks(loop)

    @property
    def busy(self) -> bool:
        """A call is still running on the agent's thread (e.g. one that timed out)."""
        return self._in_flight > 0

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._loop = asyncio.new_event_loop()
            # The agent's own stray tasks (one that died of SystemExit, say) are its business:
            # not logged as the harness's errors.
            self._loop.set_exception_handler(lambda loop, context: None)
            tasks = self._tasks

            def factory(
                loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
            ) -> asyncio.Task[Any]:
                task: asyncio.Task[Any] = asyncio.Task(coro, loop=loop, **kwargs)
                tasks.add(task)  # the loop's own tasks, for its close (_left_running)
                return task

            self._factory = factory
            self._loop.set_task_factory(factory)
            run_on_spare(self._main, self._name)

    async def call(
        self, what: str, fn: Callable[[], Any], check: Callable[[Any], Any] | None = None
    ) -> Any:
        """Run ``fn()`` on the agent's thread (awaiting it there when it returns an awaitable).

        Args:
            what: Names the call in messages, e.g. ``act()``.
            fn: The agent's code.
            check: Applied to the value on the agent's thread (so that the odd objects'
                own methods it may call run there, not on the harness's loop).

        Raises:
            AgentCodeError: the agent's code raised anything.
            AgentFault: ``check`` refused the value.
        """
        if self._closing:
            raise AgentCodeError(f"{what}: the agent is closed")
        self._start()
        agent_loop = self._loop
        here = asyncio.get_running_loop()
        inbox = inbox_of(here)
        done: asyncio.Future[tuple[bool, Any]] = here.create_future()
        running: list[asyncio.Task[Any]] = []

        def settle(outcome: tuple[bool, Any]) -> None:
            if not done.done():
                done.set_result(outcome)

        async def guarded() -> None:
            self._in_flight += 1
            try:
                value = fn()
                if inspect.isawaitable(value):
                    value = await value
                outcome: tuple[bool, Any] = (True, value if check is None else check(value))
            except BaseException as exc:  # the agent's, whatever it is: reported, not raised
                outcome = (False, exc)
            finally:
                self._in_flight -= 1
            with contextlib.suppress(RuntimeError):  # the harness's loop is gone
                inbox.put(settle, outcome)

        def begin() -> None:
            running.append(agent_loop.create_task(guarded()))

        # One hop there, one back: lighter than run_coroutine_threadsafe + wrap_future. The
        # hop back goes through the harness loop's inbox: replies of many agents that come
        # while the loop is busy wake it once (``_inbox``).
        agent_loop.call_soon_threadsafe(begin)
        try:
            ok, value = await done
        except asyncio.CancelledError:  # the time limit: stop the agent's call too
            with contextlib.suppress(RuntimeError):
                agent_loop.call_soon_threadsafe(lambda: [t.cancel() for t in running])
            raise
        if not ok:
            if isinstance(value, AgentFault):
                raise AgentFault(str(value)) from None
            if is_observed_outage(value):  # toolproof's gateway or adapter saw the outage
                raise value from None
            if isinstance(value, AgentInfraError):  # made by the agent: no evidence of one
                raise AgentCodeError(f"{what} raised {_describe(value)} ({UNOBSERVED})") from None
            raise AgentCodeError(f"{what} raised {_describe(value)}") from None
        return value

    def close(self) -> None:
        """Stop the loop once what runs on it yields (a blocked agent's thread ends later)."""
        self._closing = True
        if not self._started:  # never started: nothing to stop
            return
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            self._loop.call_soon_threadsafe(self._loop.stop)


def _may_hold_asyncgens(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the loop may have async generators to finalize: asyncio's own loops keep
    them in a weak set, ``_asyncgens``; any other loop is asked to shut them down."""
    kept = getattr(loop, "_asyncgens", None)
    return not isinstance(kept, weakref.WeakSet) or len(kept) > 0


async def _on(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> T:
    """Await a coroutine of the harness's loop from the agent's loop."""
    future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(
        coro,  # type: ignore[arg-type]
        loop,
    )
    return await asyncio.wrap_future(future)


class _Session:
    """The session a driven agent sees on its own thread; calls go to the harness's loop.

    The harness's loop is held through a weak reference only: from the loop every task of
    the run is reachable (their coroutines hold each episode's task instance), so nothing
    the agent is handed may lead to it by attribute, closure or ``gc.get_referents``.
    """

    def __init__(self, session: ToolSession, loop: asyncio.AbstractEventLoop) -> None:
        self._session = session
        self._loop_ref = weakref.ref(loop)
        self.system_prompt: str = session.system_prompt
        self.prompt: str = session.prompt
        self._tools = list(session.tools)

    @property
    def _loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop_ref()
        if loop is None:
            raise RuntimeError("the run is over; its tools cannot be called any more")
        return loop

    @property
    def tools(self) -> list[ToolSchema]:
        return list(self._tools)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Copy the call into plain data here, run it on the harness's loop, return a copy."""
        try:
            arguments = plain_arguments(arguments)
        except AgentFault as exc:  # refused here, so the harness never touches the object
            return ToolResult(
                call_id="",
                name=name if type(name) is str else "",
                content=f"error: {exc}",
                is_error=True,
                error_kind="invalid_arguments",
            )
        if isinstance(name, str):
            name = str.__str__(name)
        result = await _on(self._loop, self._session.call_tool(name, arguments))
        return result.model_copy(deep=True)

    def record_usage(self, usage: Usage) -> None:
        copy = checked_usage(dict(vars(usage)), "usage")
        self._loop.call_soon_threadsafe(self._session.record_usage, copy)

    def record_model_call(self, call: dict[str, Any]) -> None:
        record = getattr(self._session, "record_model_call", None)
        if callable(record):
            self._loop.call_soon_threadsafe(record, checked_model_call(call))


class _OwnThread:
    def __init__(self, agent: object, label: str) -> None:
        self._agent = agent
        self._loop = _AgentLoop(f"toolproof-agent {label}")

    @property
    def agent(self) -> object:
        """The user's agent this runs."""
        return self._agent

    async def aclose(self) -> None:
        """Close the agent on its thread (within 5 s), then its loop.

        An agent still busy with a call that timed out is not asked: its thread is left
        to end on its own rather than hold up the episode.
        """
        try:
            if not self._loop.busy and has_closer(self._agent):
                async with asyncio.timeout(5):
                    await self._loop.call("close()", lambda: closer(self._agent))
        except (AgentCodeError, TimeoutError):
            pass
        finally:
            self._loop.close()


@checks_its_turns  # the engine takes the copy checked_turn made on the agent's thread
class OwnThreadAgent(_OwnThread):
    """A harness-driven agent whose ``act`` runs on its own thread."""

    _agent: Agent

    async def act(self, observation: Observation) -> AgentTurn:
        """The agent's next turn, checked and copied on its thread.

        ``observation`` is the agent's own already: the engine makes its messages and
        tools for the agent (``engine/_copies.py``), so it is handed over as it is.
        """
        turn: AgentTurn = await self._loop.call(
            "act()",
            lambda: self._agent.act(observation),
            lambda value: checked_turn(value, "act()"),
        )
        return turn


class OwnThreadDrivenAgent(_OwnThread):
    """An agent-driven agent whose ``run`` runs on its own thread."""

    _agent: DrivenAgent

    async def run(self, session: ToolSession) -> str:
        """Run the agent on its thread; its tool calls come back to this loop."""
        proxy = _Session(session, asyncio.get_running_loop())
        answer = await self._loop.call("run()", lambda: self._agent.run(proxy), _answer)
        assert isinstance(answer, str)
        return answer


def _answer(value: object) -> str:
    if not isinstance(value, str):
        raise AgentFault(f"run() returned {type(value).__name__}, not the final answer as a str")
    return str.__str__(value)


def on_own_thread(agent: Agent | DrivenAgent, label: str) -> Agent | DrivenAgent:
    """Wrap a user's agent so that it runs on its own thread and loop."""
    if drives(agent):
        return OwnThreadDrivenAgent(agent, label)
    return OwnThreadAgent(agent, label)


def own_thread_factory(factory: AgentFactory, label: str) -> AgentFactory:
    """A factory whose agents run on their own thread and loop (see :func:`on_own_thread`).

    The framework adapters (LangChain, LlamaIndex, AutoGen) use it: the user's
    factory and framework code then run on the agent's thread, so that a blocking
    call in them (a synchronous model client, ``time.sleep``) stalls only its episode.
    """

    def make(ctx: EpisodeContext) -> Agent | DrivenAgent:
        return on_own_thread(factory(ctx), label)

    return make


_USER_CODE = "_toolproof_builds_user_code"


def builds_user_code(factory: AgentFactory) -> AgentFactory:
    """Mark a factory that runs the user's code when called (e.g. a ``python:`` factory).

    The engine calls such a factory on a thread of its own, not on its event loop, so
    that one that blocks (loading a model, ``time.sleep``) stalls only its episode.
    Built-in factories are called in place: a thread hop costs milliseconds under load.
    """
    setattr(factory, _USER_CODE, True)  # a flag on a plain function
    return factory


def runs_user_code(factory: AgentFactory) -> bool:
    """True for a factory marked by :func:`builds_user_code`."""
    return getattr(factory, _USER_CODE, False) is True
