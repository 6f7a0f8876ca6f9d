"""Fast snapshots: the hash cache is safe, restore writes only what differs, all kinds of tree."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from toolproof.spec import WorldSpec
from toolproof.worlds import BlobStore, World, WorldSnapshot
from toolproof.worlds import _tree as tree_module
from toolproof.worlds import workspace as workspace_module


@pytest.fixture
def world(tmp_path: Path) -> World:
    files = {f"src/m{n}.py": f"x = {n}\n" for n in range(20)}
    return World(WorldSpec(files={**files, "README.md": "hi\n"}), tmp_root=tmp_path)


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "blobs")


def root_of(world: World) -> Path:
    assert world.workspace is not None
    return world.workspace.root


def count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    hashed: list[str] = []
    real = tree_module._open_regular

    def counting(dir_fd: int, name: bytes) -> int:
        hashed.append(os.fsdecode(name))
        return real(dir_fd, name)

    monkeypatch.setattr(tree_module, "_open_regular", counting)
    return hashed


def test_unchanged_files_are_not_hashed_again(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    time.sleep(0.2)  # older than the racy window (50 ms), so a hash can be trusted later
    hashed = count_hashes(monkeypatch)
    world.digest()
    assert len(hashed) == 21
    hashed.clear()
    world.digest()
    assert hashed == []
    (root_of(world) / "src" / "m3.py").write_text("x = 33\n")
    world.digest()
    assert hashed == ["m3.py"]


def test_a_same_size_rewrite_with_the_old_mtime_is_still_seen(world: World) -> None:
    path = root_of(world) / "README.md"
    before = world.snapshot().files["README.md"][0]
    info = path.stat()
    path.write_text("ho\n")  # same size, same inode
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))  # and the old mtime
    assert world.snapshot().files["README.md"][0] != before


def test_restore_writes_only_what_differs(
    world: World, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = root_of(world)
    ref = world.save_snapshot(blobs)
    (root / "src" / "m1.py").write_text("changed\n")
    (root / "new.txt").write_text("new\n")
    written: list[str] = []
    copy_into = blobs.copy_into

    def counting(sha: str, fd: int) -> None:
        written.append(os.readlink(f"/proc/self/fd/{fd}"))
        copy_into(sha, fd)

    monkeypatch.setattr(blobs, "copy_into", counting)
    world.restore(World.load_snapshot(blobs, ref), blobs)
    assert (root / "src" / "m1.py").read_text() == "x = 1\n"
    assert not (root / "new.txt").exists()
    assert written == [str(root / "src" / "m1.py")]


def test_every_kind_of_change_is_undone(world: World, blobs: BlobStore) -> None:
    root = root_of(world)
    (root / "empty" / "deeper").mkdir(parents=True)
    (root / "private").mkdir(mode=0o700)
    (root / "private" / "key").write_text("k")
    os.chmod(root / "private" / "key", 0o600)
    (root / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(root / "tool.sh", 0o755)
    os.symlink("src/m0.py", root / "link")
    (root / "locked").mkdir()
    (root / "locked" / "f").write_text("f")
    os.chmod(root / "locked", 0o555)
    saved = world.snapshot(blobs)
    assert saved.dirs["empty/deeper"] == 0o755 and saved.dirs["locked"] == 0o555

    os.chmod(root / "locked", 0o755)
    shutil.rmtree(root / "src")
    (root / "src").write_text("a file where a directory was")
    shutil.rmtree(root / "empty")
    (root / "empty").symlink_to("/etc")
    (root / "link").unlink()
    (root / "link").mkdir()
    (root / "link" / "x").write_text("x")
    os.chmod(root / "tool.sh", 0o644)
    os.chmod(root / "private", 0o755)
    (root / "locked" / "g").write_text("g")

    world.restore(saved, blobs)
    again = world.snapshot()
    assert (again.files, again.dirs) == (saved.files, saved.dirs)
    assert world.digest() == saved.digest()
    os.chmod(root / "locked", 0o755)  # let tmp_path clean-up remove it


def test_empty_directories_are_part_of_the_state(world: World) -> None:
    before = world.digest()
    (root_of(world) / "build").mkdir()
    assert world.digest() != before
    (root_of(world) / "build").rmdir()
    assert world.digest() == before


def test_snapshots_from_before_directories_were_kept_still_restore(
    world: World, blobs: BlobStore
) -> None:
    snap = world.snapshot(blobs)
    old = WorldSnapshot(records=snap.records, files=snap.files, has_workspace=True)  # no dirs
    shutil.rmtree(root_of(world) / "src")
    world.restore(old, blobs)
    assert (root_of(world) / "src" / "m7.py").read_text() == "x = 7\n"


def test_snapshot_paths_cannot_leave_the_workspace(world: World, blobs: BlobStore) -> None:
    snap = world.snapshot(blobs)
    sha = snap.files["README.md"]
    bad = WorldSnapshot(files={"../escape": sha}, has_workspace=True)
    with pytest.raises(ValueError, match="leaves the workspace"):
        world.restore(bad, blobs)


def test_blobs_are_copies_never_hard_links(world: World, blobs: BlobStore) -> None:
    snap = world.snapshot(blobs)
    sha = snap.files["README.md"][0]
    source = root_of(world) / "README.md"
    assert blobs.path(sha).stat().st_ino != source.stat().st_ino
    source.write_text("agent writes in place\n")  # the stored content must not change
    assert blobs.get_bytes(sha) == b"hi\n"


NOBODY_SCRIPT = """
import importlib, os, sys, types
package = types.ModuleType("ws")  # the worlds modules alone: stdlib only, any Python 3.11
package.__path__ = [os.path.dirname(sys.argv[1])]
sys.modules["ws"] = package
module = importlib.import_module("ws.workspace")
root = module.Path(sys.argv[2])
ws = module.Workspace(root)
files, dirs = ws.scan()
print(sorted(files), dirs["closed"], files["plain"].mode)
# An agent empties a read-only directory and locks the root: restore puts it all back.
os.chmod(root / "locked", 0o755)
(root / "locked" / "f").unlink()
(root / "locked" / "g").write_text("g")
os.chmod(root / "locked", 0o555)
entries = {k: [v.sha256, v.mode] if v.link is None else [None, 0, v.link] for k, v in files.items()}
ws.restore(entries, dirs, lambda sha, fd: os.write(fd, b"f"))
after = ws.scan()
print(after == (files, dirs))
"""


def _python_for_nobody() -> str:
    for python in (sys.executable, "/usr/bin/python3", "/usr/local/bin/python3"):
        try:
            probe = subprocess.run(
                [python, "-c", "import sys; assert sys.version_info >= (3, 11)"],
                user=65534,
                capture_output=True,
                check=False,
            )
        except OSError:  # not reachable for nobody (a venv under /root)
            continue
        if probe.returncode == 0:
            return python
    pytest.skip("no Python 3.11+ that nobody may run")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run the scan as another user")
def test_a_non_root_harness_snapshots_and_restores_what_an_agent_locked() -> None:
    """An agent's chmod 000 must not become an infra error when the harness is not root."""
    python = _python_for_nobody()
    with tempfile.TemporaryDirectory(prefix="toolproof-nobody-") as tmp:
        tree = Path(tmp) / "tree"
        (tree / "closed").mkdir(parents=True)
        (tree / "closed" / "secret").write_text("s")
        (tree / "plain").write_text("p")
        for path in (Path(tmp), tree, tree / "closed", tree / "closed" / "secret", tree / "plain"):
            os.chown(path, 65534, 65534)
        for name in ("searchless", "locked"):
            (tree / name).mkdir()
            (tree / name / "f").write_text("f")
            os.chown(tree / name, 65534, 65534)
            os.chown(tree / name / "f", 65534, 65534)
        os.chmod(tree / "locked", 0o555)
        for path in (tree / "plain", tree / "closed" / "secret", tree / "closed"):
            os.chmod(path, 0)
        os.chmod(tree / "searchless", 0o600)  # listable, but its entries cannot be reached
        done = subprocess.run(
            [python, "-c", NOBODY_SCRIPT, workspace_module.__file__, str(tree)],
            capture_output=True,
            text=True,
            timeout=120,
            user=65534,
            group=65534,
            extra_groups=[],
            cwd="/",
        )
        assert done.returncode == 0, done.stderr
        listed, restored = done.stdout.strip().splitlines()
        assert listed == "['closed/secret', 'locked/f', 'plain', 'searchless/f'] 0 0"
        assert restored == "True"
        assert (tree / "plain").stat().st_mode & 0o777 == 0  # modes are put back
        assert (tree / "closed").stat().st_mode & 0o777 == 0


def test_threads_storing_the_same_blob_at_once_never_collide(tmp_path: Path) -> None:
    """Workspace walks run on several threads of one process: the same content stored by
    many of them at once ends as one blob and no error (each writes its own temp file)."""
    import threading

    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(1 << 20))
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def store(i: int) -> None:
        blobs = BlobStore(tmp_path / "blobs")  # a fresh store: nothing known yet
        start.wait()
        try:
            if i % 2:
                blobs.put_bytes(source.read_bytes())
            else:
                with source.open("rb") as handle:
                    blobs.put_fd(handle.fileno(), hashlib.sha256(source.read_bytes()).hexdigest())
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=store, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored = [p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]
    assert len(stored) == 1 and stored[0].read_bytes() == source.read_bytes()
