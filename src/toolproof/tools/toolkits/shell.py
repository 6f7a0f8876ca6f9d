"""Shell tools for workspace worlds: ``run_command`` in the episode's sandbox, ``read_output``.

The sandbox is made on the first command of an episode, on the world's workspace
(seen as /workspace), and kept in ``world.extras`` so ``World.close()`` kills
whatever is left and deletes the kept outputs. Its settings are the episode's
:class:`~toolproof.spec.SandboxSpec` (suite, task and run merged by the engine
into ``ToolContext.sandbox``; the task's own when run without the engine). The shell
is a :class:`~toolproof.tools.context.RunsCommands` extra: when a run stops, the engine
kills its commands without knowing this toolkit.

What the agent sees is a function of its commands alone: results carry no duration
(timing is recorded beside them, in the trajectory), and where the backend cannot
remap paths the workspace's host path is shown as /workspace.

Limits: one command gets the per-command limits (a hit is a tool error with
``error_kind="resource_limit"``; the episode goes on). All commands of an episode
share ``command_time_s`` and the workspace may not pass ``workspace_mb``; spending
either ends the episode with termination ``resource_limit``.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from toolproof.sandbox import (
    ExecResult,
    ResourceLimits,
    Sandbox,
    SandboxError,
    get_backend,
)
from toolproof.spec import SandboxSpec
from toolproof.spec.sandbox import effective_sandbox
from toolproof.trajectory import Termination, ToolKind

from ..base import ToolContext, ToolError, offers_commands, tool
from ..context import command_backend, host_backend
from ..policy import request_stop, requested_stop

__all__ = ["SETTINGS_KEY", "EpisodeShell", "backend_name", "offers_commands", "settings_of"]

SETTINGS_KEY = "toolproof.sandbox"
"""``ctx.scratch`` key of an episode's :class:`SandboxSpec`, for a context made by hand
(tests, benchmarks); the engine sets :attr:`ToolContext.sandbox`, which wins."""
_EXTRAS_KEY = "shell"
_MAX_READ = 20_000
_create_lock = threading.Lock()
_LIMIT_TEXT = {
    "wall_time": ("wall_s", "wall-time limit of {:g} s"),
    "cpu": ("cpu_s", "CPU-time limit of {:g} s per process"),
    "memory": ("memory_mb", "memory limit of {} MiB"),
    "pids": ("pids", "limit of {} processes"),
    "file_size": ("file_size_mb", "file-size limit of {} MiB"),
    "output": ("output_bytes", "output limit of {} bytes"),
    "workspace_size": ("workspace_mb", "workspace size limit of {} MiB"),
}


def settings_of(ctx: ToolContext) -> SandboxSpec:
    """The episode's sandbox settings: set by the engine (``ctx.sandbox``, else
    ``scratch[SETTINGS_KEY]``), else the task's as ``effective_sandbox`` holds them (never
    weaker than the run's), else defaults."""
    if ctx.sandbox is not None:
        return ctx.sandbox
    given = ctx.scratch.get(SETTINGS_KEY)
    if isinstance(given, SandboxSpec):
        return given
    task = ctx.instance.task.sandbox if ctx.instance is not None else None
    return effective_sandbox(None, None, task)


backend_name = command_backend
"""The backend commands run with (:func:`~toolproof.tools.context.command_backend`)."""

_host_default = host_backend
"""The host's default backend, probed once per process (tests clear its cache)."""


def _clip(text: str, budget: int, stream: str, output_id: str) -> str:
    """The first and last part of ``text`` in ``budget`` characters, saying how to get the rest."""
    if len(text) <= budget:
        return text
    head = budget // 2
    tail = budget - head
    return (
        f"{text[:head]}\n[... {len(text) - budget} characters omitted; read them with "
        f'read_output(output_id="{output_id}", stream="{stream}", offset={head}) ...]\n'
        f"{text[len(text) - tail :]}"
    )


class EpisodeShell:
    """The sandbox, command-time budget and kept outputs of one episode."""

    def __init__(self, workspace: Path, settings: SandboxSpec) -> None:
        """Create the sandbox on ``workspace``.

        Raises:
            SandboxError: The backend is unknown or cannot run here (an infra error).
        """
        self.settings = settings
        self.backend = backend_name(settings)
        cls = get_backend(self.backend)
        image = settings.image if cls.uses_image else None
        self.box: Sandbox = cls(workspace, image=image, ro_binds=settings.ro_binds)
        self.used_s = 0.0
        self.closed = False
        self._outputs = Path(tempfile.mkdtemp(prefix="toolproof-outputs-"))
        self._count = 0

    @property
    def isolated(self) -> bool:
        """Whether commands run isolated from the host."""
        return self.box.isolated

    def remaining_s(self) -> float | None:
        """Seconds of command time left in the episode, None without a budget."""
        budget = self.settings.limit("command_time_s")
        return None if budget is None else max(0.0, budget - self.used_s)

    def limits(self, wall_s: float) -> ResourceLimits:
        """Per-command limits with a wall time of ``wall_s``."""
        s = self.settings
        return ResourceLimits(
            wall_s=wall_s,
            cpu_s=s.limit("cpu_s"),
            memory_mb=s.limit("memory_mb"),
            pids=s.limit("pids"),
            file_size_mb=s.limit("file_size_mb"),
            workspace_mb=s.limit("workspace_mb"),
            output_bytes=s.limit("output_bytes"),
        )

    def virtual(self, result: ExecResult) -> ExecResult:
        """``result`` with the workspace's host path written as ``/workspace``.

        Only for backends that cannot remap paths (``process``): a traceback or ``pwd``
        would otherwise show a random temporary directory, different in every episode.
        """
        host = str(self.box.workspace)
        return dataclasses.replace(
            result,
            stdout=result.stdout.replace(host, "/workspace"),
            stderr=result.stderr.replace(host, "/workspace"),
        )

    def keep(self, result: ExecResult) -> str:
        """Store a command's whole output; return its id (``o1``, ``o2``, ...)."""
        self._count += 1
        output_id = f"o{self._count}"
        for stream in ("stdout", "stderr"):
            path = self._outputs / f"{output_id}.{stream}"
            path.write_text(getattr(result, stream), encoding="utf-8")
        return output_id

    def read(self, output_id: str, stream: str) -> str:
        """A kept output.

        Raises:
            ToolError: No output has that id.
        """
        path = self._outputs / f"{output_id}.{stream}"
        if not re.fullmatch(r"o[1-9][0-9]{0,9}", output_id) or not path.is_file():
            known = ", ".join(f"o{n}" for n in range(max(1, self._count - 4), self._count + 1))
            raise ToolError(f"no output {output_id!r}; recent ids: {known or 'none yet'}")
        return path.read_text(encoding="utf-8")

    def exec(self, command: str, wall_s: float) -> ExecResult:
        """Run one command under the per-command limits with a wall time of ``wall_s``.

        Raises:
            ToolError: The episode ended (the world was closed) while it ran.
        """
        try:
            result = self.box.exec(command, limits=self.limits(wall_s), env=self.settings.env)
        except SandboxError:
            if not self.closed:
                raise
            result = None
        if self.closed or result is None:  # e.g. a command the gateway gave up waiting for
            raise ToolError("the episode ended while the command was running")
        self.used_s += result.duration_s
        return result

    def close(self) -> None:
        """Kill anything still running and delete the kept outputs; safe to call twice."""
        self.closed = True
        self.box.close()
        shutil.rmtree(self._outputs, ignore_errors=True)

    def stop_commands(self) -> None:
        """The run is stopping: kill what runs now (:class:`RunsCommands`); see :meth:`close`."""
        self.close()


def episode_shell(ctx: ToolContext) -> EpisodeShell:
    """The episode's shell, made on first use.

    Raises:
        ToolError: The task has no workspace.
    """
    if ctx.world.workspace is None:
        raise ToolError("this task has no workspace, so commands cannot run here")
    with _create_lock:
        shell = ctx.world.extras.get(_EXTRAS_KEY)
        if not isinstance(shell, EpisodeShell):
            shell = EpisodeShell(ctx.world.workspace.root, settings_of(ctx))
            ctx.world.extras[_EXTRAS_KEY] = shell
    return shell


def _limit_error(
    ctx: ToolContext, shell: EpisodeShell, result: ExecResult, wall: float, by_budget: bool
) -> ToolError:
    hit = result.limit_hit or ""
    field, text = _LIMIT_TEXT.get(hit, ("", hit + " limit"))
    value = wall if hit == "wall_time" else (shell.settings.limit(field) if field else "")
    what = text.format(value) if "{" in text else text
    episode_wide = hit == "workspace_size" or (hit == "wall_time" and by_budget)
    if hit == "wall_time" and by_budget:
        what = f"episode's command-time budget of {shell.settings.limit('command_time_s'):g} s"
    message = f"resource limit: the command hit the {what}"
    if episode_wide:
        request_stop(ctx, Termination.RESOURCE_LIMIT, f"run_command hit the {what}")
        message += "; the episode ends"
    return ToolError(message, kind="resource_limit")


MAX_COMMAND_BYTES = 100_000
"""The longest command line run_command passes on: Linux refuses a single argument of
128 KiB or more (``E2BIG``) when the sandbox starts, which would end the episode as a
crash instead of an error the agent can recover from."""


@tool(kind=ToolKind.WRITE, blocking=True, runs_commands=True)
def run_command(ctx: ToolContext, command: str, timeout_s: int = 30) -> dict[str, Any]:
    """Run a shell command (/bin/sh -c) in /workspace, in a sandbox without network access.

    Each command starts afresh: only files under /workspace carry over (/tmp does not).
    Long output is cut to its first and last part; read the rest with read_output.

    Args:
        command: The command line, e.g. "python -m pytest -q".
        timeout_s: Seconds before the command is stopped (capped by the task's limit).
    """
    if not command.strip() or "\0" in command:
        raise ToolError("command must be a non-empty shell command line without NUL bytes")
    size = len(command.encode("utf-8", "surrogatepass"))
    if size > MAX_COMMAND_BYTES:  # the kernel refuses one argument past 128 KiB (E2BIG)
        raise ToolError(
            f"the command is {size:,} bytes; one command line may be at most "
            f"{MAX_COMMAND_BYTES:,}: split it, or put a script in /workspace and run that"
        )
    if timeout_s < 1:
        raise ToolError(f"timeout_s must be at least 1, got {timeout_s}")
    shell = episode_shell(ctx)
    stop = requested_stop(ctx)
    if stop is not None and stop[0] is Termination.RESOURCE_LIMIT:
        raise ToolError(f"resource limit: {stop[1]}; no more commands run", kind="resource_limit")
    tool_timeout = ctx.instance.limits.tool_timeout_s if ctx.instance is not None else 60.0
    wall = min(float(timeout_s), shell.settings.limit("wall_s"))
    wall = min(wall, max(tool_timeout * 0.8, tool_timeout - 5.0))
    remaining = shell.remaining_s()
    by_budget = remaining is not None and remaining < wall
    if remaining is not None:
        wall = min(wall, remaining)
    if wall <= 0:
        spent = "the episode's command time is used up"
        request_stop(ctx, Termination.RESOURCE_LIMIT, spent)
        raise ToolError(f"resource limit: {spent}", kind="resource_limit")
    result = shell.exec(command, wall)
    if not shell.isolated:  # the process backend runs in the real directory; show /workspace
        result = shell.virtual(result)
    output_id = shell.keep(result)
    budget = shell.settings.limit("output_chars")
    err_budget = min(len(result.stderr), max(budget // 2, budget - len(result.stdout)))
    stdout = _clip(result.stdout, budget - err_budget, "stdout", output_id)
    stderr = _clip(result.stderr, err_budget, "stderr", output_id)
    if result.limit_hit is not None:
        error = _limit_error(ctx, shell, result, wall, by_budget)
        raise ToolError(
            f"{error}\noutput id: {output_id}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            kind="resource_limit",
        )
    if shell.remaining_s() == 0.0:
        request_stop(ctx, Termination.RESOURCE_LIMIT, "the episode's command time is used up")
    return {
        "exit_code": result.exit_code,
        "stdout": stdout,
        "stderr": stderr,
        "truncated": stdout != result.stdout or stderr != result.stderr,
        "output_id": output_id,
    }  # no duration: what the agent sees must not depend on the clock (it is in the Step)


@tool(kind=ToolKind.READ, runs_commands=True)
def read_output(
    ctx: ToolContext, output_id: str, offset: int = 0, limit: int = 2000, stream: str = "stdout"
) -> dict[str, Any]:
    """Read part of the full output of an earlier run_command.

    Args:
        output_id: The output_id run_command returned, e.g. "o3".
        offset: First character to return.
        limit: How many characters to return (at most 20000).
        stream: "stdout" or "stderr".
    """
    if stream not in ("stdout", "stderr"):
        raise ToolError(f"stream must be 'stdout' or 'stderr', got {stream!r}")
    if offset < 0 or limit < 1:
        raise ToolError(f"offset must be >= 0 and limit >= 1, got offset={offset} limit={limit}")
    shell = ctx.world.extras.get(_EXTRAS_KEY)
    if not isinstance(shell, EpisodeShell):
        raise ToolError(f"no output {output_id!r}: no command has run in this episode")
    text = shell.read(output_id, stream)
    end = min(len(text), offset + min(limit, _MAX_READ))
    return {
        "output_id": output_id,
        "stream": stream,
        "offset": offset,
        "text": text[offset:end],
        "next_offset": end if end < len(text) else None,
        "total_chars": len(text),
    }
