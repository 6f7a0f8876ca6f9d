"""The check evaluators with the built-in kinds loaded.

This module sits above ``checks/`` (it loads every built-in module, each of which
registers its kinds with ``base.check``) and ``base`` sits below it, so the registry
has no import cycle: ``base`` <- ``checks/*`` <- ``registry``.
"""

from __future__ import annotations

from . import checks
from .base import Evaluator, kind_names, registered

__all__ = ["evaluators", "kind_names"]


def evaluators() -> dict[str, Evaluator]:
    """Registered evaluators by kind: the built-in ones and any a plug-in added."""
    checks.load_builtin()
    return registered()
