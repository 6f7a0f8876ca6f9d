"""Spare daemon threads: reused from job to job, never handed a job while one still runs."""

from __future__ import annotations

import threading

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
