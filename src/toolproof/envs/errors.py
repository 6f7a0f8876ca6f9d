"""Errors of pinned environments: not set up, drifted, failed to install.

All are infrastructure problems, never the agent's: an episode that meets one
ends with termination ``infra_error`` and the message says what to run.
"""

from __future__ import annotations

from toolproof.spec import ToolproofError

__all__ = ["EnvDrift", "EnvError", "EnvNotSetUp", "SetupFailed"]


class EnvError(ToolproofError):
    """A pinned tool environment cannot be used."""


class EnvNotSetUp(EnvError):
    """No environment of this name was set up in the cache."""


class EnvDrift(EnvError):
    """The environment in the cache is not the one the version file pins.

    Attributes:
        changes: Each component that differs, ``"ruff 0.6.9 → 0.7.0"`` (pinned → live).
    """

    def __init__(self, message: str, changes: list[str]) -> None:
        super().__init__(message)
        self.changes = changes


class SetupFailed(EnvError):
    """Installing an environment failed (a registry, a lock, a missing program)."""
