"""Built-in toolkits. Each module registers its tools with ``@tool`` when imported.

Importing is deferred to :func:`load_builtin` so that ``import toolproof`` stays cheap.
"""

from __future__ import annotations

import importlib

BUILTIN = (
    "files",
    "inventory",
    "orders",
    "calculator",
    "calendar",
    "mail",
    "bank",
    "sqldb",
    "rest",
    "rest_auth",
    "user",
    "shell",
    "live",
)
"""Modules of this package that hold built-in toolkits."""

_loaded = False


def load_builtin() -> None:
    """Import every built-in toolkit once."""
    global _loaded
    if _loaded:
        return
    for name in BUILTIN:
        importlib.import_module(f"{__name__}.{name}")
    _loaded = True
