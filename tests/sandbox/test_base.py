"""Argument checks and clean-up shared by every backend (shown with ``process``)."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits, Sandbox, SandboxError, get_backend


def test_workspace_must_exist(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"workspace '.*missing' is not a directory"):
        get_backend("process")(tmp_path / "missing")


def test_image_only_for_container_backends(workspace: Path) -> None:
    with pytest.raises(SandboxError, match=r"takes no image; drop image='debian'"):
        get_backend("process")(workspace, image="debian")


def test_container_backends_need_an_image(workspace: Path) -> None:
    with pytest.raises(SandboxError, match="needs image="):
        get_backend("podman")(workspace)


def test_limits_must_be_resource_limits(workspace: Path) -> None:
    with pytest.raises(SandboxError, match="limits must be a ResourceLimits, got dict"):
        get_backend("process")(workspace, {"wall_s": 1})  # type: ignore[arg-type]


def test_bad_commands_and_env(process_box: Sandbox) -> None:
    with pytest.raises(SandboxError, match="command is empty"):
        process_box.exec("  ")
    with pytest.raises(SandboxError, match="non-empty list of strings"):
        process_box.exec([])
    with pytest.raises(SandboxError, match="not a valid name"):
        process_box.exec("true", env={"A=B": "x"})
    with pytest.raises(SandboxError, match="is not a directory"):
        process_box.exec("true", cwd="/workspace/nope")
    for bad, why in (
        ("echo a\0b", "NUL byte"),
        (["echo", "a\0b"], "NUL byte"),
        ("echo \ud800", "lone surrogate"),
        (["echo", "\udfff"], "lone surrogate"),
    ):
        with pytest.raises(SandboxError, match=why):
            process_box.exec(bad)
    for key, value in (("A", "\ud800"), ("\ud800", "x"), ("A", "a\0")):
        with pytest.raises(SandboxError, match=r"not a valid name|contains a (NUL|lone)"):
            process_box.exec("true", env={key: value})
    with pytest.raises(SandboxError, match="lone surrogate"):
        process_box.exec("true", cwd="/workspace/\ud800")
    assert process_box.exec(["printf", "%s", "\udcff"]).ok  # an undecodable byte passes


def test_exec_after_close_raises_and_close_is_idempotent(workspace: Path) -> None:
    box = get_backend("process")(workspace)
    box.close()
    box.close()
    with pytest.raises(SandboxError, match="closed; create a new one"):
        box.exec("true")


def test_context_manager_closes(workspace: Path) -> None:
    with get_backend("process")(workspace) as box:
        assert box.exec("true").ok
    with pytest.raises(SandboxError, match="closed"):
        box.exec("true")


def test_close_kills_a_running_command(
    workspace: Path, leftovers: Callable[[str], list[int]]
) -> None:
    token = "876543"
    box = get_backend("process")(workspace, ResourceLimits(wall_s=600))
    results = []
    worker = threading.Thread(target=lambda: results.append(box.exec(f"sleep {token}")))
    worker.start()
    deadline = time.monotonic() + 30
    while not leftovers(f"sleep {token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    box.close()
    worker.join(timeout=60)
    assert not worker.is_alive()
    assert results[0].exit_code == 128 + 9
    assert leftovers(f"sleep {token}") == []


def test_workspace_size_is_checked_after_each_command(process_box: Sandbox) -> None:
    limits = ResourceLimits(workspace_mb=3, file_size_mb=2)
    script = "for i in 1 2 3; do head -c 1500000 /dev/zero > f$i; done"
    result = process_box.exec(script, limits=limits)
    assert result.exit_code == 0 and result.limit_hit == "workspace_size" and not result.ok


def test_scratch_files_go_even_without_close(workspace: Path) -> None:
    box = get_backend("process")(workspace)
    home = Path(box.exec('echo "$HOME"').stdout.strip())
    assert home.is_dir()
    del box
    gc.collect()
    assert not home.exists()
