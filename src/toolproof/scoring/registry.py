"""The check evaluators with the built-in kinds loaded.

This module sits above ``checks/`` (it imports the package, which registers every
built-in kind with ``base.check``) and ``base`` sits below it, so the registry
has no import cycle: ``base`` <- ``checks/*`` <- ``registry``.
"""

from __future__ import annotations

from . import checks  # noqa: F401  (importing the package registers the built-in kinds)
from .base import Evaluator, registered

__all__ = ["evaluators"]


def evaluators() -> dict[str, Evaluator]:
    """Registered evaluators by kind: the built-in ones and any a plug-in added."""
    return registered()
