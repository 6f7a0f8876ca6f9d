"""Built-in agent kinds, registered when first needed (not at import of ``toolproof``)."""

from __future__ import annotations

import importlib

BUILTIN = ("oracle", "noop", "random_agent", "python_agent", "flawed")
"""Modules that register built-in kinds. Adapters for providers add theirs to ADAPTERS."""

ADAPTERS: tuple[str, ...] = (
    "openai_chat",
    "anthropic_messages",
    "http_agent",
    "langchain_agent",
    "llamaindex_agent",
    "autogen_agent",
    "cmd_agent",
    "mcp_agent",
)
"""Modules of ``toolproof.agents.adapters`` registering provider kinds (SDKs imported lazily)."""

_loaded = False


def load_builtin() -> None:
    """Import every built-in agent module once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for name in BUILTIN:
        importlib.import_module(f"{__name__}.{name}")
    for name in ADAPTERS:
        importlib.import_module(f"toolproof.agents.adapters.{name}")
