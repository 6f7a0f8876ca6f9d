"""``toolproof list | validate | show | schema`` and the entry point's error handling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from toolproof.spec import resolve_suite_path, suite_schema, task_schema
from toolproof_helpers import FIXTURES, CliResult, make_task

Invoke = Callable[..., CliResult]


def test_list_shows_suites_agents_and_tools(invoke: Invoke) -> None:
    result = invoke("list")
    assert result.code == 0, result.err
    for text in (
        "suites",
        "core",
        "agents",
        "oracle",
        "random",
        "tools",
        "inventory:",
        "get_stock",
    ):
        assert text in result.out


def test_list_a_suite_shows_its_tasks_and_counts(invoke: Invoke) -> None:
    result = invoke("list", "--suite", "core")
    assert result.code == 0, result.err
    assert "core v" in result.out and "by type:" in result.out and "by category:" in result.out
    for task_id in ("stock-lookup", "hello-file", "convert-units"):
        assert task_id in result.out
    assert "uconv_v2*" in result.out  # inline tools are starred
    missing = invoke("list", "--suite", "nope")
    assert missing.code == 2 and "no suite 'nope'" in missing.err


def test_validate_a_good_suite_and_task_files(
    invoke: Invoke, suite_dir: Callable[..., Path]
) -> None:
    root = suite_dir([make_task()])
    result = invoke("validate", root, FIXTURES / "tasks" / "templated.yaml")
    assert result.code == 0, result.err
    assert "valid" in result.out
    assert invoke("validate", resolve_suite_path("core")).code == 0


def test_validate_prints_file_line_field_message(invoke: Invoke) -> None:
    broken = FIXTURES / "broken"
    result = invoke("validate", broken / "wrong-type.yaml", broken / "solution-tool.yaml")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert f"{broken / 'wrong-type.yaml'}:6: difficulty: " in lines[0]
    assert any(
        line.startswith(f"{broken / 'solution-tool.yaml'}:12: solution.calls[1].tool: ")
        for line in lines
    )
    assert all(line.startswith(str(broken)) for line in lines[:-1])
    assert lines[-1] == f"{len(lines) - 1} problem(s) found; nothing was run"
    assert "Traceback" not in result.err


def test_validate_a_directory_of_broken_files_reports_each(invoke: Invoke) -> None:
    result = invoke("validate", *sorted((FIXTURES / "broken").iterdir()))
    assert result.code == 2
    named = {line.split(":", 1)[0] for line in result.err.splitlines()[:-1]}
    assert named == {str(p) for p in (FIXTURES / "broken").iterdir()}


def test_validate_names_unknown_tools_of_a_suite(
    invoke: Invoke, suite_dir: Callable[..., Path]
) -> None:
    task = make_task(tools=["get_stock", "teleport"])
    root = suite_dir([task])
    result = invoke("validate", root)
    assert result.code == 2
    assert f"{root / 'tasks' / 'stock.yaml'}:6: tools[1]: no tool 'teleport'" in result.err


def test_validate_a_missing_path(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("validate", tmp_path / "nope.yaml")
    assert result.code == 2 and f"{tmp_path / 'nope.yaml'}: no such file or directory" in result.err


def test_show_prints_a_finished_run(invoke: Invoke, tmp_path: Path) -> None:
    assert (
        invoke("run", "core", "--agent", "oracle", "-t", "stock-*", "-o", tmp_path / "r", "-q").code
        == 0
    )
    result = invoke("show", tmp_path / "r")
    assert result.code == 0, result.err
    assert "core" in result.out and "agent oracle" in result.out
    assert "success 100.0%" in result.out and "stock-lookup" in result.out
    headline = invoke("show", tmp_path / "r", "--no-tasks")
    assert "success 100.0%" in headline.out and "stock-lookup" not in headline.out


def test_show_refuses_a_directory_that_is_not_a_run(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("show", tmp_path)
    assert result.code == 2  # input error (docs/cli.md exit codes)
    assert "is not a toolproof run" in result.err and "Traceback" not in result.err


def test_schema_prints_the_task_and_suite_schemas(invoke: Invoke) -> None:
    task = invoke("schema")
    assert task.code == 0 and json.loads(task.out) == task_schema()
    suite = invoke("schema", "--suite")
    assert suite.code == 0 and json.loads(suite.out) == suite_schema()


def _toolproof(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TOOLPROOF_NO_PLUGINS": "1", **env},
    )


def test_the_real_process_exits_2_with_a_message(tmp_path: Path) -> None:
    result = _toolproof("run", "core", "--agent", "nope", "-q", "-o", str(tmp_path / "run"))
    assert result.returncode == 2
    assert result.stderr.lstrip().startswith("error:")
    assert "unknown agent 'nope'; valid kinds:" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def test_help_lists_the_commands() -> None:
    result = _toolproof("--help")
    assert result.returncode == 0
    for command in ("run", "list", "validate", "show", "schema"):
        assert command in result.stdout
