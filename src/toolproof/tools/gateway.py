"""The one door every tool call goes through.

The gateway checks the tool exists, parses and validates the arguments
against the schema, applies the task's declared faults and call policies,
runs the tool with a timeout, times it and turns every failure the agent
caused into an error result the agent sees: an unknown tool, arguments that
are not a bounded JSON object or break the schema, a result that cannot be
shown. A crash inside a tool on arguments that passed all of that is a bug of
toolproof or of the task and surfaces as :class:`ToolCrash`, which ends the episode;
the gateway also keeps it in :attr:`ToolGateway.crash`, so an agent that catches the
exception (a driven agent's own loop) cannot hide it, and an agent that raises a
ToolCrash of its own is not believed. Only a crash toolproof witnessed as a failure
of its own machinery (the sandbox's command spawner lost) is an infra error; any other
is scored a failure, since the agent chose the arguments that set it off (invariant 8,
``engine/faults.py``).

Blocking tools run on the run's :class:`~toolproof.tools.pool.ToolPool`; their
timeout counts from when a thread starts them, and the wait for a thread is
added to :attr:`ToolGateway.queue_s`, not charged to the agent.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from toolproof.sandbox import SpawnerLost
from toolproof.spec import Fault
from toolproof.trajectory import ToolCall, ToolKind, ToolResult, ToolSchema

from .answer import submitted
from .base import ToolContext, ToolError, ToolImpl
from .pool import ToolPool

CallPolicy = Callable[[ToolCall], str | None]
"""Returns a refusal message for a forbidden call, or None to allow it."""

_FAULT_TEXT = {
    "timeout": "error: the request timed out; the service did not answer in time",
    "server_error": "error: HTTP 500 Internal Server Error from the service",
    "rate_limit": "error: HTTP 429 Too Many Requests; retry later",
}


WITNESSED_FAULTS: tuple[type[BaseException], ...] = (SpawnerLost,)
"""Exceptions out of a tool that only toolproof's own machinery can cause: infra errors."""


_KEY_CHARS = 512
"""Arguments up to this long as JSON have their verdict kept (a bound on the memory)."""
_KEPT = 4096
"""Verdicts kept per tool; the oldest half is dropped when full."""
_VERDICTS: weakref.WeakKeyDictionary[ToolImpl, dict[str, str]] = weakref.WeakKeyDictionary()
"""Per tool object, the argument-check verdict of each short argument JSON already seen:
the same arguments (most calls of a run repeat a few) are validated once. Validation is a
pure function of the schema and the arguments, so the verdict is the same."""


def _argument_errors(tool: ToolImpl, arguments: dict[str, Any]) -> str:
    """Why ``arguments`` break ``tool``'s schema, every problem by path ("" when none).

    Raises:
        RecursionError: the arguments nest deeper than the validator goes.
    """
    key: str | None
    try:
        key = json.dumps(arguments, allow_nan=False)  # key order kept: messages follow it
    except (TypeError, ValueError, RecursionError):  # not plain JSON: checked, not kept
        key = None
    kept: dict[str, str] | None = None
    if key is not None and len(key) <= _KEY_CHARS:
        try:
            kept = _VERDICTS.setdefault(tool, {})
        except TypeError:  # a tool that takes no weak reference: not kept
            kept = None
        if kept is not None and key in kept:
            return kept[key]
    errors = sorted(tool.validator().iter_errors(arguments), key=lambda e: list(e.path))
    details = "; ".join(
        f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors
    )
    if kept is not None and key is not None:
        if len(kept) >= _KEPT:
            for old in list(kept)[: _KEPT // 2]:
                del kept[old]
        kept[key] = details
    return details


class ToolCrash(Exception):
    """A tool raised an unexpected exception: a bug of toolproof or of the task.

    Attributes:
        witnessed: The crash is one of :data:`WITNESSED_FAULTS`, a failure the agent
            could not have caused (the episode is an ``infra_error``); otherwise the
            agent's arguments set it off and the episode is scored a failure.
    """

    def __init__(self, message: str, *, witnessed: bool = False) -> None:
        super().__init__(message)
        self.witnessed = witnessed


def _content(value: Any) -> str:
    if isinstance(value, str):
        return str.__str__(value)
    return json.dumps(value, ensure_ascii=False, default=str)


_DEFAULT_POOL = ToolPool()
"""For gateways made without a run's pool (tests, replays); its threads start at first use."""


class ToolGateway:
    """Validates, faults, times and runs tool calls for one episode."""

    def __init__(
        self,
        tools: Sequence[ToolImpl],
        ctx: ToolContext,
        *,
        faults: Sequence[Fault] = (),
        policies: Sequence[CallPolicy] = (),
        timeout_s: float = 60.0,
        pool: ToolPool | None = None,
    ) -> None:
        self._tools = {t.schema.name: t for t in tools}
        self.ctx = ctx
        self._faults = list(faults)
        self._fault_counts = [0] * len(self._faults)
        self._policies = list(policies)
        self.timeout_s = timeout_s
        self._pool = pool or _DEFAULT_POOL
        self.schemas: list[ToolSchema] = [t.schema for t in tools]
        self._hidden: frozenset[str] = frozenset()
        self.crash: str | None = None
        """Why a tool crashed in this episode (the first crash), or None."""
        self.crash_witnessed = False
        """Whether that first crash is a witnessed fault of toolproof's (an infra error)."""
        self.queue_s = 0.0
        """Seconds this episode's blocking calls waited for a worker thread, in all."""

    def offer_only(self, hidden: set[str]) -> None:
        """Hide these tools from the agent (schemas, calls) until offered again.

        A task with further user turns may offer a tool from a later turn on; a call to
        a hidden tool is answered as a call to an unknown tool.

        Raises:
            ValueError: a name that is not one of the gateway's tools.
        """
        unknown = sorted(hidden - set(self._tools))
        if unknown:
            raise ValueError(f"no tool named {', '.join(map(repr, unknown))} to hide")
        self._hidden = frozenset(hidden)
        self.schemas = [t.schema for name, t in self._tools.items() if name not in hidden]

    def kind(self, name: str) -> ToolKind | None:
        """The kind of a tool, or None if unknown."""
        tool = self._tools.get(name)
        return tool.schema.kind if tool is not None else None

    def _error(self, call: ToolCall, kind: str, message: str, started: float) -> ToolResult:
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=message,
            is_error=True,
            error_kind=kind,
            duration_s=time.perf_counter() - started,
        )

    def note_past_call(self, call: ToolCall) -> None:
        """Count a call made before this gateway existed (a replay), so faults stay in step."""
        if call.name in self._tools:
            self._fault_for(call)

    def _fault_for(self, call: ToolCall) -> Fault | None:
        chosen: Fault | None = None
        for index, fault in enumerate(self._faults):
            if fault.tool != call.name:
                continue
            if any(call.arguments.get(k) != v for k, v in fault.when.items()):
                continue
            self._fault_counts[index] += 1
            if chosen is None and self._fault_counts[index] in fault.calls:
                chosen = fault
        return chosen

    async def call(self, call: ToolCall) -> ToolResult:
        """Run one call and return what the agent sees.

        Raises:
            ToolCrash: the tool itself crashed (``witnessed``: toolproof's own fault).
        """
        started = time.perf_counter()
        if submitted(self.ctx) is not None:  # submit_answer ended the episode
            return self._error(
                call,
                "tool_error",
                "error: the task is over (an answer was submitted); no more tool calls run",
                started,
            )
        tool = self._tools.get(call.name) if call.name not in self._hidden else None
        if tool is None:
            names = ", ".join(sorted(set(self._tools) - self._hidden)) or "none"
            return self._error(
                call, "unknown_tool", f"error: no tool named {call.name!r}; tools: {names}", started
            )
        if call.raw_arguments is not None:
            return self._error(
                call,
                "invalid_arguments",
                f"error: arguments are not valid JSON: {call.raw_arguments[:200]!r}",
                started,
            )
        try:
            details = _argument_errors(tool, call.arguments)
        except RecursionError:  # nested deeper than the validator goes: not a valid call
            return self._error(
                call, "invalid_arguments", "error: arguments are nested too deeply", started
            )
        if details:
            return self._error(
                call, "invalid_arguments", f"error: invalid arguments: {details}", started
            )
        for policy in self._policies:
            refusal = policy(call)
            if refusal is not None:
                return self._error(call, "policy_violation", f"refused: {refusal}", started)
        fault = self._fault_for(call)
        if fault is not None:
            return self._apply_fault(call, fault, started)
        try:
            if tool.blocking:
                arguments = call.arguments
                value, waited = await self._pool.run(
                    lambda: tool.invoke(self.ctx, arguments), self.timeout_s
                )
                self.queue_s += waited
                started += waited  # the call's time is the time it ran
            else:
                value = tool.invoke(self.ctx, call.arguments)
                if inspect.isawaitable(value):
                    value = await asyncio.wait_for(value, self.timeout_s)
        except ToolError as exc:
            if tool.schema.kind is ToolKind.WRITE:
                self.ctx.world.touch()
            return self._error(call, exc.kind, f"error: {exc}", started)
        except TimeoutError:
            return self._error(
                call, "timeout", f"error: the tool took longer than {self.timeout_s:g}s", started
            )
        except Exception as exc:
            if self.crash is None:
                self.crash = f"tool {call.name!r} crashed: {type(exc).__name__}: {exc}"
                self.crash_witnessed = isinstance(exc, WITNESSED_FAULTS)
            raise ToolCrash(self.crash, witnessed=self.crash_witnessed) from exc
        if tool.schema.kind is ToolKind.WRITE:
            self.ctx.world.touch()
        try:
            content = _content(value)
        except (TypeError, ValueError, RecursionError) as exc:  # e.g. a 5,000-digit number
            return self._error(
                call,
                "tool_error",
                f"error: the tool's result cannot be shown ({type(exc).__name__}: {exc})",
                started,
            )
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=content,
            duration_s=time.perf_counter() - started,
        )

    def _apply_fault(self, call: ToolCall, fault: Fault, started: float) -> ToolResult:
        if fault.error in ("malformed", "stale"):
            bogus = fault.result if fault.result is not None else '{"status": ok, "data": [}'
            return ToolResult(
                call_id=call.id,
                name=call.name,
                content=_content(bogus),
                duration_s=time.perf_counter() - started,
            )
        message = fault.message or _FAULT_TEXT.get(fault.error, "error: the tool failed")
        return self._error(call, "fault", message, started)
