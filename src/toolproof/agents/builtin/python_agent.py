"""``python:module:attr``: a user's own agent object, class or factory."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

from toolproof.spec import Problem, SpecError

from ..base import (
    Agent,
    AgentFactory,
    AgentSpec,
    DrivenAgent,
    EpisodeContext,
    KeyedFactory,
    agent,
)


def import_target(target: str, what: str) -> Any:
    """Import ``module:attr`` (the current directory is importable).

    Raises:
        SpecError: malformed target, module or attribute not found.
    """
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    what,
                    f"{target!r} must look like 'module:attr', e.g. 'my_agent:agent'",
                )
            ]
        )
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    what,
                    f"cannot import module {module_name!r}: {exc}; check PYTHONPATH",
                )
            ]
        ) from exc
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SpecError(
                [Problem(None, None, what, f"module {module_name!r} has no attribute {attr!r}")]
            )
        obj = getattr(obj, part)
    return obj


@agent("python")
def build(spec: AgentSpec) -> AgentFactory:
    """Accepts an agent instance (shared by all episodes: keep it stateless), an agent
    class taking no arguments or an EpisodeContext, or a factory ``(EpisodeContext) -> agent``.

    The factory gets the :class:`EpisodeContext` only, never the task instance: a user's
    agent is blind to the answer key, so a keyed built-in factory is refused here."""
    if spec.target is None:
        raise SpecError(
            [Problem(None, None, "agent", "python agents need a target: python:module:attr")]
        )
    obj = import_target(spec.target, "agent")
    if isinstance(obj, KeyedFactory):
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "agent",
                    f"{spec.target} is a built-in agent's factory that plays the answer key; "
                    "python: agents are never given the task instance. Run a built-in by its "
                    "name (e.g. --agent oracle) or write a factory (EpisodeContext) -> agent",
                )
            ]
        )
    if isinstance(obj, Agent | DrivenAgent) and not inspect.isclass(obj):
        return lambda ctx: obj
    if callable(obj):
        takes_ctx = True
        try:
            params = inspect.signature(obj).parameters
            takes_ctx = len(params) > 0
        except (TypeError, ValueError):
            pass

        def factory(ctx: EpisodeContext) -> Agent | DrivenAgent:
            made = obj(ctx) if takes_ctx else obj()
            if not isinstance(made, Agent | DrivenAgent):
                raise TypeError(
                    f"{spec.target} returned {type(made).__name__}, which has no act() or run()"
                )
            return made

        return factory
    raise SpecError(
        [
            Problem(
                None,
                None,
                "agent",
                f"{spec.target} is neither an agent (with act/run) nor a factory",
            )
        ]
    )
