"""Agents that search everything they are handed for the answer key (``python:snoop_agents:X``).

An in-process agent must see only what a remote agent would (ARCHITECTURE.md, invariant 3).
These agents walk, recursively, every object reachable from what toolproof hands them: the
factory's :class:`EpisodeContext`, the factory's caller frame, each :class:`Observation`, the
agent-driven :class:`ToolSession`, its bound methods and the results they return. The walk
follows attributes, ``vars()``/``__dict__``, ``__slots__``, ``__class__``, ``__closure__`` cells,
``__self__``/``__func__``, ``__globals__``, ``__defaults__``/``__kwdefaults__``/``__wrapped__``,
``gc.get_referents`` and the items of every dict, list, tuple and set. It does not call
anything it finds and it does not enter modules (``sys.modules`` would be everything), nor
the insides of classes and functions from outside toolproof (pydantic's, the standard
library's): their module state holds no episode's data, and walking it would walk all of
Python.

What each agent reached is kept in :data:`REACHED` for the test to search.
"""

from __future__ import annotations

import gc
import os
import sys
import types
from typing import Any

from toolproof.agents import AgentTurn, EpisodeContext, Observation, ToolSession

_FOLLOW = (
    "__class__",
    "__closure__",
    "__self__",
    "__func__",
    "__globals__",
    "__defaults__",
    "__kwdefaults__",
    "__wrapped__",
    "cell_contents",
)

REACHED: dict[str, list[Walk]] = {}
"""By task id: one :class:`Walk` per snooping agent made (reset it in a test)."""


class Walk:
    """Everything reachable from some roots: the objects (kept alive) and their strings
    (numbers as their ``str``)."""

    def __init__(self) -> None:
        self.objects: dict[int, Any] = {}
        self.strings: set[str] = set()

    def add(self, *roots: Any, limit: int = 2_000_000) -> None:
        """Walk from ``roots`` (objects already seen are not walked again)."""
        stack = list(roots)
        while stack:
            obj = stack.pop()
            if id(obj) in self.objects or isinstance(obj, types.ModuleType):
                continue
            if len(self.objects) >= limit:
                raise RuntimeError(f"the walk passed {limit} objects; the test needs a new bound")
            self.objects[id(obj)] = obj
            if isinstance(obj, str):
                self.strings.add(obj)
                continue
            if isinstance(obj, int | float) and not isinstance(obj, bool):
                self.strings.add(str(obj))  # numbers are searched for as their text
                continue
            if isinstance(obj, bytes | bool | type(None)):
                continue
            stack.extend(children(obj))

    def instances_of(self, *classes: type) -> list[Any]:
        """The objects reached that are instances (not subclasses) of ``classes``."""
        return [
            o for o in self.objects.values() if not isinstance(o, type) and isinstance(o, classes)
        ]


def _ours(obj: Any) -> bool:
    """Whether a class or function is toolproof's or this test's (the others are leaves)."""
    module = getattr(obj, "__module__", None) or ""
    return module.startswith(("toolproof", "snoop_agents", "toolproof_test_agents"))


def _get(obj: Any, name: str, found: list[Any]) -> None:
    """``getattr``, ignoring whatever a lazy attribute raises (pytest's ``mark`` fails loudly)."""
    try:
        found.append(getattr(obj, name))
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # an attribute that cannot be read leads nowhere
        pass


def children(obj: Any) -> list[Any]:
    """Every object ``obj`` leads to by the means the module docstring lists.

    Classes and functions from outside toolproof (pydantic's, the standard library's) are
    leaves: their insides hold no episode's data, and walking them would walk all of Python.
    """
    if isinstance(obj, type | types.FunctionType | types.BuiltinFunctionType) and not _ours(obj):
        return [] if not isinstance(obj, types.FunctionType) else _function_parts(obj)
    found: list[Any] = []
    if isinstance(obj, dict):
        found.extend(obj.keys())
        found.extend(obj.values())
    elif isinstance(obj, list | tuple | set | frozenset):
        found.extend(obj)
    _get(obj, "__dict__", found)
    for klass in getattr(type(obj), "__mro__", ()):
        slots = klass.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            _get(obj, name, found)
    for name in _FOLLOW:
        _get(obj, name, found)
    if isinstance(obj, types.FrameType):
        found.append(obj.f_locals)
    found.extend(gc.get_referents(obj))
    return found


def _function_parts(fn: types.FunctionType) -> list[Any]:
    """A foreign function's own state (closure, defaults, wrapped), not its module's globals."""
    parts: list[Any] = [fn.__defaults__, fn.__kwdefaults__, getattr(fn, "__wrapped__", None)]
    parts.extend(cell for cell in fn.__closure__ or ())
    return parts


def _handing_frames() -> list[Any]:
    """The locals of the frames that handed this agent over: every caller inside
    ``toolproof.agents`` (the ``python:`` wrapper, ``make_agent``). The engine's frames above
    them are not walked: they hold the task, as any in-process caller's stack does."""
    frames: list[Any] = []
    frame = sys._getframe(2)
    while (
        frame is not None and f"{os.sep}toolproof{os.sep}agents{os.sep}" in frame.f_code.co_filename
    ):
        frames.append(dict(frame.f_locals))
        frame = frame.f_back
    assert frames, "the agent was made through toolproof.agents"
    return frames


class Snooper:
    """A harness-driven agent: walks its context, its caller's frame and each observation."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.walk = Walk()
        self.walk.add(ctx, *_handing_frames())
        REACHED.setdefault(ctx.task_id, []).append(self.walk)
        self._tools = ctx.tools

    async def act(self, observation: Observation) -> AgentTurn:
        """Walk the observation; call a tool (to see a result), then answer."""
        self.walk.add(observation, self._tools)
        if observation.step == 0 and self._tools:
            tool = next((t for t in self._tools if not t.parameters.get("required")), None)
            tool = tool or self._tools[0]
            from toolproof.trajectory import ToolCall

            return AgentTurn(tool_calls=[ToolCall(id="snoop", name=tool.name, arguments={})])
        return AgentTurn(content="nothing found")


class DrivenSnooper:
    """An agent-driven agent: walks the session, its methods and a tool result."""

    def __init__(self, ctx: EpisodeContext) -> None:
        self.walk = Walk()
        self.walk.add(ctx)
        REACHED.setdefault(ctx.task_id, []).append(self.walk)

    async def run(self, session: ToolSession) -> str:
        """Walk everything the session offers; one call, walk its result too."""
        self.walk.add(session, session.call_tool, session.record_usage, session.tools)
        result = await session.call_tool(session.tools[0].name, {})
        self.walk.add(result, session)
        return "nothing found"
