"""The worker threads blocking tools run on, and a timeout that starts when the work does.

A blocking tool (a sandboxed command) runs on a thread so the event loop stays free.
With many episodes in flight, calls queue for a thread; if the tool's timeout
counted from the moment the call was queued, queueing would be blamed on the
agent ("the tool took longer than 60s" for a command that ran 0.2 s). So the run
has its own pool, sized to its tool slots (``--max-sandboxes``), and each call's
clock starts when its thread picks it up; the time it waited is returned apart
and recorded in the step (``tool_queue_s``), never charged to the agent.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

DEFAULT_WORKERS = min(32, (os.cpu_count() or 1) + 4)
"""Threads of a pool made without a size (the size Python's default executor has)."""


def _resolve(future: asyncio.Future[float], value: float) -> None:
    if not future.done():
        future.set_result(value)


class ToolPool:
    """Threads for blocking tool calls, shared by every episode of a run.

    Args:
        workers: Calls running at once (the run's tool slots); None: ``DEFAULT_WORKERS``.
    """

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or DEFAULT_WORKERS
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._running = 0  # calls submitted and not yet finished (guarded by _lock)

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:  # made at first use: nothing happens at import or construction
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self.workers, thread_name_prefix="toolproof-tool"
                )
            return self._executor

    async def run(self, fn: Callable[[], T], timeout_s: float) -> tuple[T, float]:
        """Run ``fn`` on a worker thread, at most ``timeout_s`` from when the thread starts it.

        Returns:
            The value and the seconds the call waited for a thread: 0.0 when a thread was
            free as it was submitted (the hand-over to it is not a queue, and recording it
            would make the record depend on the machine's load).

        Raises:
            TimeoutError: it ran longer than ``timeout_s`` (the thread finishes it in the
                background; a sandboxed command has its own wall limit).
        """
        loop = asyncio.get_running_loop()
        started: asyncio.Future[float] = loop.create_future()

        def job() -> T:
            at = time.perf_counter()
            loop.call_soon_threadsafe(_resolve, started, at)
            try:
                return fn()
            finally:
                with self._lock:
                    self._running -= 1

        queued = time.perf_counter()
        pool = self._pool()
        with self._lock:
            full = self._running >= self.workers
            self._running += 1
        try:
            done = asyncio.wrap_future(pool.submit(job), loop=loop)
        except BaseException:
            with self._lock:
                self._running -= 1
            raise
        try:
            begin = await asyncio.shield(started)
        except asyncio.CancelledError:
            if done.cancel():  # not started yet: it never will
                with self._lock:
                    self._running -= 1
            raise
        async with asyncio.timeout(timeout_s - (time.perf_counter() - begin)):
            value = await done
        return value, begin - queued if full else 0.0

    def close(self) -> None:
        """Let the threads end once their calls are done (does not wait)."""
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False, cancel_futures=True)
                self._executor = None
