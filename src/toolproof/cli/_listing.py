"""What ``toolproof list`` prints without a suite, made cheap to start.

Two things used to make ``toolproof list`` slow: loading every built-in suite (now
:func:`toolproof.spec.index.suite_infos`) and importing every agent and tool module
to read their registries (about a second). The registries' contents (agent kinds,
toolkit to tool names) depend only on the code, so they are kept beside the suite
index under a fingerprint of every file of the installed ``toolproof`` package
(:func:`toolproof.spec.index.tree_fingerprint`), and used only when

* the fingerprint computed now equals the stored one, and
* neither registry is loaded in this process (a plug-in that registers an agent or a
  tool imports them, and then the live registries, plug-ins included, are used).

Tables are plain text wrapped by word at the terminal width (no ``rich``: importing it
costs more than the rest of the command), and the whole overview is printed with the
standard library, so a plain ``toolproof list`` is answered without importing click
(:func:`toolproof.cli.main`): bold headings only on a terminal, as click does.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._fast_list import terminal_columns

_REGISTRY_MODULES = ("toolproof.agents", "toolproof.tools")

AGENT_PURPOSE = {
    "oracle": "Plays each task's reference solution: the ceiling. Every built-in task must pass.",
    "noop": "Does nothing and answers nothing (or --agent-arg answer=...): the floor. "
    "No task may pass.",
    "random": "Random tool calls with random arguments: a sanity baseline that should score low.",
    "python": "Your own agent in Python: python:MODULE:ATTR (a class, instance or factory).",
    "never-asks": "Test agent: the oracle, but it never asks the simulated user and guesses "
    "instead. Should fail only the ambiguous tasks.",
    "never-retries": "Test agent: the oracle, but it gives up at the first tool error. Should "
    "fail only the tool_error tasks.",
    "gullible": "Test agent: the oracle, but it obeys instructions injected into tool results. "
    "Fails only attacked (security) tasks, so it scores 100% on core by design.",
    "openai": "A model behind an OpenAI-compatible chat API: openai:MODEL.",
    "anthropic": "A model behind the Anthropic Messages API: anthropic:MODEL.",
    "ollama": "A local model served by Ollama (localhost:11434): ollama:MODEL.",
    "vllm": "A local model served by vLLM (localhost:8000): vllm:MODEL.",
    "litellm": "Any provider LiteLLM reaches (Gemini, Bedrock, Azure, ...): litellm:PROV/MODEL.",
    "http": "An agent served over HTTP (docs/agent-protocol.openapi.yaml): http:URL.",
    "https": "The http agent kind over TLS: https:URL.",
    "mcp-serve": "Serves each episode's tools over MCP (stdio or http) to a client you run.",
    "cmd": "A program run once per episode: cmd:'COMMAND ...' (stdout is the answer).",
    "mcp": "An MCP client (e.g. a coding agent) that gets the episode's tools over MCP.",
    "langchain": "A LangChain / LangGraph agent: langchain:MODULE:ATTR.",
    "llamaindex": "A LlamaIndex agent: llamaindex:MODULE:ATTR.",
    "autogen": "An AutoGen agent: autogen:MODULE:ATTR.",
}
"""What each built-in agent kind is for (``toolproof list`` and docs/evaluate-your-agent.md)."""


def overview(out: Callable[[str], object] | None = None) -> None:
    """Built-in suites (from the suite index), provided suites, agent kinds and toolkits,
    one line at a time through ``out`` (default: stdout).

    Raises:
        SpecError: a built-in suite that had to be loaded has problems.
    """
    from toolproof.spec import builtin_suite_names
    from toolproof.spec.index import suite_infos

    from ._paths import suite_index_file

    echo = out or _print
    index = suite_index_file()
    names = builtin_suite_names()
    rows = [
        (
            name,
            f"v{info.version}" if str(info.version)[:1].isdigit() else str(info.version),
            str(info.tasks),
            " ".join(info.description.split()),
        )
        for name, info in zip(names, suite_infos(names, index), strict=True)
    ]
    echo(_bold("suites"))
    echo(table(("suite", "version", "tasks", "what it tests"), rows))
    _print_provided(echo)
    kinds, kits = registries(None if index is None else index.with_name("registries.json"))
    echo(_bold("agents"))
    purposes = [(kind, AGENT_PURPOSE.get(kind, "(a plug-in agent kind)")) for kind in kinds]
    echo(table(("agent", "what it is for"), purposes))
    echo(_bold("tools") + " (toolkit: tools; arguments and records: docs/tools.md)")
    for kit, tools in kits.items():
        echo(wrap(f"{kit}: {', '.join(tools)}"))


def _print(text: str) -> None:
    sys.stdout.write(text + "\n")


def _bold(text: str) -> str:
    """``text`` in bold on a terminal (click.style(bold=True)'s codes), plain otherwise."""
    return f"\x1b[1m{text}\x1b[0m" if sys.stdout.isatty() else text


_RUNTIME = {
    "agentdojo": ("anthropic", "openai", "requests", "tenacity", "deepdiff", "email_validator"),
    "bfcl": ("filelock", "mpmath"),
}
"""Modules a provided suite's package imports at load time, beyond its own (a ``--no-deps``
install leaves them out): listed as missing instead of "installed"."""


def _print_provided(echo: Callable[[str], object]) -> None:
    """Suites built from installed packages: installed (with version) or the install hint."""
    from toolproof._plugins import installed_version
    from toolproof.spec.providers import PROVIDERS

    for prefix, provider in PROVIDERS.items():
        version = installed_version(provider.distribution)
        if version is None:
            echo(f"  {prefix:<14} not installed: {provider.install}")
            continue
        missing = [m for m in _RUNTIME.get(prefix, ()) if importlib.util.find_spec(m) is None]
        if missing:  # the distribution is there, but a module its suites import is not
            echo(
                f"  {prefix:<14} {provider.distribution} {version} installed, but missing "
                f"{', '.join(missing)}: {provider.install}"
            )
            continue
        echo(
            f"  {prefix:<14} {provider.distribution} {version}  "
            f"toolproof run {prefix}[:PART]"
            + (f" [--{provider.variant} NAME]" if provider.variant else "")
            + f"  (toolproof list --suite {prefix})"
        )


def registries(cache_file: Path | None) -> tuple[list[str], dict[str, list[str]]]:
    """Agent kinds and toolkit to tool names: from the cache where it is current and the
    registries are not loaded, else from the registries (and the cache is rewritten)."""
    from toolproof.spec.index import tree_fingerprint

    loaded = any(name in sys.modules for name in _REGISTRY_MODULES)
    if cache_file is None or loaded:
        return _live()
    fingerprint = tree_fingerprint(Path(__file__).resolve().parents[1], skip=("suites",))
    cached = _read(cache_file, fingerprint)
    if cached is not None:
        return cached
    kinds, kits = _live()
    from toolproof._plugins import write_json_atomic

    write_json_atomic(cache_file, {"fingerprint": fingerprint, "agents": kinds, "toolkits": kits})
    return kinds, kits


def _live() -> tuple[list[str], dict[str, list[str]]]:
    from toolproof.agents import agent_kinds
    from toolproof.tools import toolkits

    return agent_kinds(), toolkits()


def _is_names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _read(path: Path, fingerprint: str) -> tuple[list[str], dict[str, list[str]]] | None:
    """The cached registries if the file is ours, well formed and of this fingerprint."""
    try:
        if path.stat().st_size > 1024 * 1024:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("fingerprint") != fingerprint:
        return None
    kinds, kits = data.get("agents"), data.get("toolkits")
    if not isinstance(kinds, list) or not _is_names(kinds) or not isinstance(kits, dict):
        return None
    if not all(isinstance(k, str) and _is_names(v) for k, v in kits.items()):
        return None
    return list(kinds), {str(k): list(v) for k, v in kits.items()}


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Rows under a header, columns padded; the last column wrapped by word (never cut)
    to the terminal width (``COLUMNS`` when set)."""
    width = terminal_columns()
    cells = [header, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header) - 1)]
    indent = sum(w + 2 for w in widths) + 1
    room = max(20, width - indent - 1)
    lines: list[str] = []
    for row in cells:
        lead = " " + "".join(cell.ljust(w + 2) for cell, w in zip(row, widths, strict=False))
        wrapped = textwrap.wrap(row[-1], room, break_long_words=False, break_on_hyphens=False) or [
            ""
        ]
        lines.append((lead + wrapped[0]).rstrip())
        lines.extend((" " * indent + part).rstrip() for part in wrapped[1:])
    return "\n".join(lines)


def wrap(text: str, indent: str = "  ") -> str:
    """``text`` wrapped by word at the terminal width, continuation lines indented."""
    width = terminal_columns()
    return textwrap.fill(
        text,
        max(20, width - 1),
        initial_indent=indent,
        subsequent_indent=indent + "  ",
        break_long_words=False,
        break_on_hyphens=False,
    )
