"""What a tool can reach (:class:`ToolContext`), and the shapes the layers above fill in.

The tools layer sits below the engine and the users layer, so it never imports them.
What a toolkit needs from a run is declared here, generically, and the engine fills it
in when it opens an episode::

    ToolContext.sandbox   the episode's sandbox settings (suite, task and run merged);
                          the shell toolkit reads them (``settings_of``)
    ToolContext.user      the episode's simulated user (``toolproof.users.EpisodeUser``,
                          a :class:`UserLink`); the ``ask_user`` tool asks it
    RunsCommands          a per-episode extra (``world.extras``) whose commands the engine
                          kills at once when a run stops (the shell toolkit's sandbox)
    @tool(runs_commands=True), offers_commands (base.py), command_backend
                          whether a task's tools run commands, and with which backend

So the engine knows no toolkit, and no toolkit knows the engine or the users layer.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolproof.spec import SandboxSpec, TaskInstance
from toolproof.worlds import World

NO_USER = "there is no user to ask in this task; do it with the other tools"
"""What ``ask_user`` answers in a task without a user (an error result the agent sees)."""


class UserLink(Protocol):
    """The simulated user as a tool reaches it (implemented by ``toolproof.users``)."""

    async def ask(self, question: str) -> tuple[str, str]:
        """The user's reply to ``question``, and who gave it (``answered_by``).

        Raises:
            ToolError: the task has no user, or names a simulator nobody registered.
        """
        ...


@runtime_checkable
class RunsCommands(Protocol):
    """A per-episode extra in ``world.extras`` that runs commands on tool threads.

    A thread cannot be cancelled, so when a run stops the engine calls
    :meth:`stop_commands` on every such extra, and the thread's command returns at once.
    """

    def stop_commands(self) -> None:
        """Kill every command still running (best effort; safe to call twice)."""
        ...


def command_backend(settings: SandboxSpec) -> str:
    """The sandbox backend an episode's commands run with: the settings' own, else this
    host's isolated default (probed once per process).

    Raises:
        SandboxError: None is named and bwrap cannot run here (the message says why).
    """
    return settings.backend or host_backend()


@functools.cache
def host_backend() -> str:
    """``toolproof.sandbox.default_backend()`` once per process (bwrap; a SandboxError
    where it cannot run); ``host_backend.cache_clear()`` probes again."""
    from toolproof.sandbox import default_backend  # here: a run without commands never probes

    return default_backend()


@dataclass
class ToolContext:
    """What a tool can reach: the episode's world, its task instance and scratch space.

    Attributes:
        world: The episode's world (records, workspace, per-episode extras).
        instance: The rendered task (None for a tool called outside an episode).
        scratch: Per-episode state of toolkits, by key.
        sandbox: The episode's sandbox settings, as the run decided them (None: a
            toolkit falls back to the task's own, never weaker than the run's defaults).
        user: The episode's simulated user (None: there is nobody to ask).
    """

    world: World
    instance: TaskInstance | None = None
    scratch: dict[str, Any] = field(default_factory=dict)
    sandbox: SandboxSpec | None = None
    user: UserLink | None = None
