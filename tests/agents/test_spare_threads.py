"""Spare daemon threads: reused from job to job, never handed a job while one still runs."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from toolproof.agents.builtin import _spare_threads
from toolproof.agents.builtin._spare_threads import idle_count, run_on_spare


def _run_and_park(idents: list[int], *, raise_: bool = False) -> None:
    """Run one job; return once its thread is idle again (the last parked: taken next)."""
    done = threading.Event()
    idle_during: list[int] = []

    def job() -> None:
        idents.append(threading.get_ident())
        idle_during.append(idle_count())
        done.set()
        if raise_:
            raise SystemExit("a job's own exit is contained to it")

    run_on_spare(job, "test-spare")
    assert done.wait(30)
    parked = threading.Event()
    for _ in range(30_000):  # a condition to wait for, not a timing: at most 30 s
        if idle_count() > idle_during[0]:
            return
        parked.wait(0.001)
    raise AssertionError("the job's thread never became idle again")


def test_a_finished_jobs_thread_runs_the_next_job_and_survives_a_raise() -> None:
    idents: list[int] = []
    for raise_ in (True, False, False):
        _run_and_park(idents, raise_=raise_)
    assert len(idents) == 3 and len(set(idents)) == 1, "one thread ran all three jobs"


def test_a_blocked_job_keeps_its_thread_and_delays_no_other_job() -> None:
    release, started = threading.Event(), threading.Event()
    blocked_on: list[int] = []

    def blocker() -> None:
        blocked_on.append(threading.get_ident())
        started.set()
        release.wait(60)

    run_on_spare(blocker, "test-blocked")
    assert started.wait(30)
    try:
        others: list[int] = []
        for _ in range(3):
            _run_and_park(others)  # each finishes while the blocker still holds its thread
        assert blocked_on[0] not in others
    finally:
        release.set()


def test_an_idle_thread_ends_after_its_idle_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_spare_threads, "IDLE_S", 0.05)
    ran: list[threading.Thread] = []
    done = threading.Event()

    def job() -> None:
        ran.append(threading.current_thread())
        done.set()

    run_on_spare(job, "test-idle-end")
    assert done.wait(30)
    ran[0].join(30)  # nothing gives it a job: it waits its idle time, then ends
    assert not ran[0].is_alive()


def test_a_thread_taken_just_as_its_idle_time_ends_runs_its_job(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The thread times out, but before it can retire a job takes it: it runs the job."""
    monkeypatch.setattr(_spare_threads, "IDLE_S", 0.05)
    real_retire = _spare_threads._retire
    threads: list[threading.Thread] = []
    second = threading.Event()

    def second_job() -> None:
        threads.append(threading.current_thread())
        second.set()

    def retire_late(spare: Any) -> bool:
        if threading.current_thread() is not threads[0]:  # another spare timing out
            return real_retire(spare)
        with _spare_threads._lock:  # this spare alone is idle while the job is handed out
            others = [s for s in _spare_threads._idle if s is not spare]
            _spare_threads._idle[:] = [spare]
        run_on_spare(second_job, "test-taken-late")  # takes this very spare
        with _spare_threads._lock:
            _spare_threads._idle.extend(others)
        return real_retire(spare)  # no longer idle: it must wait for the job

    first = threading.Event()

    def first_job() -> None:
        threads.append(threading.current_thread())
        monkeypatch.setattr(_spare_threads, "_retire", retire_late)
        first.set()

    run_on_spare(first_job, "test-taken-first")
    assert first.wait(30)
    assert second.wait(30)
    assert threads[0] is threads[1]
