"""Turn a task's ``tools`` list into the tool implementations of an episode."""

from __future__ import annotations

from toolproof.spec import Problem, SpecError, Task

from .answer import SubmitAnswerTool
from .base import ToolImpl, registry
from .inline import InlineToolImpl
from .toolkits import load_builtin, load_tool, load_toolkit

_kits_cache: tuple[int, dict[str, list[str]]] | None = None


def toolkits() -> dict[str, list[str]]:
    """Toolkit name to its tool names (cached until another tool is registered)."""
    global _kits_cache
    load_builtin()
    tools = registry()
    if _kits_cache is not None and _kits_cache[0] == len(tools):
        return _kits_cache[1]
    kits: dict[str, list[str]] = {}
    for tool in tools.values():
        kits.setdefault(tool.toolkit, []).append(tool.name)
    result = {k: sorted(v) for k, v in sorted(kits.items())}
    _kits_cache = (len(tools), result)
    return result


def toolkit_tools(kit: str) -> list[str]:
    """The names of the tools of toolkit ``kit``, sorted (as :func:`toolkits` lists them),
    importing only that built-in toolkit when it is one."""
    load_toolkit(kit)
    return sorted(name for name, tool in registry().items() if tool.toolkit == kit)


def resolve_tools(task: Task) -> list[ToolImpl]:
    """The tools a task offers, in the task's order; ``submit_answer`` last when the
    task declares a typed answer (its ``answer`` check).

    Raises:
        SpecError: a name that no toolkit provides, with the known names.
    """
    tools: list[ToolImpl] = []
    problems: list[Problem] = []
    for entry in task.tools:
        if not isinstance(entry, str):
            tools.append(InlineToolImpl(entry))
        elif entry.endswith(".*"):
            kit = entry[:-2]
            members = toolkit_tools(kit)
            if not members:
                problems.append(
                    Problem(
                        None,
                        None,
                        f"task {task.id}: tools",
                        f"no toolkit {kit!r}; toolkits: {', '.join(toolkits())}",
                    )
                )
                continue
            tools.extend(registry()[name] for name in members)
        else:
            load_tool(entry)
            if entry in registry():
                tools.append(registry()[entry])
            else:
                problems.append(
                    Problem(
                        None,
                        None,
                        f"task {task.id}: tools",
                        f"no tool {entry!r}; see `toolproof list` for the known tools",
                    )
                )
    if problems:
        raise SpecError(problems)
    seen: set[str] = set()
    unique: list[ToolImpl] = []
    for impl in tools:
        if impl.schema.name not in seen:
            seen.add(impl.schema.name)
            unique.append(impl)
    answer = task.answer
    if answer is not None:
        unique.append(SubmitAnswerTool(answer))
    return unique
