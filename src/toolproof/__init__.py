"""toolproof: an executable, reproducible benchmarking suite for tool-using AI agents.

The public API is the list in ``__all__``; everything else is a private module or
a sub-package. Names load lazily on first use, so ``import toolproof`` stays cheap.

Map::

    spec (Task, Suite, load_suite) -> tools (@tool, ToolContext) -> agents (Agent, @agent)
        -> scoring (@check, CheckResult) -> engine (RunConfig, Runner) -> results (RunReader)
"""

from __future__ import annotations

from toolproof._lazy import load_name

from ._version import __version__

TYPE_CHECKING = False  # typing's own (importing typing costs a start-up a third more)
if TYPE_CHECKING:
    from typing import Any

if TYPE_CHECKING:  # the public names, for type checkers (they load lazily: __getattr__)
    from .agents import Agent, AgentTurn, DrivenAgent, Observation, ToolSession, agent
    from .engine import RunConfig, Runner
    from .results import EpisodeRecord, RunReader
    from .scoring import CheckResult, ScoringContext, check, check_function
    from .spec import SpecError, Suite, Task, TaskInstance, ToolproofError, load_suite
    from .tools import ToolContext, ToolError, tool
    from .trajectory import (
        Message,
        Step,
        Termination,
        ToolCall,
        ToolKind,
        ToolResult,
        Trajectory,
        Usage,
    )

_HOMES = {
    "agents": ("Agent", "AgentTurn", "DrivenAgent", "Observation", "ToolSession", "agent"),
    "engine": ("RunConfig", "Runner"),
    "results": ("EpisodeRecord", "RunReader"),
    "scoring": ("CheckResult", "ScoringContext", "check", "check_function"),
    "spec": ("SpecError", "Suite", "Task", "TaskInstance", "ToolproofError", "load_suite"),
    "tools": ("ToolContext", "ToolError", "tool"),
    "trajectory": (
        "Message",
        "Step",
        "Termination",
        "ToolCall",
        "ToolKind",
        "ToolResult",
        "Trajectory",
        "Usage",
    ),
}
_HOME_OF = {name: package for package, names in _HOMES.items() for name in names}

__all__ = [
    "Agent",
    "AgentTurn",
    "CheckResult",
    "DrivenAgent",
    "EpisodeRecord",
    "Message",
    "Observation",
    "RunConfig",
    "RunReader",
    "Runner",
    "ScoringContext",
    "SpecError",
    "Step",
    "Suite",
    "Task",
    "TaskInstance",
    "Termination",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolKind",
    "ToolResult",
    "ToolSession",
    "ToolproofError",
    "Trajectory",
    "Usage",
    "__version__",
    "agent",
    "check",
    "check_function",
    "load_suite",
    "tool",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its sub-package on first use, then keep it here."""
    return load_name(__name__, _HOME_OF, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
