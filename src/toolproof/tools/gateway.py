"""The one door every tool call goes through.

The gateway checks the tool exists, parses and validates the arguments
against the schema, applies the task's declared faults and call policies,
runs the tool with a timeout, times it and turns every failure the agent
caused into an error result the agent sees. A crash inside a tool is a
harness bug and surfaces as :class:`ToolCrash` (an infra error), never as an
agent failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from toolproof.spec import Fault
from toolproof.trajectory import ToolCall, ToolKind, ToolResult, ToolSchema

from .base import ToolContext, ToolError, ToolImpl

CallPolicy = Callable[[ToolCall], str | None]
"""Returns a refusal message for a forbidden call, or None to allow it."""

_FAULT_TEXT = {
    "timeout": "error: the request timed out; the service did not answer in time",
    "server_error": "error: HTTP 500 Internal Server Error from the service",
    "rate_limit": "error: HTTP 429 Too Many Requests; retry later",
}


class ToolCrash(Exception):
    """A tool raised an unexpected exception: a harness bug, reported as infra_error."""


def _content(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


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
        blocking_slots: asyncio.Semaphore | None = None,
    ) -> None:
        self._tools = {t.schema.name: t for t in tools}
        self.ctx = ctx
        self._faults = list(faults)
        self._fault_counts = [0] * len(self._faults)
        self._policies = list(policies)
        self.timeout_s = timeout_s
        self._blocking_slots = blocking_slots
        self.schemas: list[ToolSchema] = [t.schema for t in tools]

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
            ToolCrash: the tool itself crashed (not the agent's fault).
        """
        started = time.perf_counter()
        tool = self._tools.get(call.name)
        if tool is None:
            names = ", ".join(sorted(self._tools)) or "none"
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
        errors = sorted(tool.validator().iter_errors(call.arguments), key=lambda e: list(e.path))
        if errors:
            details = "; ".join(
                f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors
            )
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
                async with self._blocking_slots or contextlib.nullcontext():
                    value = await asyncio.wait_for(
                        asyncio.to_thread(tool.invoke, self.ctx, call.arguments), self.timeout_s
                    )
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
            raise ToolCrash(f"tool {call.name!r} crashed: {type(exc).__name__}: {exc}") from exc
        if tool.schema.kind is ToolKind.WRITE:
            self.ctx.world.touch()
        return ToolResult(
            call_id=call.id,
            name=call.name,
            content=_content(value),
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
