"""Making an episode's agent off the event loop, and stopping its commands on cancellation.

An agent factory can run the user's code (a ``python:`` factory, a class whose
``__init__`` loads a model): if it blocked on the harness's event loop, every
other episode would stall. So a factory marked as such
(:func:`~toolproof.agents.builtin._own_thread.builds_user_code`) is called on a
thread of its own (a spare daemon thread, reused from episode to episode: a factory
that never returns keeps only that thread), and the episode waits for it at most its
step time limit. Other factories (the built-ins, the framework adapters, whose user
code runs later on the agent's own thread) are called in place: under load, a thread
hop costs a few milliseconds (``benchmarks/bench_overhead.py``) and they do not block.

When a run stops (Ctrl-C, :meth:`~toolproof.engine.Runner.request_stop`), an
episode may have a sandboxed command running on a tool thread; the thread cannot
be cancelled, and the process would not exit until the command's wall limit.
:func:`stop_commands` kills what runs in the episode's sandbox at once (every extra of
the world that says it runs commands, ``tools.context.RunsCommands``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from toolproof.agents import AgentFactory, EpisodeContext, episode_context, make_agent
from toolproof.agents.builtin._own_thread import runs_user_code
from toolproof.agents.builtin._spare_threads import run_on_spare
from toolproof.sandbox import Sandbox
from toolproof.spec import TaskInstance
from toolproof.tools.context import RunsCommands
from toolproof.trajectory import ToolSchema
from toolproof.worlds import World


class BuildTimeout(Exception):
    """The agent factory did not return within the episode's step time limit."""


def _settle(future: asyncio.Future[Any], value: Any, error: BaseException | None) -> None:
    if future.done():  # the episode stopped waiting (time limit, cancellation)
        return
    if error is None:
        future.set_result(value)
    else:
        future.set_exception(error)


async def build_off_loop(factory: AgentFactory, ctx: EpisodeContext, timeout_s: float) -> Any:
    """Call ``factory(ctx)`` on its own thread; return the agent it made.

    Args:
        factory: The run's agent factory.
        ctx: What the episode's agent is given.
        timeout_s: How long the episode waits for it.

    Raises:
        BuildTimeout: the factory took longer than ``timeout_s`` (its thread is left to end).
        Exception: what the factory raised (a ``SystemExit`` or other non-``Exception``
            comes back as a ``RuntimeError``, so that it cannot end the harness).
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = factory(ctx)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # SystemExit and the like: contained here
            error = RuntimeError(f"making the agent raised {type(exc).__name__}: {exc}"[:2000])
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody waits any more
            loop.call_soon_threadsafe(_settle, future, value, error)

    label = f"toolproof-build {ctx.task_id}#{ctx.epoch}"
    run_on_spare(work, label)  # a reused daemon thread: no thread start per episode
    try:
        async with asyncio.timeout(timeout_s):
            return await future
    except TimeoutError:
        raise BuildTimeout(
            f"making the agent took longer than the step time limit of {timeout_s:g}s"
        ) from None


async def build_agent_for(
    factory: AgentFactory, instance: TaskInstance, tools: list[ToolSchema], timeout_s: float
) -> Any:
    """The episode's agent: made on a thread when the factory runs the user's code.

    A user's factory gets the blind :class:`EpisodeContext` only (no instance, see
    ``agents.make_agent``); a built-in keyed factory is made in place by ``make_agent``.

    Raises:
        BuildTimeout: see :func:`build_off_loop`.
    """
    if runs_user_code(factory):
        ctx = episode_context(instance, tools)
        del instance  # the thread's frames never hold the key
        return await build_off_loop(factory, ctx, timeout_s)
    return make_agent(factory, instance, tools)


def stop_commands(world: World) -> None:
    """Kill every command running in ``world``'s sandboxes (the episode is being cancelled).

    The tool thread running the command then returns at once (with an error nobody
    reads); closing the sandbox again later, with the world, is harmless.
    """
    for extra in list(world.extras.values()):
        if isinstance(extra, RunsCommands):  # e.g. the shell toolkit's: no toolkit named here
            with contextlib.suppress(Exception):  # clean-up on the way out: best effort
                extra.stop_commands()
        elif isinstance(extra, Sandbox):
            with contextlib.suppress(Exception):
                extra.close()
