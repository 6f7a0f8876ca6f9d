"""Defaults that scale: what a run given only ``--parallel N`` chooses for itself.

With many episodes in flight one process spends its core on the harness (each
episode's turns, tool calls, records). Worker processes (``--workers``) use every core.
A run chooses them itself when that pays and is safe:

* **when it pays**: at least :data:`AUTO_IN_FLIGHT` episodes in flight and more episodes
  to run than that, and :data:`WORKER_EPISODES` episodes or more for each worker (a short
  run would spend more on starting workers than it saves);
* **worker processes** (one per core at most) for an agent kind that a fresh process
  builds again from its spec alone (:data:`WORKER_KINDS`; a ``python:`` agent whose module
  is a file on the path), with no model gateway, model cache, live proxy or user/judge model in the
  parent that the workers would need to share, on a machine with more than one core.

A run never chooses the harness's event loop (``loop=harness``) for an agent: a ``python:``
agent is code the run does not own, and on that loop it could reach every episode's task
(``asyncio.all_tasks()``) and stop the run (invariant 9: the run's own choices never weaken
where agent code runs). ``--agent-arg loop=harness`` stays the user's explicit opt-in; a
placement with ``loop`` recorded by an older run is not followed (``cli/_run_exec._place``).
:class:`_Withdrawable` still serves a :class:`~toolproof.engine.config.Placement` with
``loop="harness"`` built by a caller of the engine: an agent that blocks there, or is not
async, goes back on its own thread, for that episode and the rest of the run (``Worker``).

An explicit ``--workers`` wins; the choice is recorded in the run's config
(:class:`~toolproof.engine.config.Placement`) so that a resume runs the same way. Records
and summary do not depend on it.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from toolproof.agents import AgentFactory, AgentTurn, EpisodeContext, Observation
from toolproof.agents.base import drives

from .config import Placement, RunConfig

AUTO_IN_FLIGHT = 64
"""The fewest episodes in flight (``--parallel``) at which a run chooses for itself."""

WORKER_EPISODES = 1000
"""The fewest episodes to run per worker process chosen: a worker's start-up (imports, the
selected tasks loaded and checked: 1-3 s of CPU) must be a small part of its share. A run of
1,000 episodes of the oracle over 100 tasks of core took 8.3-8.9 ms of CPU per episode with
``--workers 2`` against 5.5-6.0 ms in one process."""

WORKER_KINDS = frozenset(
    {
        "oracle",
        "noop",
        "random",
        "gullible",
        "never-asks",
        "never-retries",
        "python",
        "openai",
        "anthropic",
    }
)
"""Agent kinds that a worker process builds again from their spec alone: toolproof's own
built-in agents, its SDK adapters (each process its own HTTP pool), and ``python:``
agents importable from a file. Not the gateway's framework and ``cmd:`` agents (their
model gateway and its limits live in the parent), not plug-ins or agents registered in
this process only (a worker would not know them)."""

HARNESS_LOOP_MARK = "loop=harness"
# The guard's limit stays the usual 1 s between awaits: a tighter one (0.1 s was tried) moved
# a never-blocking agent off the loop in a 5,000-episode run at load 10 on 2 cores, where a
# stretch of a few microseconds can wait that long for the CPU or for a collection.
"""Every refusal of an agent on the harness's loop names the option (``_harness_loop``):
an episode that ended so, with the loop chosen automatically, runs again on the agent's
own thread."""


def choose_placement(
    config: RunConfig,
    *,
    planned: int,
    parallel: int,
    executor: str = "local",
    workers_given: bool = False,
    cores: int | None = None,
) -> Placement | None:
    """The placement a run at defaults takes, or None to leave it as it is.

    Args:
        config: The run's configuration (agent, options, side models, live).
        planned: Episodes the run has left to do.
        parallel: Episodes in flight (``--parallel``).
        executor: ``--executor``; only ``local`` chooses.
        workers_given: ``--workers`` was given: it wins, no worker processes are chosen.
        cores: CPU cores (default: this machine's).
    """
    if executor != "local" or parallel < AUTO_IN_FLIGHT or planned <= parallel:
        return None
    cores = cores if cores is not None else (os.cpu_count() or 1)
    workers = min(cores, planned // WORKER_EPISODES)
    if workers < 2 or workers_given or not workers_safe(config):
        workers = 1
    if workers == 1:  # never the harness's loop: see the module
        return None
    return Placement(workers=workers)


def describe(placement: Placement) -> str:
    """The console line that says what the run chose."""
    parts = []
    if placement.workers > 1:
        parts.append(f"{placement.workers} worker processes (--workers {placement.workers})")
    if placement.loop == "harness":
        parts.append("the agent on the harness's event loop (--agent-arg loop=harness)")
    return (
        "many episodes in flight: running with "
        + " and ".join(parts)
        + "; --workers 1 / --agent-arg loop=own to run otherwise"
    )


def workers_safe(config: RunConfig) -> bool:
    """Whether worker processes can run this config's agent as this process would."""
    kind, _, target = config.agent.partition(":")
    if kind not in WORKER_KINDS or config.live is not None or config.side_models:
        return False
    if config.user_model or config.judge_model or config.model:
        return False
    if "cache" in config.agent_options:  # one model-call cache file, not one per process
        return False
    return kind != "python" or _importable_file(target.partition(":")[0])


def _importable_file(module: str) -> bool:
    """Whether a fresh process finds ``module`` as a file (the parent's path is handed
    down, and the current directory, as ``python:`` imports do)."""
    if not module or module == "__main__":
        return False
    cwd = str(Path.cwd())
    added = cwd not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return False
    finally:
        if added:
            sys.path.remove(cwd)
    origin = spec.origin if spec is not None else None
    return origin is not None and Path(origin).is_file()


class LoopWithdrawn(Exception):
    """The run took its agent off the harness's loop while this episode was in flight."""


class _Withdrawable:
    """An agent the run put on the harness's loop, asked before each turn whether the run
    still runs it there: once one episode found that it blocks, the episodes in flight
    stop at their next turn (to run again on the agent's own thread) instead of each
    blocking the loop once more."""

    def __init__(
        self, agent: Any, withdrawn: Callable[[], bool], withdraw: Callable[[], None]
    ) -> None:
        self._agent = agent
        self._withdrawn = withdrawn
        self._withdraw = withdraw

    async def act(self, observation: Observation) -> AgentTurn:
        """The agent's turn, unless the run has taken it off the harness's loop; a turn the
        loop's guard refuses takes it off at once, for the episodes in flight too."""
        if self._withdrawn():
            raise LoopWithdrawn(f"the run no longer runs this agent with {HARNESS_LOOP_MARK}")
        try:
            turn: AgentTurn = await self._agent.act(observation)
        except Exception as exc:
            if HARNESS_LOOP_MARK in str(exc):
                self._withdraw()
            raise
        return turn

    async def aclose(self) -> None:
        """The wrapped agent's own clean-up."""
        closer = getattr(self._agent, "aclose", None)
        if callable(closer):
            await closer()


def withdrawable(
    factory: AgentFactory, withdrawn: Callable[[], bool], withdraw: Callable[[], None]
) -> AgentFactory:
    """``factory`` with each harness-driven agent it makes checked by ``withdrawn`` before
    every turn, and ``withdraw`` called when the loop's guard refuses one of its turns (an
    agent that owns its loop is called once: it is made as it is)."""

    def make(ctx: EpisodeContext) -> Any:
        agent = factory(ctx)
        return agent if drives(agent) else _Withdrawable(agent, withdrawn, withdraw)

    return make
