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
    "local_chat",
    "litellm_chat",
)
"""Modules of ``toolproof.agents.adapters`` registering provider kinds (SDKs imported lazily)."""

KINDS: dict[str, str] = {
    "oracle": "oracle",
    "noop": "noop",
    "random": "random_agent",
    "python": "python_agent",
    "never-asks": "flawed",
    "never-retries": "flawed",
    "gullible": "flawed",
    "openai": "openai_chat",
    "anthropic": "anthropic_messages",
    "http": "http_agent",
    "https": "http_agent",
    "langchain": "langchain_agent",
    "llamaindex": "llamaindex_agent",
    "autogen": "autogen_agent",
    "cmd": "cmd_agent",
    "mcp": "mcp_agent",
    "mcp-serve": "mcp_agent",
    "ollama": "local_chat",
    "vllm": "local_chat",
    "litellm": "litellm_chat",
}
"""The module of BUILTIN or ADAPTERS that registers each built-in kind: a run of one kind
imports that module alone (``http_agent`` alone brings httpx, a tenth of a run's start-up)."""

_loaded = False


def load_builtin(kind: str | None = None) -> None:
    """Import the built-in module that registers ``kind``; every one (once) for None or another."""
    global _loaded
    module = KINDS.get(kind) if kind is not None else None
    if module is not None:
        package = __name__ if module in BUILTIN else "toolproof.agents.adapters"
        importlib.import_module(f"{package}.{module}")
        return
    if _loaded:
        return
    _loaded = True
    for name in BUILTIN:
        importlib.import_module(f"{__name__}.{name}")
    for name in ADAPTERS:
        importlib.import_module(f"toolproof.agents.adapters.{name}")
