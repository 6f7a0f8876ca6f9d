"""A hostile workspace against snapshots, digests, diffs, restores and world building.

What an agent's commands could leave behind (links to secrets, a link swapped in for a
directory, FIFOs, sockets, devices, names that are not UTF-8, huge, many or deep files)
must never be followed, opened, block, crash the episode or reach the blob store; a
restore must never write through a link; fixtures come only from inside the suite.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import sandbox_owner
from toolproof.spec import WorldSpec
from toolproof.worlds import BlobStore, World, WorldSnapshot, _safefs, _tree
from toolproof.worlds._safefs import WalkBudget, key_of, name_of_key
from toolproof_helpers import bind_unix

SECRET = b"sk-outside-secret-4711"


def _environment() -> list[bytes]:
    with open("/proc/self/environ", "rb") as handle:
        return [p for p in handle.read().split(b"\0") if len(p) > 12]


@pytest.fixture(params=["openat2", "walk"])
def resolver(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(_safefs, "_openat2_ok", None if request.param == "openat2" else False)
    return str(request.param)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_bytes(SECRET)
    return out


@pytest.fixture
def world(tmp_path: Path, resolver: str) -> Iterator[World]:
    built = World(WorldSpec(files={"a/b.txt": "b\n", "top.txt": "top\n"}), tmp_root=tmp_path)
    yield built
    built.close()


@pytest.fixture
def blobs(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "blobs")


def root(world: World) -> Path:
    assert world.workspace is not None
    return world.workspace.root


def stored(blobs: BlobStore) -> bytes:
    """Everything in the blob store, concatenated."""
    return b"".join(p.read_bytes() for p in blobs.root.rglob("*") if p.is_file())


@pytest.fixture
def watchdog(world: World) -> Iterator[None]:
    """Unblock any FIFO reader after a minute, so a regression fails rather than hangs."""
    done = threading.Event()

    def unblock() -> None:
        if done.wait(60):
            return
        for pipe in root(world).rglob("*"):
            if pipe.is_fifo():
                os.close(os.open(pipe, os.O_RDWR | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()
    yield
    done.set()


def test_links_are_recorded_as_links_never_followed(
    world: World, blobs: BlobStore, outside: Path
) -> None:
    ws = root(world)
    os.symlink("/etc/shadow", ws / "shadow")
    os.symlink("/proc/self/environ", ws / "environ")
    os.symlink(outside, ws / "outdir")
    os.symlink(outside / "secret.txt", ws / "secret")
    snap = world.snapshot(blobs)
    assert snap.files["shadow"] == [None, 0, "/etc/shadow"]
    assert snap.files["environ"] == [None, 0, "/proc/self/environ"]
    assert snap.files["outdir"] == [None, 0, str(outside)]
    assert "outdir/secret.txt" not in snap.files and "outdir" not in snap.dirs
    world.save_snapshot(blobs)
    everything = stored(blobs)
    assert SECRET not in everything and b"root:" not in everything
    assert not any(pair in everything for pair in _environment())


def test_a_directory_swapped_for_a_link_mid_walk_is_not_entered(
    world: World, outside: Path, resolver: str
) -> None:
    ws = root(world)
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    seen = []
    try:
        for parts, _, _ in _safefs.walk(fd, WalkBudget()):
            seen.append(b"/".join(parts))
            if parts == (b"a",):  # listed as a directory; now the agent swaps it
                os.rename(ws / "a", ws / "a-old")
                os.symlink(outside, ws / "a")
    finally:
        os.close(fd)
    assert b"a/secret.txt" not in seen and b"a/b.txt" not in seen


def test_special_files_are_skipped_never_opened(
    world: World, blobs: BlobStore, watchdog: None
) -> None:
    ws = root(world)
    os.mkfifo(ws / "pipe")
    server = socket.socket(socket.AF_UNIX)
    try:
        bind_unix(server, ws / "sock")
        if os.geteuid() == 0:
            os.mknod(ws / "zero", stat.S_IFCHR | 0o666, os.makedev(1, 5))
        before = world.digest()
        snap = world.snapshot(blobs)
        assert set(snap.files) == {"a/b.txt", "top.txt"}
        assert snap.incomplete is None and world.digest() == before == snap.digest()
        world.restore(snap, blobs)  # leaves them alone, does not hang on them
    finally:
        server.close()


def test_a_fifo_where_a_file_belongs_is_replaced_on_restore(
    world: World, blobs: BlobStore, watchdog: None
) -> None:
    snap = world.snapshot(blobs)
    (root(world) / "top.txt").unlink()
    os.mkfifo(root(world) / "top.txt")
    world.restore(snap, blobs)
    assert (root(world) / "top.txt").read_text() == "top\n"


def test_restore_never_writes_through_a_link(world: World, blobs: BlobStore, outside: Path) -> None:
    snap = world.snapshot(blobs)
    ws = root(world)
    (ws / "a" / "b.txt").unlink()
    (ws / "a").rmdir()
    os.symlink(outside, ws / "a")  # so a/b.txt would land in outside/b.txt
    (ws / "top.txt").unlink()
    os.symlink(outside / "secret.txt", ws / "top.txt")  # so top.txt would overwrite the secret
    world.restore(snap, blobs)
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_bytes() == SECRET
    assert not (ws / "a").is_symlink() and (ws / "a" / "b.txt").read_text() == "b\n"
    assert not (ws / "top.txt").is_symlink() and (ws / "top.txt").read_text() == "top\n"
    assert world.snapshot().digest() == snap.digest()


def test_a_link_in_a_snapshot_is_restored_as_a_link(world: World, blobs: BlobStore) -> None:
    os.symlink("/etc/shadow", root(world) / "shadow")
    snap = world.snapshot(blobs)
    os.unlink(root(world) / "shadow")
    world.restore(snap, blobs)
    assert os.readlink(root(world) / "shadow") == "/etc/shadow"


@pytest.mark.parametrize(
    "key", ["../escape", "a/../../x", "/abs", "", "a//b", "\0..", "\0a/\\x2e\\x2e/x", "a/./b"]
)
def test_snapshot_keys_cannot_leave_the_workspace(world: World, blobs: BlobStore, key: str) -> None:
    sha = world.snapshot(blobs).files["top.txt"]
    with pytest.raises(ValueError, match="leaves the workspace"):
        world.restore(WorldSnapshot(files={key: sha}, has_workspace=True), blobs)


ODD = [b"caf\xe9.txt", b"new\nline", b"ctl\x01\x1b[31m", b"\xff", b"back\\slash", b"x" * 255]


def test_odd_names_survive_snapshot_json_and_restore(world: World, blobs: BlobStore) -> None:
    base = os.fsencode(root(world))
    for name in ODD:
        with open(os.path.join(base, name), "wb") as handle:
            handle.write(name)
    os.mkdir(os.path.join(base, b"dir\xe9"))
    os.symlink(b"target\xe9", os.path.join(base, b"link\xe9"))
    ref = world.save_snapshot(blobs)  # JSON: no lone surrogates
    snap = World.load_snapshot(blobs, ref)
    assert snap.digest() == world.digest()
    for name in ODD:
        os.unlink(os.path.join(base, name))
    os.rmdir(os.path.join(base, b"dir\xe9"))
    os.unlink(os.path.join(base, b"link\xe9"))
    diff = World.diff(snap, world.snapshot())
    assert len(diff.files_removed) == len(ODD) + 1
    world.restore(snap, blobs)
    for name in ODD:
        with open(os.path.join(base, name), "rb") as handle:
            assert handle.read() == name
    assert os.readlink(os.path.join(base, b"link\xe9")) == b"target\xe9"
    assert os.path.isdir(os.path.join(base, b"dir\xe9"))


@pytest.mark.parametrize(
    "name", [b"caf\xe9", b"a\\xe9", b"\\", b"plain", b"\xff\\x41", "é".encode()]
)
def test_name_keys_round_trip(name: bytes) -> None:
    key = key_of(name)
    key.encode("utf-8")  # JSON-safe text
    assert name_of_key(key) == name


def test_a_huge_file_is_left_out_and_said_so(
    world: World, blobs: BlobStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tree, "MAX_FILE_BYTES", 1000)
    big = root(world) / "big.bin"
    big.write_bytes(b"\0" * 2000)
    snap = world.snapshot(blobs)
    assert "big.bin" not in snap.files and "big.bin (2000 bytes" in (snap.incomplete or "")
    before = snap.digest()
    big.write_bytes(b"\0" * 3000)
    assert world.digest() != before  # a change of the huge file still changes the digest


def test_many_entries_stop_the_scan_and_say_so(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(80):
        (root(world) / f"f{n}").write_text("x")
    complete = world.digest()
    monkeypatch.setattr(_tree, "MAX_ENTRIES", 50)
    snap = world.snapshot()
    assert snap.incomplete == "more than 50 entries" and len(snap.files) + len(snap.dirs) <= 50
    assert snap.digest() != complete


def test_a_deep_tree_stops_the_scan_and_says_so(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tree, "MAX_DEPTH", 5)
    (root(world) / "1" / "2" / "3" / "4" / "5" / "6").mkdir(parents=True)
    assert world.snapshot().incomplete == "deeper than 5 directories"


def test_a_slow_scan_stops_on_time(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    for n in range(300):
        (root(world) / f"f{n}").write_text("x")
    monkeypatch.setattr(_tree, "MAX_SECONDS", 0.0)
    assert world.snapshot().incomplete == "longer than 0 s"


def test_world_files_and_restores_belong_to_the_sandbox_user(
    world: World, blobs: BlobStore
) -> None:
    owner = sandbox_owner()
    if owner is None:
        pytest.skip("the harness is not root: files stay its own")
    ws = root(world)
    snap = world.snapshot(blobs)
    (ws / "a" / "b.txt").unlink()
    (ws / "a").rmdir()
    world.restore(snap, blobs)
    for path in (ws, ws / "a", ws / "a" / "b.txt", ws / "top.txt"):
        assert (path.lstat().st_uid, path.lstat().st_gid) == owner, path


@pytest.mark.parametrize("key", ["../x", "/etc/passwd", "a/../../x"])
def test_world_files_keys_outside_are_a_clear_error(tmp_path: Path, key: str) -> None:
    with pytest.raises(ValueError, match=r"world\.files: key .* use a relative path"):
        World(WorldSpec(files={key: "x"}), tmp_root=tmp_path)
    assert not (tmp_path / "x").exists()


@pytest.fixture
def suite(tmp_path: Path, outside: Path) -> Path:
    """A suite directory with tasks/ and a fixture tree holding odd things."""
    base = tmp_path / "suite"
    (base / "tasks").mkdir(parents=True)
    (base / "suite.yaml").write_text("name: s\n")
    fixture = base / "fixtures" / "repo"
    (fixture / "src").mkdir(parents=True)
    (fixture / "src" / "main.py").write_text("print(1)\n")
    os.chmod(fixture / "src" / "main.py", 0o4755)  # setuid bit: never copied
    os.symlink("src/main.py", fixture / "link")
    os.mkfifo(fixture / "pipe")
    os.symlink(outside, base / "fixtures" / "out")
    return base


def test_fixtures_are_copied_without_special_files(suite: Path, tmp_path: Path) -> None:
    spec = WorldSpec(fixtures="../fixtures/repo")
    with World(spec, fixtures_base=suite / "tasks", tmp_root=tmp_path) as world:
        ws = root(world)
        assert (ws / "src" / "main.py").read_text() == "print(1)\n"
        assert stat.S_IMODE((ws / "src" / "main.py").stat().st_mode) == 0o755
        assert os.readlink(ws / "link") == "src/main.py"
        assert not (ws / "pipe").exists() and not (ws / "pipe").is_symlink()
        owner = sandbox_owner()
        if owner is not None:
            info = (ws / "src" / "main.py").lstat()
            assert (info.st_uid, info.st_gid) == owner


@pytest.mark.parametrize("fixtures", ["/etc", "../../outside", "../fixtures/out", "../.."])
def test_fixtures_outside_the_suite_are_refused(suite: Path, tmp_path: Path, fixtures: str) -> None:
    with pytest.raises(ValueError, match=r"world\.fixtures: .* outside the suite"):
        World(WorldSpec(fixtures=fixtures), fixtures_base=suite / "tasks", tmp_root=tmp_path)
    assert not list(tmp_path.glob("toolproof-ws-*/workspace/*"))


def test_openat2_is_used_where_the_kernel_has_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_safefs, "_openat2_ok", None)
    (tmp_path / "f").write_text("x")
    os.symlink("f", tmp_path / "link")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        opened, _ = _safefs.open_file(fd, [b"f"])
        os.close(opened)
        major, minor = (int(n) for n in os.uname().release.split(".")[:2])
        assert _safefs._openat2_ok is ((major, minor) >= (5, 6))
        with pytest.raises(_safefs.LinkError) as caught:
            _safefs.open_file(fd, [b"link"])
        assert (caught.value.where, caught.value.target) == (b"link", b"f")
    finally:
        os.close(fd)
