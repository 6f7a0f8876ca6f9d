"""``python:module:attr``: a user's own agent object, class or factory.

The user's agent runs in the harness's process but on its own thread and event
loop (see ``_own_thread``): a blocking ``act`` (``time.sleep``, a CPU loop) stalls
only its own episode, which its time limit ends, and whatever its code raises or
returns, even ``SystemExit``, is that episode's ``agent_error``. ``act`` may be a
coroutine function or a plain ``def``.

``--agent-arg loop=harness`` runs an ``async def`` agent on the harness's loop instead
(``_harness_loop``): no thread hops, so many more episodes per core, at the price of that
isolation; a stretch over ``block_limit_s`` without an await ends its episode.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable

from toolproof.spec import Problem, SpecError

from ..base import (
    Agent,
    AgentFactory,
    AgentSpec,
    AgentTurn,
    DrivenAgent,
    EpisodeContext,
    KeyedFactory,
    acts,
    agent,
    drives,
)
from ._harness_loop import BLOCK_LIMIT_S, check_stretch, on_harness_loop
from ._own_thread import AgentCodeError, builds_user_code, on_own_thread
from ._user_import import import_target

__all__ = ["build", "import_target"]


@agent("python")
def build(spec: AgentSpec) -> AgentFactory:
    """Accepts an agent instance (shared by all episodes: keep it stateless), an agent
    class taking no arguments or an EpisodeContext, or a factory ``(EpisodeContext) -> agent``.

    The factory gets the :class:`EpisodeContext` only, never the task instance: a user's
    agent is blind to the answer key, so a keyed built-in factory is refused here."""
    if spec.target is None:
        raise SpecError(
            [Problem(None, None, "agent", "python agents need a target: python:module:attr")]
        )
    wrap, limit = _placement(spec)
    obj = import_target(spec.target, "agent")
    label = spec.target
    if isinstance(obj, KeyedFactory):
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"{spec.target} is a built-in agent's factory that plays the answer key; "
                    "python: agents are never given the task instance. Run a built-in by its "
                    "name (e.g. --agent oracle) or write a factory (EpisodeContext) -> agent",
                )
            ]
        )
    if isinstance(obj, Agent | DrivenAgent) and not inspect.isclass(obj):
        return lambda ctx: wrap(obj, label)
    if callable(obj):
        takes_ctx = True
        try:
            params = inspect.signature(obj).parameters
            takes_ctx = len(params) > 0
        except (TypeError, ValueError):
            pass

        def factory(ctx: EpisodeContext) -> Agent | DrivenAgent:
            started = time.perf_counter()
            try:
                made = obj(ctx) if takes_ctx else obj()
            except BaseException as exc:  # the user's code: its episode's agent_error
                return _Broken(f"making the agent {label} raised {_describe(exc)}")
            if limit is not None:  # called in place, on the harness's loop: timed as well
                try:
                    check_stretch(time.perf_counter() - started, limit, f"making the agent {label}")
                except AgentCodeError as exc:
                    return _Broken(str(exc))
            if not (acts(made) or drives(made)):
                return _Broken(
                    f"{label} returned {type(made).__name__}, which has no act() or run()"
                )
            return wrap(made, label)

        if wrap is not on_own_thread:  # on the harness's loop: the factory is called in place
            return factory
        return builds_user_code(factory)  # the engine calls it off its loop
    raise SpecError(
        [
            Problem(
                None,
                None,
                "agent",
                f"{spec.target} is neither an agent (with act/run) nor a factory",
            )
        ]
    )


def _placement(
    spec: AgentSpec,
) -> tuple[Callable[[Agent | DrivenAgent, str], Agent | DrivenAgent], float | None]:
    """Where the agent runs: its own thread (the default) or, with ``loop=harness``, the
    harness's loop, each stretch between awaits at most ``block_limit_s`` (the limit is
    returned beside the wrapper; None on its own thread).

    Raises:
        SpecError: a ``loop`` or ``block_limit_s`` that is not one of those.
    """
    place = spec.options.get("loop", "own")
    if place not in ("own", "harness"):
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent_options.loop",
                    f"loop={place!r} is not a place to run the agent: 'own' (the default, a "
                    "thread and event loop of its own) or 'harness' (the harness's loop: "
                    "faster, for an async def agent that never blocks)",
                )
            ]
        )
    limit = spec.options.get("block_limit_s", BLOCK_LIMIT_S)
    if "block_limit_s" in spec.options and place != "harness":
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent_options.block_limit_s",
                    "block_limit_s applies with --agent-arg loop=harness only (on its own "
                    "thread a blocking agent stalls only its episode)",
                )
            ]
        )
    if isinstance(limit, bool) or not isinstance(limit, int | float) or not 0 < limit < 1e6:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent_options.block_limit_s",
                    f"block_limit_s={limit!r} must be a number of seconds above 0, e.g. 0.5",
                )
            ]
        )
    if place == "own":
        return on_own_thread, None
    seconds = float(limit)
    return (lambda agent, label: on_harness_loop(agent, seconds)), seconds


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:2000]
    except BaseException:  # an exception whose str() raises (even SystemExit)
        return type(exc).__name__


class _Broken:
    """The agent of an episode whose agent could not be made: its first turn says why."""

    def __init__(self, why: str) -> None:
        self.why = why

    async def act(self, observation: object) -> AgentTurn:
        """Raise the reason (an agent_error)."""
        raise AgentCodeError(self.why)
