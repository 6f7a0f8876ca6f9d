"""The container backends on real engines: podman, and docker where a daemon answers.

Each engine gets a tiny image imported here from a rootfs of a few host binaries
(nothing is pulled). A test skips, saying why, when its engine cannot run here (no
program, no daemon answering at the endpoint, no seccomp). CI starts a Docker
daemon (scripts/test.sh); tests/sandbox/test_docker_cli.py checks the docker
backend's argv and lifecycle without one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import SANDBOX_UID, ResourceLimits, Sandbox, get_backend
from toolproof.sandbox import _container as container_mod
from toolproof.sandbox._container import ContainerSandbox

IMAGE = "localhost/toolproof-test:local"
_TOOLS = ("sh", "dash", "cat", "echo", "sleep", "id", "env", "ls", "dd", "head", "yes")


def _engine(name: str) -> type[ContainerSandbox]:
    cls = get_backend(name)
    assert issubclass(cls, ContainerSandbox)
    return cls


def _cli(engine: type[ContainerSandbox], *args: str) -> subprocess.CompletedProcess[str]:
    info = engine.info()
    assert info.path is not None
    return subprocess.run([info.path, *args], capture_output=True, text=True,
                          env=info.client_env, timeout=120)  # fmt: skip


def _build_image(engine: type[ContainerSandbox]) -> str | None:
    """Import a rootfs of a few host binaries as IMAGE; returns why it failed, or None."""
    with tempfile.TemporaryDirectory(prefix="toolproof-rootfs-") as tmp:
        root = Path(tmp)
        root.chmod(0o755)  # the image's / (a non-root container user must search it)
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
        tarball = Path(tmp + ".tar")
        try:
            subprocess.run(["tar", "-C", tmp, "-cf", str(tarball), "."], check=True)
            done = _cli(engine, "import", str(tarball), IMAGE)
        finally:
            tarball.unlink(missing_ok=True)
    if done.returncode != 0:
        return f"{engine.binary} import failed: {done.stderr.strip()}"
    return None


@pytest.fixture(scope="module", params=["podman", "docker"])
def engine(request: pytest.FixtureRequest) -> type[ContainerSandbox]:
    """Each container engine that runs here, with IMAGE imported into it."""
    cls = _engine(request.param)
    reason = cls.unavailable_reason()
    if reason is not None:
        pytest.skip(f"{request.param} unusable here: {reason}")
    failure = _build_image(cls)
    if failure is not None:
        pytest.skip(failure)
    return cls


@pytest.fixture
def box(engine: type[ContainerSandbox], workspace: Path) -> Iterator[Sandbox]:
    with engine(workspace, image=IMAGE) as sandbox:
        yield sandbox


def _toolproof_containers(engine: type[ContainerSandbox]) -> list[str]:
    listing = _cli(engine, "ps", "-a", "--format", "{{.Names}}")
    return [name for name in listing.stdout.split() if name.startswith("toolproof-")]


def test_runs_in_the_workspace(
    box: Sandbox, workspace: Path, engine: type[ContainerSandbox]
) -> None:
    result = box.exec("pwd; echo hi > out; cat", stdin="fed")
    assert result.ok, result.stderr
    assert result.stdout == "/workspace\nfed"
    assert (workspace / "out").read_text() == "hi\n"
    assert _toolproof_containers(engine) == []


def test_no_network_and_no_host_secrets(box: Sandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLPROOF_TEST_SECRET", "hunter2")
    devices = box.exec("cat /proc/net/dev").stdout.splitlines()[2:]
    assert [line.split(":")[0].strip() for line in devices] == ["lo"]
    assert "hunter2" not in box.exec("env").stdout
    caps = box.exec("cat /proc/self/status").stdout
    assert "CapEff:\t0000000000000000" in caps


def test_read_only_root_and_never_the_host_root(box: Sandbox) -> None:
    result = box.exec("(: > /usr/bin/planted); echo $?; : > /tmp/ok && echo tmp-ok; id -u")
    lines = result.stdout.splitlines()
    assert lines[0] != "0" and lines[1] == "tmp-ok"
    assert "Read-only file system" in result.stderr
    assert lines[2] != "0"  # a rootful engine's root is the host's: never used


def test_hostile_names_add_no_privilege(box: Sandbox, workspace: Path) -> None:
    (workspace / "--privileged dir").mkdir()
    result = box.exec(
        "pwd; cat /proc/self/status",
        cwd="--privileged dir",
        env={"--privileged": "1", "-v": "/:/host", "X": "a\nb"},
    )
    assert result.ok, result.stderr
    assert result.stdout.splitlines()[0] == "/workspace/--privileged dir"
    assert "CapEff:\t0000000000000000" in result.stdout
    assert "NoNewPrivs:\t1" in result.stdout
    assert box.exec("ls /host").exit_code != 0


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


def test_wall_time_kills_and_removes_the_container(
    box: Sandbox, engine: type[ContainerSandbox]
) -> None:
    result = box.exec("sleep 1000", limits=ResourceLimits(wall_s=2))
    assert result.limit_hit == "wall_time" and result.exit_code is None
    assert _toolproof_containers(engine) == []


def _unmount_left_by(workspace: Path) -> None:
    """Unmount what a killed root harness left for ``workspace`` (its tmpfs, both places)."""
    table = [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    devices = {fields[2] for fields in table if fields[4] == str(workspace)}
    for fields in reversed(table):
        if fields[2] in devices:
            subprocess.run(["umount", "-l", fields[4]], check=False)


_CRASHER = """
import sys, time
from pathlib import Path
from toolproof.sandbox import ResourceLimits, get_backend
with get_backend(sys.argv[1])(Path(sys.argv[2]), image=sys.argv[3]) as box:
    box.exec("sleep 1000", limits=ResourceLimits(wall_s=900))
"""


def test_a_crashed_harness_s_container_is_swept_by_the_next(
    engine: type[ContainerSandbox], workspace: Path
) -> None:
    harness = subprocess.Popen(
        [sys.executable, "-c", _CRASHER, engine.binary, str(workspace), IMAGE],
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _toolproof_containers(engine) and time.monotonic() < deadline:
            time.sleep(0.2)
        (left,) = _toolproof_containers(engine)
        assert f"-{harness.pid}-" in left
    finally:
        os.killpg(harness.pid, signal.SIGKILL)  # the harness crashes: nothing cleans up
        harness.wait()
        _unmount_left_by(workspace)
    assert _toolproof_containers(engine) == [left]  # the container outlives its harness
    with container_mod._LOCK:
        container_mod._SWEPT.clear()
    with engine(workspace, image=IMAGE):
        pass
    assert _toolproof_containers(engine) == []


def test_docker_shares_the_container_class() -> None:
    docker = _engine("docker")
    assert docker.binary == "docker" and docker.uses_image and docker.isolated
    assert docker.run_argv is _engine("podman").run_argv


@pytest.mark.skipif(os.geteuid() != 0, reason="the rootful-engine guarantees need a root harness")
def test_rootful_engine_runs_the_sandbox_user_held_like_bwrap(
    engine: type[ContainerSandbox], workspace: Path
) -> None:
    limits = ResourceLimits(workspace_mb=8, file_size_mb=None, wall_s=60)
    with engine(workspace, limits, image=IMAGE) as box:
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
