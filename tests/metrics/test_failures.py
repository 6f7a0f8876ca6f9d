"""Why episodes failed: recorded errors first, checks after, infra errors apart."""

from __future__ import annotations

from metrics_helpers import check, record

from toolproof.metrics.failures import (
    MAX_ERROR,
    failed_episode,
    failure_report,
    infra_banner,
    recorded_error,
)


def test_the_recorded_error_comes_first_and_vetoes_lead_the_checks() -> None:
    rec = record(
        "t",
        passed=False,
        termination="agent_error",
        failure_mode="agent_error",
        checks=[
            check("output", False, name="total", detail="answer does not state 82"),
            check("evidence", False, name="claims", detail="forbidden claim", veto=True),
            check("state", True, name="stock"),
        ],
    )
    rec.trajectory.error = "connection failed: ConnectError('refused')"
    entry = failed_episode(rec)
    assert entry.error == entry.detail == "connection failed: ConnectError('refused')"
    assert entry.checks == ("claims: forbidden claim", "total: answer does not state 82")
    assert entry.check == "claims"
    rec.trajectory.error = None
    assert failed_episode(rec).detail == "forbidden claim"  # no error: the first check says


def test_an_infra_error_falls_back_to_its_last_attempt_and_long_text_is_clipped() -> None:
    rec = record("t", passed=False, termination="infra_error", attempts=3)
    rec.infra_errors = ["first: timeout", "last: " + "x" * 5000]
    error = recorded_error(rec)
    assert error is not None and error.startswith("last: ") and len(error) == MAX_ERROR
    assert error.endswith("...")


def test_infra_errors_are_kept_apart_and_counted() -> None:
    down = record("d", passed=False, termination="infra_error")
    down.trajectory.error = "sandbox: bwrap failed"
    records = [
        record("a", passed=False, failure_mode="wrong_answer"),
        record("b", passed=False, failure_mode="wrong_answer"),
        record("c", passed=False),
        record("e"),
        down,
    ]
    report = failure_report(records)
    assert (report.episodes, report.scored, report.failed) == (5, 4, 3)
    assert list(report.groups) == ["wrong_answer", "unclassified"]
    assert [e.key for e in report.infra] == ["d#0"]
    assert report.banner() == (
        "1 of 5 episodes were infrastructure errors: not scored; first error: sandbox: bwrap failed"
    )
    assert failure_report([records[3]]).banner() is None
    assert infra_banner(2, 2, None) == (
        "2 of 2 episodes were infrastructure errors: not scored (nothing was scored)"
    )
