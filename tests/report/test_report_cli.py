"""``toolproof report`` and ``toolproof view`` on the command line."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def test_report_writes_html(
    invoke: Callable[..., Any], core_runs: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "report.html"
    result = invoke(
        "report",
        core_runs["random"],
        "--compare",
        core_runs["oracle"],
        "--allow-mismatch",
        "-o",
        out,
    )
    assert result.code == 0, result.err
    assert f"wrote {out}" in result.out
    assert "Before and after" in out.read_text(encoding="utf-8")


def test_report_names_a_missing_run(invoke: Callable[..., Any], tmp_path: Path) -> None:
    result = invoke("report", tmp_path)
    assert result.code != 0
    assert "is not a toolproof run" in result.err


def test_report_explains_a_mismatch(
    invoke: Callable[..., Any],
    core_runs: dict[str, Path],
    make_run: Callable[..., Path],
    tmp_path: Path,
) -> None:
    from report_helpers import record

    other = make_run("other", [record()])
    result = invoke("report", core_runs["random"], "--compare", other, "-o", tmp_path / "r.html")
    assert result.code == 2
    assert "not comparable" in result.err and "--allow-mismatch" in result.err


def test_view_refuses_a_missing_folder(invoke: Callable[..., Any], tmp_path: Path) -> None:
    result = invoke("view", tmp_path / "nope")
    assert result.code != 0
    assert "is not a directory" in result.err


def test_show_puts_the_infra_banner_above_the_headline(
    invoke: Callable[..., Any], make_run: Callable[..., Path]
) -> None:
    from report_helpers import record

    from toolproof.trajectory import Termination

    def down(task_id: str) -> Any:
        rec = record(task_id, text="x")
        rec.score.termination = rec.trajectory.termination = Termination.INFRA_ERROR
        rec.trajectory.error = "sandbox: bwrap [red]failed[/red]"  # markup is printed, not run
        return rec

    result = invoke("show", make_run("down", [down("t1"), down("t2")]), "--no-tasks")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    at = next(i for i, line in enumerate(lines) if "INFRA" in line)
    assert "2 of 2 episodes were infrastructure errors: not scored (nothing was scored)" in (
        " ".join(lines[at : at + 2])
    )
    assert "first error: sandbox: bwrap [red]failed[/red]" in result.out
    assert "--failures" in lines[at + 1] or "--failures" in lines[at + 2]
    assert "no episode scored: success undefined (2 finished, 2 infra errors)" in result.out
    assert "0.0%" not in result.out
    mixed = make_run("mixed", [record("t1", passed=True), down("t2")])
    result = invoke("show", mixed, "--no-tasks")
    assert "1 of 2 episodes were infrastructure errors" in result.out
    assert "success 100.0% (1/1)" in result.out
    clean = invoke("show", make_run("clean", [record("t1", passed=True)]), "--no-tasks")
    assert "INFRA" not in clean.out and "infrastructure" not in clean.out
