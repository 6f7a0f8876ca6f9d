"""Built-in check kinds, one module each; each module registers its kinds (``@check``)
or check functions (``@check_function``) when imported.

Importing this package imports none of them: ``scoring.base`` imports a kind's module the
first time a check of that kind runs (``BUILTIN_KINDS``), ``checks.custom`` a built-in
check function's (``BUILTIN_FUNCTIONS``), so an episode loads only what its task uses;
:func:`load_builtin` imports every one (``scoring.evaluators()`` does).
"""

from __future__ import annotations

import importlib

BUILTIN = (
    "answer",
    "ask",
    "attack",
    "custom",
    "evidence",
    "hidden_tests",
    "judge",
    "lint",
    "output",
    "process",
    "state",
)
"""The modules of this package that register built-in kinds or check functions."""


def load_builtin() -> None:
    """Import every built-in check module (each registers its kinds once)."""
    for name in BUILTIN:
        importlib.import_module(f"{__name__}.{name}")


__all__ = ["BUILTIN", "load_builtin"]
