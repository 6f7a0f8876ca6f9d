"""The exceptions of the sandbox package."""

from __future__ import annotations

import errno

__all__ = ["SandboxError", "SpawnerBroken", "SpawnerLost", "StartRefused", "start_failure"]


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


class StartRefused(SpawnerLost):
    """The host refused to start the harness's own program (``bwrap``) for a command.

    Its path, directory, rlimits and uid are all the harness's, so a failure before
    its exec (``EAGAIN`` from an ``RLIMIT_NPROC`` that other episodes' sandboxes fill,
    ``ENOMEM``, a ``setresuid`` refused, ...) is a fault toolproof witnessed: a
    ``SpawnerLost``, so the episode is an ``infra_error`` (retried), never the agent's.
    The helper that reported it still works: it is handed back, not discarded.
    """


def start_failure(message: str, code: int | None) -> SandboxError:
    """The one place that decides whose failure a command's failed start was.

    Args:
        message: What the spawner said (``could not start '...': STEP: WHY``).
        code: The errno of the step that failed, or None when none was reported.

    Returns:
        ``SandboxError`` (the caller's) for ``E2BIG``, a command line too long for
        the kernel: the only start failure a caller's command can cause, and
        ``run_command`` refuses one before it gets here. ``StartRefused`` (witnessed,
        infra) for every other, an unreported errno included.
    """
    if code == errno.E2BIG:
        return SandboxError(message)
    return StartRefused(message)
