"""The process backend: real workspace paths, clean environment, limits, no leftovers."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits, Sandbox, get_backend


def test_not_isolated_and_runs_in_the_real_workspace(process_box: Sandbox, workspace: Path) -> None:
    assert type(process_box).isolated is False
    result = process_box.exec('pwd; echo "$WORKSPACE"; echo hi > made')
    assert result.ok
    assert result.stdout.splitlines() == [str(workspace.resolve())] * 2
    assert (workspace / "made").read_text() == "hi\n"


def test_cwd_under_workspace_is_rewritten(process_box: Sandbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    for cwd in ("/workspace/sub", "sub", "/workspace/sub/../sub"):
        assert process_box.exec("pwd", cwd=cwd).stdout.strip() == str(workspace / "sub")


def test_absolute_workspace_paths_in_commands_are_not_rewritten(process_box: Sandbox) -> None:
    # Documented limitation: only cwd is remapped, not paths inside the command line.
    result = process_box.exec("test -e /workspace/anything")
    assert result.exit_code != 0


def test_home_and_tmpdir_are_private_and_removed_on_close(workspace: Path) -> None:
    box = get_backend("process")(workspace)
    result = box.exec('echo "$HOME"; echo "$TMPDIR"; touch "$HOME/x" "$TMPDIR/y"')
    home, tmp = (Path(p) for p in result.stdout.split())
    assert result.ok and (home / "x").exists() and (tmp / "y").exists()
    assert workspace not in home.parents  # keeps the workspace (and its digest) clean
    box.close()
    assert not home.exists() and not tmp.exists()


def test_environment_has_no_host_secrets(
    process_box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPROOF_TEST_SECRET", "hunter2")
    result = process_box.exec("env", env={"EXTRA": "given"})
    assert "hunter2" not in result.stdout and "TOOLPROOF_TEST_SECRET" not in result.stdout
    assert "EXTRA=given" in result.stdout


def test_stdin_argv_and_exit_code(process_box: Sandbox) -> None:
    assert process_box.exec(["cat"], stdin="fed").stdout == "fed"
    result = process_box.exec(["sh", "-c", "exit 4"])
    assert result.exit_code == 4 and not result.ok and result.limit_hit is None


def test_cpu_limit(process_box: Sandbox) -> None:
    result = process_box.exec("while :; do :; done", limits=ResourceLimits(cpu_s=1, wall_s=120))
    assert result.limit_hit == "cpu" and result.exit_code == 128 + 24


def test_file_size_limit(process_box: Sandbox, workspace: Path) -> None:
    limits = ResourceLimits(file_size_mb=1)
    result = process_box.exec("head -c 5000000 /dev/zero > big", limits=limits)
    assert result.limit_hit == "file_size"
    assert (workspace / "big").stat().st_size <= 1024 * 1024


def test_wall_time_and_no_leftovers(
    process_box: Sandbox, leftovers: Callable[[str], list[int]]
) -> None:
    token = "161803"
    start = time.monotonic()
    result = process_box.exec(f"sleep {token} & sleep {token}", limits=ResourceLimits(wall_s=1))
    assert result.limit_hit == "wall_time" and result.exit_code is None
    assert time.monotonic() - start < 30
    assert leftovers(f"sleep {token}") == []
    process_box.exec(f"sleep {token} &")
    assert leftovers(f"sleep {token}") == []


def test_memory_limit(process_box: Sandbox) -> None:
    hog = "python3 -c 'x = b\"x\" * (600 * 1024 * 1024); print(len(x))'"
    result = process_box.exec(hog, limits=ResourceLimits(memory_mb=100))
    assert result.limit_hit == "memory" and not result.ok
