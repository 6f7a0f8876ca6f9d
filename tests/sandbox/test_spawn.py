"""run_tree: exit statuses, pipes, deadline, output cap and leftover processes."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.sandbox import SandboxError
from toolproof.sandbox._spawn import Outcome, _pidfd, _wait_exit, run_tree

ENV = {"PATH": "/usr/bin:/bin"}


def run(
    script: str, *, stdin: bytes | None = None, wall_s: float = 30.0, cap: int = 10**6
) -> Outcome:
    return run_tree(
        ["/bin/sh", "-c", script],
        env=ENV,
        cwd="/",
        stdin=stdin,
        wall_s=wall_s,
        output_bytes=cap,
    )


def test_exit_status_and_streams() -> None:
    outcome = run("echo out; echo err >&2; exit 7")
    assert (outcome.returncode, outcome.stdout, outcome.stderr) == (7, b"out\n", b"err\n")
    assert outcome.stopped is None and not outcome.truncated


def test_signal_deaths_are_reported_like_a_shell() -> None:
    assert run("kill -9 $$").returncode == 128 + 9
    assert run("kill -TERM $$").returncode == 128 + 15


def test_large_stdin_round_trips() -> None:
    data = os.urandom(3 * 1024 * 1024)
    outcome = run("cat", stdin=data, cap=10 * 1024 * 1024)
    assert outcome.stdout == data


def test_stdin_ignored_by_the_command_does_not_block() -> None:
    outcome = run("exit 0", stdin=b"x" * (4 * 1024 * 1024))
    assert outcome.returncode == 0


def test_deadline_kills_the_tree(leftovers: Callable[[str], list[int]]) -> None:
    token = "314159"
    start = time.monotonic()
    outcome = run(f"sleep {token} & sleep {token}", wall_s=1.0)
    assert outcome.stopped == "wall_time" and outcome.returncode is None
    assert time.monotonic() - start < 20  # generous: the machine may be loaded
    assert leftovers(f"sleep {token}") == []


def test_output_cap_stops_a_flood() -> None:
    outcome = run("yes", cap=5000)
    assert outcome.stopped == "output" and outcome.truncated
    assert len(outcome.stdout) + len(outcome.stderr) == 5000


def test_output_cap_counts_both_streams() -> None:
    outcome = run("head -c 3000 /dev/zero; head -c 3000 /dev/zero >&2", cap=4000)
    # The command may finish before the harness reads the excess: then it keeps its
    # exit status, and the output is still marked as truncated.
    assert outcome.truncated and outcome.stopped in ("output", None)
    assert outcome.returncode == (None if outcome.stopped else 0)
    assert len(outcome.stdout) + len(outcome.stderr) == 4000


def test_background_leftovers_are_killed_and_do_not_hold_pipes(
    leftovers: Callable[[str], list[int]],
) -> None:
    token = "271828"
    start = time.monotonic()
    outcome = run(f"sleep {token} & echo started")
    assert outcome.returncode == 0 and outcome.stdout == b"started\n"
    assert time.monotonic() - start < 20
    assert leftovers(f"sleep {token}") == []


def test_a_command_that_closes_its_pipes_is_still_waited_for(tmp_path: Path) -> None:
    marker = tmp_path / "done"
    outcome = run(f"exec >&- 2>&-; sleep 0.5; touch {marker}; exit 3")
    assert outcome.returncode == 3 and marker.exists()


def test_a_program_that_cannot_start_is_a_sandbox_error(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"could not start '/no/such/program'"):
        run_tree(
            ["/no/such/program"],
            env=ENV,
            cwd=str(tmp_path),
            stdin=None,
            wall_s=5,
            output_bytes=100,
        )


def test_the_exit_wait_wakes_when_the_process_exits() -> None:
    """After the pipes close, the exit is seen at once, not after a grown poll interval."""
    proc = subprocess.Popen(["sleep", "0.2"])
    pidfd = _pidfd(proc.pid)
    assert pidfd is not None  # Linux 5.3+: the CI kernel has it
    try:
        started = time.monotonic()
        _wait_exit(pidfd, 60.0)
        assert time.monotonic() - started < 30  # woken by the exit, not the timeout
        assert proc.poll() is not None
    finally:
        os.close(pidfd)


def test_time_spent_in_on_start_is_not_charged_to_the_command() -> None:
    """Harness work done while the command waits (the owner walk) eats no wall limit."""
    done = threading.Event()

    def slow_start(proc: object) -> None:
        done.wait(3.0)  # longer than the wall limit below; nothing sets it

    outcome = run_tree(
        ["/bin/sh", "-c", "sleep 3.5; exit 4"], env=ENV, cwd="/", stdin=None, wall_s=2.5,
        output_bytes=100, on_start=slow_start,
    )  # fmt: skip
    assert outcome.stopped is None and outcome.returncode == 4
