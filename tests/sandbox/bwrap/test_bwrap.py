"""The bwrap backend keeps its promises: no network, no host files, limits, no leftovers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits, Sandbox, SandboxError, get_backend, reachable_tmp

pytestmark = pytest.mark.skipif(
    not get_backend("bwrap").available(),
    reason=f"bwrap unusable here: {get_backend('bwrap').unavailable_reason()}",
)


@pytest.fixture
def tcp_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's 127.0.0.1 recording every connection it accepts."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    accepted: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                accepted.append(conn.recv(100))

    thread = threading.Thread(target=serve)
    thread.start()
    yield server.getsockname()[1], accepted
    stop.set()
    thread.join()
    server.close()


CONNECT = (
    "python3 -c 'import socket, sys; "
    'socket.create_connection((sys.argv[1], {port}), 5).send(b"hi")\' {host}'
)


def test_identity_and_layout(bwrap_box: Sandbox) -> None:
    result = bwrap_box.exec("id -u; id -g; pwd; hostname; echo $HOME")
    assert result.ok, result.stderr
    assert result.stdout.split() == ["1000", "1000", "/workspace", "sandbox", "/tmp"]
    caps = bwrap_box.exec("grep CapEff /proc/self/status").stdout.split()[1]
    assert int(caps, 16) == 0


def test_no_network_to_host_loopback(
    bwrap_box: Sandbox, process_box: Sandbox, tcp_server: tuple[int, list[bytes]]
) -> None:
    port, accepted = tcp_server
    command = CONNECT.format(port=port, host="127.0.0.1")
    # Control: the same command does reach the server from the unisolated backend.
    assert process_box.exec(command).ok
    deadline = time.monotonic() + 10
    while not accepted and time.monotonic() < deadline:
        time.sleep(0.05)
    assert accepted == [b"hi"]
    result = bwrap_box.exec(command)
    assert not result.ok and "ConnectionRefusedError" in result.stderr
    time.sleep(0.5)
    assert accepted == [b"hi"]


def test_no_network_interfaces_or_routes(bwrap_box: Sandbox) -> None:
    devices = bwrap_box.exec("cat /proc/net/dev").stdout
    names = [line.split(":")[0].strip() for line in devices.splitlines()[2:]]
    assert names == ["lo"]
    result = bwrap_box.exec(CONNECT.format(port=53, host="1.1.1.1"))
    assert not result.ok and "Network is unreachable" in result.stderr


def test_host_files_outside_the_workspace_are_invisible(bwrap_box: Sandbox) -> None:
    home_file = Path.home() / f".toolproof-secret-{os.getpid()}"
    with tempfile.NamedTemporaryFile(prefix="toolproof-secret-") as tmp_file:
        paths = [tmp_file.name]
        try:
            home_file.write_text("secret")
            paths.append(str(home_file))
        except OSError:
            pass  # an unwritable home is not what this test is about
        try:
            for path in paths:
                result = bwrap_box.exec(["test", "-e", path])
                assert result.exit_code == 1, path
        finally:
            home_file.unlink(missing_ok=True)
    listing = bwrap_box.exec("ls /; ls /etc").stdout.split()
    for absent in ("root", "home", "work", "opt", "shadow", "sudoers"):
        assert absent not in listing


def test_toolproofs_own_package_is_hidden_where_a_bind_shows_it(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Task files (reference solutions, hidden tests) are never readable by a command.

    A system-wide install puts the package under /usr, which every command sees; a bind
    of a directory holding it (a virtualenv) shows it too. Both are covered by a tmpfs.
    """
    from toolproof.sandbox.bwrap import _backend as _bwrap

    package = _bwrap.PACKAGE
    assert (package / "suites" / "core" / "suite.yaml").is_file()
    box = get_backend("bwrap")(workspace, ro_binds={str(package.parent): "/opt/site"})
    with box:
        seen = box.exec("ls -A /opt/site/toolproof; cat /opt/site/toolproof/suites/core/suite.yaml")
        assert seen.stdout == "" and seen.exit_code != 0
        assert box.exec(["test", "-d", "/opt/site"]).exit_code == 0  # the bind itself holds
    # As if installed under /usr: an existing system directory stands in for the package.
    standin = next(
        p for p in sorted(Path("/usr/share").iterdir()) if p.is_dir() and any(p.iterdir())
    )
    monkeypatch.setattr(_bwrap, "PACKAGE", standin)
    with get_backend("bwrap")(workspace) as box:
        assert box.exec(["ls", "-A", str(standin)]).stdout == ""
        assert box.exec(["ls", "/usr/bin/env"]).exit_code == 0  # the rest of /usr is there


def test_build_argv_masks_the_package_only_where_it_is_visible() -> None:
    from toolproof.sandbox.bwrap._backend import build_argv

    def masks(
        hide: Path, ro_binds: dict[str, str], origins: dict[str, str] | None = None
    ) -> list[str]:
        argv = build_argv("bwrap", frozenset(), workspace=Path("/w"), etc=Path("/e"),
                          cwd="/workspace", env={}, tmp_bytes=None, ro_binds=ro_binds,
                          hide=(hide,), origins=origins)  # fmt: skip
        return [
            argv[i + 1] for i, arg in enumerate(argv) if arg == "--tmpfs" and argv[i + 1] != "/tmp"
        ]

    site = Path("/usr/lib/python3/dist-packages/toolproof")
    assert masks(site, {}) == [str(site)]
    venv = Path("/srv/venv/lib/site-packages/toolproof")
    assert masks(venv, {}) == []
    assert masks(venv, {"/srv/venv": "/opt/venv"}) == ["/opt/venv/lib/site-packages/toolproof"]
    # A source re-bound where the sandbox user can reach it shows its original path.
    assert masks(venv, {"/tmp/scratch/b0": "/opt/venv"}, {"/tmp/scratch/b0": "/srv/venv"}) == [
        "/opt/venv/lib/site-packages/toolproof"
    ]
    assert masks(venv, {"/srv/venv/lib/site-packages/toolproof/suites/lint": "/opt/cfg"}) == []


def test_system_dirs_and_root_are_read_only(bwrap_box: Sandbox) -> None:
    for target in ("/usr/toolproof-probe", "/etc/passwd", "/toolproof-probe"):
        result = bwrap_box.exec(["sh", "-c", f"echo x > {target}"])
        assert result.exit_code != 0 and "Read-only file system" in result.stderr, target
    assert not Path("/usr/toolproof-probe").exists()


def test_workspace_is_writable_and_tmp_is_fresh(bwrap_box: Sandbox, workspace: Path) -> None:
    assert bwrap_box.exec("echo data > /workspace/out; echo t > /tmp/t").ok
    assert (workspace / "out").read_text() == "data\n"
    assert bwrap_box.exec("test -e /tmp/t").exit_code == 1


def test_rm_rf_root_leaves_the_host_intact(
    bwrap_box: Sandbox, workspace: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    marker.write_text("still here")
    (workspace / "doomed").write_text("x")
    rm = "rm -rf --no-preserve-root / 2>/dev/null; ls -A /workspace | wc -l"
    result = bwrap_box.exec(rm, limits=ResourceLimits(wall_s=300))
    assert result.limit_hit is None and result.stdout == "0\n"  # the workspace was emptied
    assert marker.read_text() == "still here"
    assert Path("/usr/bin/true").exists() and Path("/etc/passwd").exists()


def test_environment_has_no_host_secrets(
    bwrap_box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPROOF_TEST_SECRET", "hunter2")
    result = bwrap_box.exec("env; cat /proc/1/environ", env={"EXTRA": "given"})
    assert "hunter2" not in result.stdout and "TOOLPROOF_TEST_SECRET" not in result.stdout
    names = {line.split("=")[0] for line in result.stdout.splitlines() if "=" in line}
    assert {"PATH", "HOME", "LANG", "EXTRA"} <= names


def test_fork_bomb_is_held_and_reported(bwrap_box: Sandbox) -> None:
    start = time.monotonic()
    bomb = "f() { f | f & }; f; sleep 100"
    result = bwrap_box.exec(bomb, limits=ResourceLimits(pids=32, wall_s=60))
    assert result.limit_hit == "pids", result
    assert time.monotonic() - start < 60


def test_memory_hog_is_stopped(bwrap_box: Sandbox) -> None:
    hog = "python3 -c 'x = b\"x\" * (600 * 1024 * 1024); print(len(x))'"
    result = bwrap_box.exec(hog, limits=ResourceLimits(memory_mb=100, wall_s=120))
    assert result.limit_hit == "memory" and not result.ok and result.stdout == ""


def test_infinite_loop_hits_cpu_then_wall_time(bwrap_box: Sandbox) -> None:
    loop = "while :; do :; done"
    result = bwrap_box.exec(loop, limits=ResourceLimits(cpu_s=1, wall_s=120))
    assert result.limit_hit == "cpu" and result.exit_code == 128 + 24
    result = bwrap_box.exec("sleep 1000", limits=ResourceLimits(wall_s=1))
    assert result.limit_hit == "wall_time" and result.exit_code is None


def test_disk_filler_is_stopped(bwrap_box: Sandbox, workspace: Path) -> None:
    limits = ResourceLimits(file_size_mb=2, workspace_mb=5)
    result = bwrap_box.exec("dd if=/dev/zero of=big bs=1M count=100", limits=limits)
    assert result.limit_hit == "file_size" and result.exit_code == 128 + 25
    assert (workspace / "big").stat().st_size <= 2 * 1024 * 1024
    many = "for i in 1 2 3 4; do head -c 1900000 /dev/zero > f$i; done"
    result = bwrap_box.exec(many, limits=limits)
    assert result.limit_hit == "workspace_size"


def test_output_flood_is_cut(bwrap_box: Sandbox) -> None:
    result = bwrap_box.exec("yes", limits=ResourceLimits(output_bytes=10_000))
    assert result.limit_hit == "output" and len(result.stdout) == 10_000


def test_no_process_survives_exec_or_close(
    workspace: Path, leftovers: Callable[[str], list[int]]
) -> None:
    box = get_backend("bwrap")(workspace)
    token = "sleep 1000.271"  # a unique spelling of `sleep 1000`
    result = box.exec(f"{token} & {token} & echo started")
    assert result.stdout == "started\n"
    assert leftovers(token) == []
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(box.exec(f"setsid {token}")))
    worker.start()
    deadline = time.monotonic() + 30
    while not leftovers(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers(token), "the command never started"
    box.close()
    worker.join(timeout=60)
    assert not worker.is_alive() and outcome
    assert leftovers(token) == []


def test_cwd_and_argv(bwrap_box: Sandbox, workspace: Path) -> None:
    (workspace / "sub").mkdir()
    assert bwrap_box.exec(["pwd"], cwd="sub").stdout == "/workspace/sub\n"
    assert bwrap_box.exec(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    assert bwrap_box.exec(["cat"], stdin="fed").stdout == "fed"


NO_CGROUP_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import toolproof.sandbox._launch as base
    from toolproof.sandbox import ResourceLimits, get_backend
    from toolproof.sandbox._cgroup import CgroupSupport

    base.host_support = lambda: CgroupSupport({})  # as on a host without cgroups
    box = get_backend("bwrap")(Path(sys.argv[1]))
    bomb = box.exec("f() { f | f & }; f; sleep 100", limits=ResourceLimits(pids=16, wall_s=5))
    many = box.exec("for i in 1 2 3 4 5 6 7 8; do sleep 1 & done; wait",
                    limits=ResourceLimits(pids=4))
    hog = box.exec("python3 -c 'x = b\\"x\\" * (600 * 1024 * 1024)'",
                   limits=ResourceLimits(memory_mb=100))
    print(bomb.limit_hit, many.limit_hit, hog.limit_hit)
    box.close()
    """
)


def _python_for(uid: int) -> str:
    """A Python 3.11+ interpreter that ``uid`` may run (the venv's may sit under /root)."""
    for python in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            probe = subprocess.run(
                [python, "-c", "import sys; assert sys.version_info >= (3, 11)"],
                user=uid,
                capture_output=True,
                check=False,
            )
        except OSError:
            continue
        if probe.returncode == 0:
            return python
    pytest.skip(f"no Python 3.11+ that uid {uid} can run")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the check as another user")
def test_without_cgroups_rlimits_hold_for_an_unprivileged_harness() -> None:
    """RLIMIT_NPROC in the user namespace works when the harness is not root."""
    src = Path(__file__).resolve().parents[3] / "src"
    python = _python_for(65534)
    shared = reachable_tmp((65534, 65534))  # nobody reaches it, even under a private TMPDIR
    with tempfile.TemporaryDirectory(prefix="toolproof-nobody-", dir=shared) as tmp:
        os.chown(tmp, 65534, 65534)  # the pytest tmp_path tree is private to root
        done = _run_as_nobody(python, src, Path(tmp))
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["pids", "pids", "memory"]


def _run_as_nobody(python: str, src: Path, workspace: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-c", NO_CGROUP_SCRIPT, str(workspace)],
        capture_output=True,
        text=True,
        timeout=300,
        user=65534,
        group=65534,
        extra_groups=[],
        env={"PATH": os.environ["PATH"], "PYTHONPATH": str(src)},
        cwd="/",
    )


def test_without_cgroups_memory_falls_back_to_rlimit_as(
    bwrap_box: Sandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolproof.sandbox._launch as base
    from toolproof.sandbox._cgroup import CgroupSupport

    monkeypatch.setattr(base, "host_support", lambda: CgroupSupport({}))
    hog = "python3 -c 'x = b\"x\" * (600 * 1024 * 1024)'"
    result = bwrap_box.exec(hog, limits=ResourceLimits(memory_mb=100))
    assert result.limit_hit == "memory" and "MemoryError" in result.stderr


def test_commands_get_exactly_the_rlimits_asked_for(bwrap_box: Sandbox) -> None:
    """Set by the gate's shell or by prlimit: either way the command sees these values."""
    limits = ResourceLimits(cpu_s=7, file_size_mb=3, workspace_mb=None)
    result = bwrap_box.exec("ulimit -S -t; ulimit -H -t; ulimit -f", limits=limits)
    assert result.exit_code == 0 and result.stdout.split() == ["7", "8", str(3 * 2048)]


def test_a_failed_hand_over_never_lets_the_command_run(
    bwrap_box: Sandbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The owner walk runs while the command waits at its gate; if it fails, nothing ran."""

    def refuse(limits: ResourceLimits) -> None:
        raise SandboxError("could not give the workspace to the sandbox user: test")

    monkeypatch.setattr(bwrap_box, "_hand_over", refuse)
    with pytest.raises(SandboxError, match="could not give the workspace"):
        bwrap_box.exec("touch /workspace/ran")
    assert not (workspace / "ran").exists()
    monkeypatch.undo()
    assert bwrap_box.exec("touch /workspace/ran").ok and (workspace / "ran").exists()


def test_a_bind_under_tmp_is_seen_on_top_of_the_fresh_tmp(workspace: Path) -> None:
    """A tool kept under the host's /tmp (a checkout, a virtualenv) can be bound at its path."""
    cls = get_backend("bwrap")
    if cls.unavailable_reason() is not None:
        pytest.skip(str(cls.unavailable_reason()))
    with tempfile.TemporaryDirectory(dir="/tmp") as host:
        Path(host).chmod(0o755)  # the sandbox user (a root harness) reads what is bound
        (Path(host) / "tool.txt").write_text("from the host\n")
        (Path(host) / "tool.txt").chmod(0o644)
        with cls(workspace, ro_binds={host: host}) as box:
            seen = box.exec(f"cat {host}/tool.txt; echo t > /tmp/mine && cat /tmp/mine")
            assert seen.stdout == "from the host\nt\n", seen
            assert box.exec(f"echo x > {host}/tool.txt").exit_code != 0  # read-only
    with pytest.raises(SandboxError, match="would hide"):
        cls(workspace, ro_binds={"/usr": "/tmp"})
