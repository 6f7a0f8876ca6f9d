"""The workspace's owner and its size-limited filesystem (mostly root-only behaviour)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import SANDBOX_UID, ResourceLimits, SandboxError, _base, get_backend
from toolproof.sandbox._cgroup import host_support
from toolproof.sandbox._detect import WorkspaceWatch
from toolproof.sandbox._handover import OwnerWalk
from toolproof.sandbox._wsfs import can_mount, reachable_tmp, unreachable_parent

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs a root harness")
mounting = pytest.mark.skipif(not can_mount(), reason="needs root with CAP_SYS_ADMIN")
OWNER = (SANDBOX_UID, SANDBOX_UID)


def _bwrap() -> type[_base.Sandbox]:
    cls = get_backend("bwrap")
    reason = cls.unavailable_reason()
    if reason is not None:
        pytest.skip(f"bwrap unusable here: {reason}")
    return cls


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A workspace whose parents everyone may search (as /tmp's children are), also
    when TMPDIR is private (a shared temporary directory then)."""
    parent = Path(
        tempfile.mkdtemp(prefix="toolproof-wsfs-test-", dir=reachable_tmp((65534, 65534)))
    )
    parent.chmod(0o711)
    (parent / "ws").mkdir()
    yield parent / "ws"
    shutil.rmtree(parent, ignore_errors=True)


def _workspace_filesystems(under: Path) -> set[str]:
    """Device ids of the toolproof workspace tmpfs mounted under ``under`` (one per
    filesystem): only this test's, never another program's sandboxes on a busy machine,
    which share the mount namespace."""
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return {
        line.split()[2]
        for line in lines
        if "tmpfs toolproof-workspace " in line and Path(line.split()[4]).is_relative_to(under)
    }


@pytest.fixture
def own_tmp(open_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sandboxes' scratch directories (where their tmpfs is mounted) under the test's
    own folder, so the mounts a test counts are its own."""
    scratch = open_dir.parent / "tmp"
    scratch.mkdir(mode=0o711)
    scratch.chmod(0o711)
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    return open_dir.parent


def _mounted(path: Path) -> bool:
    return f" {path} " in Path("/proc/self/mountinfo").read_text()


@root_only
def test_the_owner_walk_never_follows_links(tmp_path: Path) -> None:
    host_file = tmp_path / "host-secret"
    host_file.write_text("root's")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "f").write_text("x")
    (ws / "link").symlink_to(host_file)
    (ws / "dirlink").symlink_to(tmp_path)
    walk = OwnerWalk()
    assert walk.hand_over(ws, *OWNER) == 5  # ws, sub, f, link, dirlink (the links themselves)
    assert host_file.stat().st_uid == 0 and tmp_path.stat().st_uid == 0
    assert (ws / "sub" / "f").stat().st_uid == SANDBOX_UID
    assert os.lstat(ws / "link").st_uid == SANDBOX_UID
    assert OwnerWalk().hand_over(ws, *OWNER) == 0  # nothing left to change


def test_unreachable_parent_names_the_blocking_directory(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    (locked / "ws").mkdir(parents=True)
    locked.chmod(0o700)
    assert unreachable_parent(locked / "ws", 64_999, 64_999) in (
        locked,
        tmp_path,
        *tmp_path.parents,
    )
    locked.chmod(0o711)
    (locked / "ws").chmod(0o755)
    assert unreachable_parent(locked / "ws", os.getuid(), os.getgid()) is None


@mounting
def test_a_workspace_already_over_its_budget_is_the_agents_limit_not_an_infra_error(
    open_dir: Path,
) -> None:
    (open_dir / "big").write_bytes(b"\0" * (3 * 1024 * 1024))  # e.g. written by file tools
    with _bwrap()(open_dir, ResourceLimits(workspace_mb=1)) as box:
        result = box.exec("cat big > /dev/null; echo read")
        assert result.stdout == "read\n" and result.limit_hit == "workspace_size"
        more = box.exec("head -c 100M /dev/zero > more")
        assert more.limit_hit == "workspace_size"
        assert (open_dir / "more").stat().st_size <= 2 * 1024 * 1024  # still held
    assert not _mounted(open_dir) and (open_dir / "big").stat().st_size == 3 * 1024 * 1024


@mounting
def test_harness_writes_between_commands_are_handed_over_and_copied_back(
    open_dir: Path,
) -> None:
    (open_dir / "seed.txt").write_text("seed\n")
    with _bwrap()(open_dir, ResourceLimits(workspace_mb=32)) as box:
        assert _mounted(open_dir)
        (open_dir / "harness.txt").write_text("from the harness\n")  # as root, between commands
        result = box.exec(
            "echo more >> harness.txt && echo more >> seed.txt && mkdir d && echo y > d/y"
        )
        assert result.ok, result.stderr
        assert (open_dir / "harness.txt").stat().st_uid == SANDBOX_UID
        git = box.exec("git init -q r && cd r && git -c user.email=a@b -c user.name=a commit -q "
                       "--allow-empty -m m && git log --oneline | wc -l")  # fmt: skip
        assert git.ok and git.stdout.strip() == "1", git.stderr  # no "dubious ownership"
        box.exec("echo ok", limits=ResourceLimits(workspace_mb=16))  # resized
        assert f"size={16 * 1024 + 1024}k" in Path("/proc/self/mountinfo").read_text()
    assert not _mounted(open_dir)
    assert (open_dir / "harness.txt").read_text() == "from the harness\nmore\n"
    assert (open_dir / "d" / "y").read_text() == "y\n" and (open_dir / "r" / ".git").is_dir()


@root_only
def test_without_mounting_an_unreachable_workspace_is_a_clear_error(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = _bwrap()
    monkeypatch.setattr(_base, "can_mount", lambda: False)
    if unreachable_parent(workspace, *OWNER) is None:
        pytest.skip("this temporary directory is searchable by everyone")
    with pytest.raises(SandboxError, match=r"cannot reach the workspace .*chmod o\+x"):
        cls(workspace)


@root_only
def test_without_mounting_the_fallback_holds_the_disk_budget(
    open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = _bwrap()
    monkeypatch.setattr(_base, "can_mount", lambda: False)
    limits = ResourceLimits(workspace_mb=4, file_size_mb=None, wall_s=60)
    with cls(open_dir, limits) as box:
        one = box.exec("head -c 3G /dev/zero > big; echo rc=$?")
        assert one.limit_hit == "workspace_size"
        assert (open_dir / "big").stat().st_size <= 5 * 1024 * 1024  # RLIMIT_FSIZE at the budget
        box.exec("rm big")
        many = box.exec("i=0; while :; do head -c 1M /dev/zero > f$i; i=$((i+1)); done")
        assert many.limit_hit == "workspace_size" and many.exit_code is None  # the watchdog
        assert len(list(open_dir.iterdir())) < 2000


def test_process_backend_watchdog_stops_a_growing_workspace(workspace: Path) -> None:
    limits = ResourceLimits(workspace_mb=2, file_size_mb=None, wall_s=60)
    with get_backend("process")(workspace, limits) as box:
        result = box.exec("i=0; while :; do head -c 65536 /dev/zero > f$i; i=$((i+1)); done")
    assert result.limit_hit == "workspace_size" and result.duration_s < 30


def test_workspace_watch_throttles_itself(tmp_path: Path) -> None:
    watch = WorkspaceWatch(tmp_path, 1, min_interval_s=0.0)
    assert watch() is None
    (tmp_path / "f").write_bytes(b"\0" * (2 * 1024 * 1024))
    assert watch() == "workspace_size"
    slow = WorkspaceWatch(tmp_path, 1, min_interval_s=3600)
    assert slow() is None  # not due yet: no walk


@mounting
def test_a_second_sandbox_on_the_same_workspace_shares_the_first_ones_limit(
    open_dir: Path, own_tmp: Path
) -> None:
    cls = _bwrap()
    limits = ResourceLimits(workspace_mb=8, file_size_mb=None)
    with cls(open_dir, limits) as outer:
        outer.exec("echo outer > o")
        before = _workspace_filesystems(own_tmp)
        assert before  # the outer one's
        with cls(open_dir, limits) as inner:  # e.g. a checker's sandbox during scoring
            assert _workspace_filesystems(own_tmp) == before  # no second tmpfs: a bind
            bomb = inner.exec("cat o; head -c 1G /dev/zero > fill")
            assert bomb.stdout == "outer\n" and bomb.limit_hit == "workspace_size"
            inner.exec("rm fill; echo inner > i")
        assert outer.exec("cat i").stdout == "inner\n"
    assert (open_dir / "i").read_text() == "inner\n" and not _mounted(open_dir)


@mounting
def test_a_failed_set_up_leaves_no_mount(open_dir: Path, tmp_path: Path, own_tmp: Path) -> None:
    cls = _bwrap()
    missing_later = tmp_path / "tools"  # under a 0700 directory: must be bound for 64123
    missing_later.mkdir()
    binds = {str(missing_later): "/opt/t"}

    def refuse(self: object, source: Path) -> Path:
        raise SandboxError(f"could not bind {str(source)!r} for the sandbox user: test")

    before = _workspace_filesystems(own_tmp)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("toolproof.sandbox._wsfs.ReachableBinds.add", refuse)
        with pytest.raises(SandboxError, match="could not bind"):
            cls(open_dir, ro_binds=binds)
    assert _workspace_filesystems(own_tmp) == before == set() and not _mounted(open_dir)


@root_only
def test_a_command_the_harness_cannot_move_into_its_cgroup_never_runs(
    open_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cls = _bwrap()
    if not host_support().parents:
        pytest.skip("no cgroups here")

    def refuse(procs_files: list[Path], pid: int) -> None:
        raise PermissionError(13, "Permission denied", str(procs_files[0]))

    monkeypatch.setattr("toolproof.sandbox._cgroup.join_pid", refuse)
    with cls(open_dir) as box, pytest.raises(SandboxError, match="cannot join cgroup"):
        box.exec("echo ran > ran")
    assert not (open_dir / "ran").exists()


@mounting
def test_hostile_trees_are_copied_in_and_back_without_following_anything(
    open_dir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "host-secret"
    secret.write_text("host only")
    os.mkfifo(open_dir / "fifo-from-file-tools")  # would block a naive copy
    with _bwrap()(open_dir, ResourceLimits(workspace_mb=32, wall_s=60)) as box:
        made = box.exec(
            "mkdir -p d && ln -s /etc/shadow d/shadow && mkfifo d/pipe && "
            "python3 -c \"import socket; socket.socket(socket.AF_UNIX).bind('d/sock')\" && "
            "touch \"$(printf 'bad\\377name')\" && "
            "p=deep; i=0; while [ $i -lt 300 ]; do p=$p/d; i=$((i+1)); done; mkdir -p $p && "
            "echo x > $p/../leaf && chmod 000 d && echo ok"
        )
        assert made.stdout.endswith("ok\n"), made.stderr
        assert OwnerWalk().hand_over(open_dir, *OWNER) >= 0  # a deep tree does not break it
    assert not _mounted(open_dir)
    names = set(os.listdir(open_dir))
    assert "bad\udcffname" in names and "deep" in names and "fifo-from-file-tools" not in names
    d = open_dir / "d"
    d.chmod(0o755)
    assert os.readlink(d / "shadow") == "/etc/shadow" and not (d / "pipe").exists()
    assert secret.read_text() == "host only"


def test_the_copy_keeps_the_times_of_directories_links_and_files(tmp_path: Path) -> None:
    """A listing inside the sandbox shows the workspace's times, not the copy's (else two
    runs of one task differ whenever they fall in different minutes)."""
    from toolproof.sandbox._wsfs import _copy_into

    source, target = tmp_path / "source", tmp_path / "target"
    (source / "pkg" / "sub").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1\n")
    (source / "link").symlink_to("pkg/mod.py")
    old = 1_600_000_000_000_000_000  # 2020-09-13
    paths = [source / "pkg" / "sub", source / "pkg" / "mod.py", source / "pkg", source / "link"]
    for i, path in enumerate(paths):
        os.utime(path, ns=(old + i, old + i), follow_symlinks=False)
    os.utime(source, ns=(old, old))
    target.mkdir()
    assert _copy_into(str(source), str(target)) == 4
    for path in [source, *paths]:
        copy = target / path.relative_to(source)
        assert copy.lstat().st_mtime_ns == path.lstat().st_mtime_ns, path
    assert (target / "link").is_symlink()
