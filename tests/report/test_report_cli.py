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
