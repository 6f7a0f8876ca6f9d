"""An episode's pinned environment: checked before the agent starts, mounted for its commands.

The engine calls :func:`prepare_episode` while it sets up the task's world. For a
task whose sandbox settings name a ``toolenv``, it finds the set-up environment
(refusing a missing or drifted one: an infra error naming the command to run),
returns the sandbox settings with the environment mounted read-only at
``/opt/toolproof-env`` and its programs on PATH, and leaves an
:class:`EpisodeEnv` in the world's extras. There the engine's recorder asks it
to annotate each step (:meth:`EpisodeEnv.annotate_step`: the lint-error curve),
and the lint checks find the environment to run the linter with.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolproof.spec import SandboxSpec
from toolproof.trajectory import Message, ToolResult

from .cache import MOUNT, STD_PATH, EnvStatus, inspect_env
from .linters import count_in_output

__all__ = ["EXTRAS_KEY", "EpisodeEnv", "episode_env", "prepare_episode", "sandbox_settings"]

EXTRAS_KEY = "toolproof.toolenv"
"""Key of the :class:`EpisodeEnv` in ``world.extras``."""
COMMAND_TOOLS = frozenset({"run_command"})
"""Tools whose results may hold a linter's output."""


def sandbox_settings(status: EnvStatus, directory: Path, settings: SandboxSpec) -> SandboxSpec:
    """``settings`` with the environment mounted and its programs first on PATH.

    The task's own ``env`` values win over the environment's (PATH included).
    """
    env = {**status.lock.env, "PATH": f"{MOUNT}/bin:{STD_PATH}"}
    if status.lock.npm:
        env["NODE_PATH"] = f"{MOUNT}/node/node_modules"  # require() from a CommonJS config
    return settings.over(SandboxSpec(ro_binds={str(directory): MOUNT}, env=env))


@dataclass
class EpisodeEnv:
    """The pinned environment of one episode (kept in ``world.extras``).

    Attributes:
        status: The version file and what the cache holds for it.
        directory: The environment directory in use.
        settings: The sandbox settings the episode's commands run with.
        base: The task file's directory (where ``world.fixtures`` is found).
        curve: ``(step index, lint errors)`` for every step whose commands ran the linter.
    """

    status: EnvStatus
    directory: Path
    settings: SandboxSpec
    base: Path | None = None
    curve: list[tuple[int, int]] = field(default_factory=list)

    @property
    def digest(self) -> str | None:
        """The live digest of the environment in use."""
        return self.status.live_digest

    @property
    def drift(self) -> list[str]:
        """How the environment in use differs from the pins (empty when it does not)."""
        return list(self.status.changes)

    def baseline(self, task_id: str) -> int | None:
        """The recorded number of lint errors the task starts with."""
        return self.status.lock.baseline.get(task_id)

    def annotate_step(
        self, index: int, message: Message, results: list[ToolResult]
    ) -> dict[str, Any]:
        """``{"lint_errors": N}`` when a command of step ``index`` ran the linter (the last N).

        Called by the engine's recorder for every step it records.
        """
        by_id = {r.call_id: r for r in results}
        count: int | None = None
        for call in message.tool_calls:
            result = by_id.get(call.id)
            if call.name not in COMMAND_TOOLS or result is None or result.is_error:
                continue
            try:
                output = json.loads(result.content)
            except ValueError:
                continue
            if not isinstance(output, dict):
                continue
            found = count_in_output(
                str(call.arguments.get("command", "")),
                output.get("exit_code"),
                str(output.get("stdout", "")),
                str(output.get("stderr", "")),
            )
            count = found if found is not None else count
        if count is None:
            return {}
        self.curve.append((index, count))
        return {"lint_errors": count}


def episode_env(extras: dict[str, Any]) -> EpisodeEnv | None:
    """The episode's environment, if its task has one."""
    found = extras.get(EXTRAS_KEY)
    return found if isinstance(found, EpisodeEnv) else None


def prepare_episode(
    extras: dict[str, Any],
    settings: SandboxSpec,
    *,
    base: Path | None,
    suite: str,
    cache_root: Path | None = None,
    allow_drift: bool = False,
) -> SandboxSpec:
    """Check and mount the task's pinned environment; settings unchanged without one.

    Args:
        extras: The world's extras; the :class:`EpisodeEnv` is put there.
        settings: The episode's effective sandbox settings.
        base: The task file's directory (``toolenv`` is relative to it).
        suite: The suite's name, for the set-up command in messages.
        cache_root: The environment cache (default ``~/.cache/toolproof/envs``).
        allow_drift: Run on an environment that differs from its version file.

    Raises:
        EnvNotSetUp: the environment was never set up.
        EnvDrift: it differs from the version file and drift is not allowed.
        SpecError: the version file is missing or invalid.
    """
    if settings.toolenv is None:
        return settings
    lock_path = ((base or Path.cwd()) / settings.toolenv).resolve()
    status = inspect_env(lock_path, cache_root)
    directory = status.require(f"toolproof env setup {suite}", allow_drift=allow_drift)
    mounted = sandbox_settings(status, directory, settings)
    extras[EXTRAS_KEY] = EpisodeEnv(status, directory, mounted, base)
    return mounted
