"""Daemon threads reused from job to job: a thread per job without a thread start per job.

A ``python:`` agent runs on a thread of its own (``_own_thread``), and its factory on
another (``engine/building.py``): a blocking agent then stalls only its episode. Starting
two threads per episode cost about a quarter of a millisecond of CPU at idle, more under
load. :func:`run_on_spare` hands a job to a thread that finished its last one and waits
for the next, or starts one when none waits. A job that never returns keeps its thread
(it is not idle, so nothing else is given to it); it never delays another job.

An idle thread ends after :data:`IDLE_S` without work, and at most :data:`KEEP_IDLE`
wait at once, so a burst of episodes leaves no crowd of threads behind. A job runs with
nothing of the previous one on its frames; each job gets the thread named after it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

IDLE_S = 10.0
"""Seconds an idle thread waits for its next job before it ends."""
KEEP_IDLE = 2048
"""Idle threads kept at most (one per episode in flight is what a run needs)."""


class _Spare:
    """One reusable daemon thread: runs the job it is given, then waits to be given another."""

    __slots__ = ("_job", "_name", "_wake")

    def __init__(self, job: Callable[[], object], name: str) -> None:
        self._job: Callable[[], object] | None = job
        self._name = name
        # A lock used as a one-shot signal: held until give() releases it (half the CPU of
        # a threading.Event's condition variable, and one give per wait).
        self._wake = threading.Lock()
        self._wake.acquire()

    def start(self) -> None:
        threading.Thread(target=self._main, name=self._name, daemon=True).start()

    def give(self, job: Callable[[], object], name: str) -> None:
        """Hand the (idle) thread its next job."""
        self._job, self._name = job, name
        self._wake.release()

    def _main(self) -> None:
        while True:
            job, self._job = self._job, None
            assert job is not None
            threading.current_thread().name = self._name
            with contextlib.suppress(BaseException):  # the job reports its own outcome
                job()
            del job  # the finished job's closure is not kept while the thread waits
            if not _park(self):
                return
            if not self._wake.acquire(timeout=IDLE_S):
                if _retire(self):
                    return
                self._wake.acquire()  # taken just as it timed out: its job is on the way


_idle: list[_Spare] = []
_lock = threading.Lock()


def _park(spare: _Spare) -> bool:
    """Put ``spare`` on the idle list; False when enough wait already (the thread ends)."""
    with _lock:
        if len(_idle) >= KEEP_IDLE:
            return False
        _idle.append(spare)
        return True


def _retire(spare: _Spare) -> bool:
    """Take a timed-out ``spare`` off the idle list; False when a job was just handed to it."""
    with _lock:
        if spare in _idle:
            _idle.remove(spare)
            return True
        return False


def run_on_spare(job: Callable[[], object], name: str) -> None:
    """Run ``job()`` on an idle daemon thread, or on a new one when none is idle.

    ``job`` must report its own outcome (exceptions out of it are dropped) and is not
    waited for: the caller learns of its end from the job itself.
    """
    with _lock:
        spare = _idle.pop() if _idle else None
    if spare is None:
        _Spare(job, name).start()
    else:
        spare.give(job, name)


def idle_count() -> int:
    """How many spare threads wait for a job now (for tests)."""
    with _lock:
        return len(_idle)
