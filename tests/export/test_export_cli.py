"""``toolproof export``: every format to a file, a folder or standard output; clear errors."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.cli import COMMANDS
from toolproof_helpers import CliResult


def test_export_is_a_command() -> None:
    assert COMMANDS["export"][0] == "toolproof.cli._export:export"


@pytest.mark.parametrize("fmt", ["inspect", "otel", "csv", "parquet", "junit"])
def test_each_format_to_a_named_file(
    invoke: Callable[..., CliResult], varied_run: Path, tmp_path: Path, fmt: str
) -> None:
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    target = tmp_path / f"out-{fmt}"
    result = invoke("export", varied_run, "--format", fmt, "-o", target)
    assert result.code == 0, result.err
    assert f"wrote 6 episode(s) to {target}" in result.out
    assert target.stat().st_size > 0
    assert not list(tmp_path.glob("*.tmp"))


def test_default_names_and_a_folder(
    invoke: Callable[..., CliResult],
    varied_run: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert invoke("export", varied_run, "-f", "csv").code == 0
    assert (tmp_path / "run.csv").is_file()
    logs = tmp_path / "logs"
    logs.mkdir()
    assert invoke("export", varied_run, "-f", "inspect", "-o", logs).code == 0
    (log,) = logs.iterdir()
    # Inspect's own naming (TIMESTAMP_TASK_ID.json), which `inspect log list` requires.
    assert log.name.endswith(".json") and "_demo_" in log.name
    assert log.name[:4].isdigit() and log.name[10] == "T"


def test_standard_output(invoke: Callable[..., CliResult], varied_run: Path) -> None:
    result = invoke("export", varied_run, "-f", "otel", "-o", "-")
    assert result.code == 0
    lines = result.out.splitlines()
    assert len(lines) == 6 and all("resourceSpans" in json.loads(line) for line in lines)
    assert "wrote 6 episode(s)" in result.err


def test_bad_input_exits_2_with_a_message(
    invoke: Callable[..., CliResult], varied_run: Path, tmp_path: Path
) -> None:
    not_a_run = tmp_path / "empty"
    not_a_run.mkdir()
    result = invoke("export", not_a_run, "-f", "csv", "-o", tmp_path / "x.csv")
    assert result.code == 2
    assert "not a toolproof run" in result.err
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.csv.tmp").exists()
    result = invoke("export", varied_run, "-f", "xlsx")
    assert result.code == 2
    assert "xlsx" in result.err


def test_a_missing_folder_is_named(
    invoke: Callable[..., CliResult], varied_run: Path, tmp_path: Path
) -> None:
    result = invoke("export", varied_run, "-f", "csv", "-o", tmp_path / "no" / "such" / "x.csv")
    assert result.code == 2
    assert "cannot write the export" in result.err
