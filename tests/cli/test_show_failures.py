"""``toolproof show --failures`` says why: the recorded agent or infra error first, then the
failing checks; infra-error episodes are counted and listed, never "0 failed of 3"."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest

if str(Path(__file__).parent) not in sys.path:  # test_compare_gates' helpers
    sys.path.insert(0, str(Path(__file__).parent))
from test_compare_gates import REFUSED, Make, episode, make_run, toolproof

from toolproof.engine import RunConfig, Runner
from toolproof.spec import resolve_suite_path

__all__ = ["make_run"]  # the fixture, shared


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_http_agent_shows_the_connection_error_before_the_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent=f"http://127.0.0.1:{_closed_port()}/act",
        agent_options={"max_retries": 0, "backoff_base": 0.001, "timeout": 30},
        tasks=["stock-lookup", "calc-*"],
        snapshots=False,
    )
    asyncio.run(Runner(config, tmp_path / "run", parallel=2).run())
    code, out, _ = toolproof(capsys, "show", tmp_path / "run", "--failures")
    assert code == 0
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("  stock-lookup#0"))
    assert "agent_error" in lines[first]
    assert lines[first + 1].startswith("    error: ") and "connection failed" in lines[first + 1]
    # the checks come after the error, if listed at all
    assert all("connection failed" not in line for line in lines[first + 2 :][:3])


def test_infra_errors_are_counted_and_listed_with_their_error(
    make_run: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    run = make_run("infra", [episode(t, infra=True) for t in ("t0", "t1", "t2")])
    code, out, _ = toolproof(capsys, "show", run, "--failures")
    assert code == 0
    assert "0 failed episodes" not in out  # never "0 failed episodes of 3"
    assert out.splitlines()[0].startswith(
        "3 of 3 episodes were infrastructure errors: not scored (nothing was scored); "
        "first error: connection refused"
    )
    assert "no episode was scored: all 3 were infrastructure errors" in out
    assert "infra_error (3, not scored" in out
    assert out.count("    error: " + REFUSED) == 3  # and once in the banner
    assert "t1#0  step -  fail/infra_error, 3 attempts" in out


def test_a_mixed_run_groups_failures_by_mode_and_infra_apart(
    make_run: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    from metrics_helpers import check, record

    wrong = record(
        "calc",
        passed=False,
        failure_mode="wrong_answer",
        checks=[check("output", False, name="total", detail="answer does not state 82")],
    )
    crashed = record("crash", passed=False, termination="agent_error", failure_mode="agent_error")
    crashed.trajectory.error = "agent crashed: [red]KeyError[/red] 'x'\x1b[31m"  # hostile text
    run = make_run("mixed", [wrong, crashed, episode("ok"), episode("down", infra=True)])
    code, out, _ = toolproof(capsys, "show", run, "--failures")
    assert code == 0
    assert out.splitlines()[0].startswith("1 of 4 episodes were infrastructure errors")
    assert "2 failed episodes of 3 scored (4 episodes, 1 infrastructure errors)" in out
    assert "\nwrong_answer (1)" in out and "\nagent_error (1)" in out
    assert "    check total: answer does not state 82" in out
    assert "    error: agent crashed: [red]KeyError[/red] 'x'" in out  # printed, not rendered
    assert out.index("\ninfra_error (1") > out.index("\nwrong_answer (1)")
