"""The one exception type of the sandbox package."""

from __future__ import annotations

__all__ = ["SandboxError"]


class SandboxError(Exception):
    """A sandbox could not be set up or asked to do something it cannot do.

    Raised for problems of the harness or the host (a missing binary, a workspace
    that does not exist, an unknown backend), never for a command that failed:
    a failing command is an ``ExecResult`` with a non-zero exit code.
    """
