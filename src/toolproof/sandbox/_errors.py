"""The exceptions of the sandbox package."""

from __future__ import annotations

__all__ = ["SandboxError", "SpawnerBroken", "SpawnerLost"]


class SandboxError(Exception):
    """A sandbox could not be set up or asked to do something it cannot do.

    Raised for problems of the harness or the host (a missing binary, a workspace
    that does not exist, an unknown backend), never for a command that failed:
    a failing command is an ``ExecResult`` with a non-zero exit code.
    """


class SpawnerBroken(Exception):
    """A backend's command-starting helper did not answer as it should; nothing was
    started, so the command may take the per-command path (``Launcher``)."""


class SpawnerLost(SandboxError):
    """The helper failed after a request went out: the command may have started.

    A harness fault the harness witnessed (the helper is toolproof's, beyond the
    command's reach: another uid, OOM-immune), so the episode is an ``infra_error``
    (through the tool crash it causes), never the agent's tool timeout.
    """
