"""The podman backend on a tiny local image; docker shares the class."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import SANDBOX_UID, ResourceLimits, Sandbox, get_backend

IMAGE = "localhost/toolproof-test:local"
_TOOLS = ("sh", "dash", "cat", "echo", "sleep", "id", "env", "ls", "dd", "head", "yes")


def _build_image() -> str | None:
    """Import a rootfs of a few host binaries as IMAGE; returns why it failed, or None."""
    with tempfile.TemporaryDirectory(prefix="toolproof-rootfs-") as tmp:
        root = Path(tmp)
        (root / "usr" / "bin").mkdir(parents=True)
        for name in ("bin", "sbin"):
            (root / name).symlink_to("usr/bin")
        for tool in _TOOLS:
            binary = shutil.which(tool, path="/usr/bin:/bin")
            if binary is None:
                return f"host has no {tool} to copy into the test image"
            shutil.copy2(Path(binary).resolve(), root / "usr" / "bin" / tool)
            libs = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
            for word in libs.split():
                if word.startswith("/") and Path(word).exists():
                    target = root / word.lstrip("/")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(Path(word).resolve(), target)
        with subprocess.Popen(["tar", "-C", tmp, "-c", "."], stdout=subprocess.PIPE) as tar:
            done = subprocess.run(
                ["podman", "import", "-", IMAGE], stdin=tar.stdout, capture_output=True, text=True
            )
    return None if done.returncode == 0 else f"podman import failed: {done.stderr.strip()}"


@pytest.fixture(scope="module")
def image() -> str:
    reason = get_backend("podman").unavailable_reason()
    if reason is not None:
        pytest.skip(f"podman unusable here: {reason}")
    failure = _build_image()
    if failure is not None:
        pytest.skip(failure)
    return IMAGE


@pytest.fixture
def box(image: str, workspace: Path) -> Iterator[Sandbox]:
    with get_backend("podman")(workspace, image=image) as sandbox:
        yield sandbox


def _toolproof_containers() -> list[str]:
    listing = subprocess.run(
        ["podman", "ps", "-a", "--format", "{{.Names}}"], capture_output=True, text=True
    )
    return [name for name in listing.stdout.split() if name.startswith("toolproof-")]


def test_runs_in_the_workspace(box: Sandbox, workspace: Path) -> None:
    result = box.exec("pwd; echo hi > out; cat", stdin="fed")
    assert result.ok, result.stderr
    assert result.stdout == "/workspace\nfed"
    assert (workspace / "out").read_text() == "hi\n"
    assert _toolproof_containers() == []


def test_no_network_and_no_host_secrets(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPROOF_TEST_SECRET", "hunter2")
    devices = box.exec("cat /proc/net/dev").stdout.splitlines()[2:]
    assert [line.split(":")[0].strip() for line in devices] == ["lo"]
    assert "hunter2" not in box.exec("env").stdout
    caps = box.exec("cat /proc/self/status").stdout
    assert "CapEff:\t0000000000000000" in caps


def test_memory_limit(box: Sandbox) -> None:
    hog = "dd if=/dev/zero of=/dev/null bs=300M count=1"
    result = box.exec(hog, limits=ResourceLimits(memory_mb=50, wall_s=120))
    assert result.limit_hit == "memory"


def test_pids_limit(box: Sandbox) -> None:
    bomb = "f() { f | f & }; f; wait"
    result = box.exec(bomb, limits=ResourceLimits(pids=16, wall_s=120))
    assert result.limit_hit == "pids"


def test_cpu_and_file_size_limits(box: Sandbox) -> None:
    loop = box.exec("while :; do :; done", limits=ResourceLimits(cpu_s=1, wall_s=120))
    assert loop.limit_hit == "cpu" and loop.exit_code == 128 + 24
    filler = box.exec(
        "dd if=/dev/zero of=big bs=1M count=50", limits=ResourceLimits(file_size_mb=2)
    )
    assert filler.limit_hit == "file_size"


def test_wall_time_kills_and_removes_the_container(box: Sandbox) -> None:
    result = box.exec("sleep 1000", limits=ResourceLimits(wall_s=2))
    assert result.limit_hit == "wall_time" and result.exit_code is None
    assert _toolproof_containers() == []


def test_docker_shares_the_podman_class() -> None:
    docker = get_backend("docker")
    assert docker.binary == "docker" and docker.uses_image and docker.isolated  # type: ignore[attr-defined]
    if shutil.which("docker") is None:
        assert docker.unavailable_reason() == "the 'docker' program is not installed"


@pytest.mark.skipif(os.geteuid() != 0, reason="the rootful-engine guarantees need a root harness")
def test_rootful_engine_runs_the_sandbox_user_held_like_bwrap(image: str, workspace: Path) -> None:
    limits = ResourceLimits(workspace_mb=8, file_size_mb=None, wall_s=60)
    with get_backend("podman")(workspace, limits, image=image) as box:
        status = box.exec("id -u; cat /proc/self/status; : > mine")
        assert status.stdout.splitlines()[0] == str(SANDBOX_UID)
        assert "NoNewPrivs:\t1" in status.stdout and "Seccomp:\t2" in status.stdout
        assert "CapEff:\t0000000000000000" in status.stdout
        assert (workspace / "mine").stat().st_uid == SANDBOX_UID
        knob = box.exec('v=$(cat /proc/sys/kernel/hostname); echo "$v" > /proc/sys/kernel/hostname')
        assert knob.exit_code != 0  # /proc/sys is read-only; the same value was written back
        bomb = box.exec("head -c 3G /dev/zero > fill; echo wrote=$?")
        assert bomb.limit_hit == "workspace_size"
        assert (workspace / "fill").stat().st_size <= 10 * 1024 * 1024
    assert str(workspace) + " " not in Path("/proc/self/mountinfo").read_text()
