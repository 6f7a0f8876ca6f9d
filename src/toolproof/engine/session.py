"""The recorder shared by both ways of driving an agent: steps, loop guard, snapshots.

Digests, snapshots and diffs of a world with a workspace walk its files, which an
agent can make slow (hundreds of thousands of entries, big files to hash): they run
on a thread (:func:`off_loop`), so that other episodes go on meanwhile. The world
cannot change while they run: a harness-driven agent's next turn waits for the step
to be recorded, and a driven agent's calls run one at a time. A records-only world
is digested in place: its digest is cached, and a thread hop would cost more.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from toolproof.agents.limits import (
    MAX_NAME_CHARS,
    AgentFault,
    checked_model_call,
    checked_usage,
    plain_arguments,
)
from toolproof.spec import TaskInstance
from toolproof.tools import ToolGateway
from toolproof.trajectory import (
    Message,
    StateDiff,
    Step,
    ToolCall,
    ToolResult,
    ToolSchema,
    Usage,
    ingress,
)
from toolproof.worlds import BlobStore, World, WorldSnapshot

T = TypeVar("T")


async def off_loop(world: World, fn: Callable[[], T], *, always: bool = False) -> T:
    """Run ``fn`` (work that walks ``world``'s workspace) on a thread; inline without one.

    Args:
        world: The world the work reads; its workspace decides where the work runs.
        fn: The work (a digest, snapshot, diff, scoring).
        always: On a thread even for a records-only world (e.g. a user's custom check).
    """
    if world.workspace is None and not always:
        return fn()
    with _executor_lock:
        lock = _world_locks.setdefault(world, threading.Lock())

    def one_at_a_time() -> T:
        # A walk whose wait was cancelled (a time limit) may still run: the next one waits
        # for it, so that two never walk one workspace (and its scan cache) at once.
        with lock:
            return fn()

    loop = asyncio.get_running_loop()
    # In the caller's context, as asyncio.to_thread does (e.g. the judge's options).
    context = contextvars.copy_context()
    return await loop.run_in_executor(_world_threads(), context.run, one_at_a_time)


_WORLD_THREADS = 32
"""Threads for world work, shared by a process's episodes: a few slow (hostile) workspaces
leave the rest for the others, whatever the number of cores."""
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_world_locks: weakref.WeakKeyDictionary[World, threading.Lock] = weakref.WeakKeyDictionary()


def _world_threads() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:  # made at first use: nothing happens at import
        if _executor is None:
            _executor = ThreadPoolExecutor(_WORLD_THREADS, thread_name_prefix="toolproof-world")
        return _executor


@dataclass(frozen=True)
class _Walk:
    """One walk of the world: its digest and, when it changed, the new snapshot."""

    digest: str
    snapshot: WorldSnapshot | None = None
    ref: str | None = None
    diff: StateDiff | None = None


@dataclass
class Recorder:
    """Runs calls through the gateway and records each turn as a Step."""

    instance: TaskInstance
    world: World
    gateway: ToolGateway
    blobs: BlobStore | None = None
    steps: list[Step] = field(default_factory=list)
    loop_detected: str | None = None
    _seen: dict[tuple[str, str, str], int] = field(default_factory=dict)
    _digest: str = ""
    _snapshot: WorldSnapshot | None = None
    _snapshot_digest: str = ""
    _snapshot_ref: str | None = None
    _pending_usage: Usage | None = None
    _pending_model_calls: list[dict[str, Any]] = field(default_factory=list)
    _call_ids: set[str] = field(default_factory=set)
    last_queue_s: float = 0.0
    """Seconds the calls of the last :meth:`execute` waited for a worker thread."""

    _walked: _Walk | None = None
    """The walk :meth:`execute` made of a workspace world, for :meth:`record` to use."""

    async def start(self) -> WorldSnapshot:
        """Take the initial snapshot (off the loop); return it for scoring."""
        walk = await off_loop(self.world, self._walk)
        assert walk.snapshot is not None  # the first snapshot always differs from none
        self._keep(walk)
        return walk.snapshot

    def _walk(self) -> _Walk:
        """Walk the world; with a change since the last snapshot, store it and diff it.

        Runs on a thread for a workspace world: the world does not change meanwhile.
        """
        snap = self.world.snapshot(self.blobs)
        digest = snap.digest()
        if self._snapshot is not None and digest == self._snapshot_digest:
            return _Walk(digest)
        ref = None
        if self.blobs is not None:
            ref = self.blobs.put_bytes(snap.model_dump_json().encode())
        diff = World.diff(self._snapshot, snap) if self._snapshot is not None else None
        return _Walk(digest, snap, ref, diff)

    def _keep(self, walk: _Walk) -> None:
        self._digest = walk.digest
        if walk.snapshot is not None:
            self._snapshot, self._snapshot_digest = walk.snapshot, walk.digest
            if walk.ref is not None:
                self._snapshot_ref = walk.ref

    @property
    def initial_ref(self) -> str | None:
        """Snapshot reference of the state before the first step (with a blob store)."""
        return self.steps[0].annotations.get("before") if self.steps else self._snapshot_ref

    def add_usage(self, usage: Usage) -> None:
        """Usage to attach to the next recorded step."""
        self._pending_usage = usage if self._pending_usage is None else self._pending_usage + usage

    def add_model_call(self, call: dict[str, Any]) -> None:
        """A model call (seen by the model gateway) to list on the next recorded step."""
        self._pending_model_calls.append(call)

    def _unique_ids(self, calls: list[ToolCall], step: int, owned: bool) -> list[ToolCall]:
        fixed = []
        for n, call in enumerate(calls):
            if not owned:  # the record's own: the agent keeps its object
                call = call.model_copy(deep=True)
            if not call.id or call.id in self._call_ids:
                call = call.model_copy(update={"id": f"call_{step}_{n}"})
            self._call_ids.add(call.id)
            fixed.append(call)
        return fixed

    async def execute(
        self, calls: list[ToolCall], threshold: int, *, owned: bool = False
    ) -> tuple[list[ToolCall], list[ToolResult], float]:
        """Run calls in order; note a loop when the same call meets the same state too often.

        ``owned``: the calls are the harness's own already (made by
        :func:`~toolproof.agents.limits.checked_turn`, which no agent code holds), so the
        record keeps them as they are; otherwise each is copied first.
        """
        calls = self._unique_ids(calls, len(self.steps), owned)
        results: list[ToolResult] = []
        started = time.perf_counter()
        queued = self.gateway.queue_s
        for n, call in enumerate(calls):
            args = json.dumps(call.arguments, sort_keys=True, default=str)
            key = (
                call.name,
                args if call.raw_arguments is None else call.raw_arguments,
                self._digest,
            )
            self._seen[key] = self._seen.get(key, 0) + 1
            if self._seen[key] >= threshold and self.loop_detected is None:
                self.loop_detected = (
                    f"{call.name}({args[:80]}) repeated {self._seen[key]} times on the same state"
                )
            results.append(await self.gateway.call(call))
            if self.gateway.kind(call.name) == "write" and n < len(calls) - 1:
                # the state the next call meets
                self._digest = await off_loop(self.world, self.world.digest)
        if self.world.workspace is not None:  # one walk (on a thread) gives digest and snapshot
            self._walked = await off_loop(self.world, self._walk)
            self._digest = self._walked.digest
        elif any(self.gateway.kind(c.name) == "write" for c in calls):
            self._digest = self.world.digest()  # records only: cached, in place
        self.last_queue_s = self.gateway.queue_s - queued
        return calls, results, time.perf_counter() - started - self.last_queue_s

    async def record(
        self,
        message: Message,
        results: list[ToolResult],
        *,
        agent_s: float,
        tool_s: float,
        usage: Usage | None = None,
        observations: list[Message] | None = None,
        annotations: dict[str, Any] | None = None,
    ) -> Step:
        """Append a step, with the state digest and (when the state changed) a diff and snapshot.

        The snapshot and diff are made off the loop (see :func:`off_loop`).
        """
        if self._pending_usage is not None:
            usage = self._pending_usage if usage is None else usage + self._pending_usage
            self._pending_usage = None
        diff: StateDiff | None = None
        before_ref = self._snapshot_ref
        assert self._snapshot is not None, "start() first"
        walked, self._walked = self._walked, None
        if self._digest != self._snapshot_digest:
            if walked is None or walked.digest != self._digest or walked.snapshot is None:
                walked = await off_loop(self.world, self._walk)
            diff = walked.diff
            self._keep(walked)
        notes = dict(annotations or {})
        if self._pending_model_calls:  # what the model gateway saw before this step
            notes["model_calls"], self._pending_model_calls = self._pending_model_calls, []
        for extra in list(self.world.extras.values()):  # e.g. the lint-error count of the step
            annotate = getattr(extra, "annotate_step", None)
            if callable(annotate):
                notes.update(annotate(len(self.steps), message, results))
        if not self.steps and before_ref is not None:
            notes["before"] = before_ref
        step = Step(
            index=len(self.steps),
            message=message,
            results=results,
            observations=observations or [],
            usage=usage,
            agent_s=agent_s,
            tool_s=tool_s,
            state_digest=self._digest,
            diff=diff,
            snapshot=self._snapshot_ref,
            annotations=notes,
        )
        self.steps.append(step)
        return step


@dataclass
class DrivenSession:
    """The :class:`~toolproof.agents.ToolSession` handed to an agent that owns its loop."""

    recorder: Recorder
    system_prompt: str
    prompt: str
    tools: list[ToolSchema]
    max_steps: int
    loop_threshold: int
    step_limit_hit: bool = False
    on_wait: Callable[[float], None] | None = None
    """Told the seconds a call waited for a worker thread (the episode's clock stops for it)."""
    _last: float = field(default_factory=time.perf_counter)
    _one_at_a_time: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run a tool through the gateway and record the call as one step.

        Calls an agent makes concurrently (a framework running parallel tool calls, several
        MCP requests at once) run one at a time, so each step's diff and snapshot are its own.
        """
        async with self._one_at_a_time:
            return await self._call(name, arguments)

    async def _call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        agent_s = time.perf_counter() - self._last
        call_id = f"call_{len(self.recorder.steps)}_0"
        try:
            call = _driven_call(call_id, name, arguments)
        except AgentFault as exc:  # agent input: the agent sees why, the harness is not hurt
            return ToolResult(
                call_id=call_id,
                name=_plain_name(name),
                content=f"error: {exc}",
                is_error=True,
                error_kind="invalid_arguments",
            )
        if len(self.recorder.steps) >= self.max_steps or self.recorder.loop_detected:
            self.step_limit_hit = self.step_limit_hit or len(self.recorder.steps) >= self.max_steps
            return ToolResult(
                call_id=call.id,
                name=call.name,
                content="error: the episode's step limit is reached; stop",
                is_error=True,
                error_kind="policy_violation",
            )
        calls, results, tool_s = await self.recorder.execute([call], self.loop_threshold)
        waited = self.recorder.last_queue_s
        if waited and self.on_wait is not None:
            self.on_wait(waited)
        await self.recorder.record(
            Message(role="assistant", tool_calls=calls),
            results,
            agent_s=agent_s,
            tool_s=tool_s,
            annotations={"tool_queue_s": round(waited, 6)} if waited > 0.001 else None,
        )
        self._last = time.perf_counter()
        return results[0]

    def record_usage(self, usage: Usage) -> None:
        """Add model usage to the episode (counts and cost through the ingress).

        Raises:
            AgentFault: a count or cost that is not finite, non-negative and bounded, or not
                a ``Usage`` at all (the agent's code called this: it is refused, not stored).
        """
        if not isinstance(usage, Usage):
            raise AgentFault(f"record_usage() takes a Usage, got {type(usage).__name__}")
        self.recorder.add_usage(checked_usage(dict(vars(usage)), "usage"))

    def record_model_call(self, call: dict[str, Any]) -> None:
        """List a model call (plain data, from the model gateway) on the next step.

        Raises:
            AgentFault: not plain, bounded JSON data (refused, not stored).
        """
        self.recorder.add_model_call(checked_model_call(call))


def _plain_name(name: object) -> str:
    """A refused call's tool name as it can be recorded: valid Unicode, short, else empty."""
    try:
        return ingress.text(name, "name", MAX_NAME_CHARS)
    except ingress.IngressError:
        return ""


def _driven_call(call_id: str, name: object, arguments: object) -> ToolCall:
    """A driven agent's call as plain data, through the ingress for agent bytes.

    Raises:
        AgentFault: a name that is not a short string of valid Unicode, arguments that are
            not bounded JSON.
    """
    try:
        plain = ingress.text(name, "the tool name", MAX_NAME_CHARS)
    except ingress.IngressError as exc:
        raise AgentFault(str(exc)) from None
    return ToolCall(id=call_id, name=plain, arguments=plain_arguments(arguments))
