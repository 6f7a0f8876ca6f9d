"""``ro_binds``: extra read-only host directories for sandboxed commands."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits, SandboxError, get_backend

LIMITS = ResourceLimits(wall_s=20)


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A host directory with a program in bin/."""
    (tmp_path / "tools" / "bin").mkdir(parents=True)
    program = tmp_path / "tools" / "bin" / "hello-tool"
    program.write_text("#!/bin/sh\necho hello from the tool\n")
    program.chmod(0o755)
    return tmp_path / "tools"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace."""
    (tmp_path / "ws").mkdir()
    return tmp_path / "ws"


@pytest.mark.skipif(not get_backend("bwrap").available(), reason="bubblewrap cannot run here")
def test_bwrap_mounts_the_directory_read_only(tools: Path, workspace: Path) -> None:
    env = {"PATH": "/opt/t/bin:/usr/bin:/bin"}
    with get_backend("bwrap")(workspace, ro_binds={str(tools): "/opt/t"}) as box:
        ran = box.exec("hello-tool && touch /opt/t/x", env=env, limits=LIMITS)
    assert ran.stdout == "hello from the tool\n"
    assert ran.exit_code != 0 and "Read-only file system" in ran.stderr
    assert not (tools / "x").exists()


def test_process_rewrites_inside_paths_in_the_environment(tools: Path, workspace: Path) -> None:
    env = {"PATH": "/opt/t/bin:/usr/bin:/bin", "TOOL_HOME": "/opt/t", "OTHER": "/opt/tx"}
    with get_backend("process")(workspace, ro_binds={str(tools): "/opt/t"}) as box:
        ran = box.exec('hello-tool; echo "$TOOL_HOME $OTHER"', env=env, limits=LIMITS)
    assert ran.stdout == f"hello from the tool\n{tools} /opt/tx\n"


def test_the_container_backend_mounts_it_read_only(tools: Path, workspace: Path) -> None:
    cls = get_backend("podman")
    box = cls.__new__(cls)  # argv only: no container engine needed
    box.workspace, box.image, box.ro_binds = workspace, "debian:12-slim", {str(tools): "/opt/t"}
    argv = box.run_argv(
        "toolproof-c", ["true"], cwd="/workspace", env={}, limits=LIMITS, interactive=False
    )
    assert f"--volume={tools}:/opt/t:ro" in argv


@pytest.mark.parametrize(
    ("inside", "message"),
    [("relative", "absolute"), ("/", "absolute"), ("/workspace/x", "hide"), ("/tmp", "hide")],
)
def test_unusable_binds_are_refused(
    tools: Path, workspace: Path, inside: str, message: str
) -> None:
    with pytest.raises(SandboxError, match=message):
        get_backend("process")(workspace, ro_binds={str(tools): inside})


def test_a_missing_host_path_is_refused(tmp_path: Path, workspace: Path) -> None:
    with pytest.raises(SandboxError, match="existing absolute path"):
        get_backend("process")(workspace, ro_binds={str(tmp_path / "nope"): "/opt/t"})
