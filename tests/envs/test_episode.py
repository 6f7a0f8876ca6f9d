"""An episode's environment: refused when missing or drifted, mounted, annotating steps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolproof.envs import (
    MOUNT,
    EnvDrift,
    EnvNotSetUp,
    episode_env,
    prepare_episode,
)
from toolproof.spec import SandboxSpec
from toolproof.trajectory import Message, ToolCall, ToolResult

from .envkit import fake_env, write_lock


def test_a_task_without_toolenv_is_left_alone(tmp_path: Path) -> None:
    extras: dict[str, object] = {}
    settings = SandboxSpec(wall_s=5)
    assert prepare_episode(extras, settings, base=tmp_path, suite="s") is settings
    assert extras == {} and episode_env(extras) is None


def test_the_environment_is_mounted_read_only_with_its_programs_first(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite" / "envs" / "py", env={"RUFF_NO_CACHE": "true"})
    directory = fake_env(tmp_path / "cache", lock_path)
    extras: dict[str, object] = {}
    given = SandboxSpec(toolenv="../envs/py/env.lock.json", env={"MINE": "1"}, wall_s=9)
    settings = prepare_episode(
        extras, given, base=tmp_path / "suite" / "tasks", suite="s", cache_root=tmp_path / "cache"
    )
    assert settings.ro_binds == {str(directory): MOUNT}
    assert settings.env is not None and settings.env["PATH"].startswith(f"{MOUNT}/bin:")
    assert settings.env["RUFF_NO_CACHE"] == "true" and settings.env["MINE"] == "1"
    assert settings.wall_s == 9 and settings.toolenv == given.toolenv
    env = episode_env(extras)
    assert env is not None and env.directory == directory and env.settings == settings
    assert env.base == tmp_path / "suite" / "tasks" and env.drift == []


def test_missing_and_drifted_environments_are_refused(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "envs" / "py")
    given = SandboxSpec(toolenv="envs/py/env.lock.json")
    with pytest.raises(EnvNotSetUp, match="toolproof env setup lint"):
        prepare_episode({}, given, base=tmp_path, suite="lint", cache_root=tmp_path / "cache")
    fake_env(tmp_path / "cache", lock_path, versions={"ruff": "0.7.0"})
    with pytest.raises(EnvDrift, match=r"ruff 0\.6\.9 → 0\.7\.0"):
        prepare_episode({}, given, base=tmp_path, suite="lint", cache_root=tmp_path / "cache")
    extras: dict[str, object] = {}
    prepare_episode(
        extras, given, base=tmp_path, suite="lint", cache_root=tmp_path / "cache", allow_drift=True
    )
    env = episode_env(extras)
    assert env is not None and env.drift == ["ruff 0.6.9 → 0.7.0"]


def _step(
    command: str, output: dict[str, object] | str, *, error: bool = False
) -> tuple[Message, list[ToolResult]]:
    call = ToolCall(id="c1", name="run_command", arguments={"command": command})
    content = output if isinstance(output, str) else json.dumps(output)
    result = ToolResult(call_id="c1", name="run_command", content=content, is_error=error)
    return Message(role="assistant", tool_calls=[call]), [result]


def test_steps_that_ran_the_linter_are_annotated_with_its_count(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "envs")
    fake_env(tmp_path / "cache", lock_path)
    extras: dict[str, object] = {}
    given = SandboxSpec(toolenv="envs/env.lock.json")
    prepare_episode(extras, given, base=tmp_path, suite="s", cache_root=tmp_path / "cache")
    env = episode_env(extras)
    assert env is not None
    lint = {"exit_code": 1, "stdout": "Found 7 errors.\n", "stderr": ""}
    assert env.annotate_step(0, *_step("ruff check .", lint)) == {"lint_errors": 7}
    assert env.annotate_step(1, *_step("ls", {"exit_code": 0, "stdout": "a\n"})) == {}
    assert env.annotate_step(2, *_step("ruff check .", "error: refused", error=True)) == {}
    write = ToolCall(id="c1", name="write_file", arguments={"path": "a", "content": "ruff"})
    done = ToolResult(call_id="c1", name="write_file", content="Found 1 error.")
    assert env.annotate_step(3, Message(role="assistant", tool_calls=[write]), [done]) == {}
    clean = {"exit_code": 0, "stdout": "All checks passed!\n", "stderr": ""}
    assert env.annotate_step(4, *_step("sh scripts/lint.sh", clean)) == {"lint_errors": 0}
    assert env.curve == [(0, 7), (4, 0)]
