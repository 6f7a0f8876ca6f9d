"""The world: build from a spec, digest, snapshot to a blob store, restore byte for byte, diff."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolproof.spec import WorldSpec
from toolproof.worlds import BlobStore, World


def _tree(root: Path) -> dict[str, tuple[bytes | str, int]]:
    out: dict[str, tuple[bytes | str, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = (os.readlink(path), 0)
        elif path.is_file():
            out[rel] = (path.read_bytes(), path.stat().st_mode & 0o777)
    return out


@pytest.fixture
def world(tmp_path: Path) -> World:
    spec = WorldSpec(
        records={"products": {"A": {"stock": 3}}, "orders": {}},
        files={"data/a.txt": "alpha\n", "/workspace/b.bin": "beta"},
    )
    return World(spec, tmp_root=tmp_path)


def test_build_copies_records_and_writes_files(world: World, tmp_path: Path) -> None:
    assert world.workspace is not None
    assert world.workspace.root.is_relative_to(tmp_path)
    assert (world.workspace.root / "data" / "a.txt").read_text() == "alpha\n"
    assert (world.workspace.root / "b.bin").read_text() == "beta"
    assert world.records == {"products": {"A": {"stock": 3}}, "orders": {}}


def test_records_only_worlds_have_no_directory() -> None:
    spec = WorldSpec(records={"a": 1})
    with World(spec) as world:
        assert world.workspace is None
        world.records["a"] = 2  # the spec is not shared
    assert spec.records == {"a": 1}
    assert WorldSpec(workspace=True).needs_workspace and not WorldSpec().needs_workspace


def test_fixtures_are_copied_relative_to_the_task_file(tmp_path: Path) -> None:
    (tmp_path / "fx" / "sub").mkdir(parents=True)
    (tmp_path / "fx" / "sub" / "f.txt").write_text("from fixtures")
    with World(WorldSpec(fixtures="fx"), fixtures_base=tmp_path) as world:
        assert world.workspace is not None
        assert (world.workspace.root / "sub" / "f.txt").read_text() == "from fixtures"


def test_digest_tracks_records_and_files(world: World) -> None:
    assert world.workspace is not None
    first = world.digest()
    assert world.digest() == first
    world.records["products"]["A"]["stock"] = 4
    world.touch()
    second = world.digest()
    assert second != first
    (world.workspace.root / "data" / "a.txt").write_text("changed")
    assert world.digest() != second


def test_snapshot_and_restore_byte_for_byte(world: World, tmp_path: Path) -> None:
    assert world.workspace is not None
    root = world.workspace.root
    (root / "bin.dat").write_bytes(bytes(range(256)) * 3)
    os.chmod(root / "bin.dat", 0o750)
    os.symlink("data/a.txt", root / "link")
    blobs = BlobStore(tmp_path / "blobs")
    ref = world.save_snapshot(blobs)
    saved_tree, saved_records, saved_digest = _tree(root), world.records, world.digest()

    (root / "data" / "a.txt").write_text("overwritten")
    (root / "bin.dat").unlink()
    (root / "new.txt").write_text("new")
    world.records = {"products": {}}
    world.touch()
    assert world.digest() != saved_digest

    world.restore(World.load_snapshot(blobs, ref), blobs)
    assert _tree(root) == saved_tree
    assert world.records == saved_records
    assert world.digest() == saved_digest


def test_restoring_files_needs_the_blob_store(world: World) -> None:
    snapshot = world.snapshot()
    with pytest.raises(ValueError, match="blob store"):
        world.restore(snapshot)


def test_diff_of_records_and_files(world: World) -> None:
    assert world.workspace is not None
    root = world.workspace.root
    before = world.snapshot()
    world.records["orders"]["O1"] = {"status": "pending"}
    (root / "data" / "a.txt").write_text("changed")
    (root / "b.bin").unlink()
    (root / "c.txt").write_text("new")
    diff = World.diff(before, world.snapshot())
    assert diff.records == {"orders.O1.status": [None, "pending"]}
    assert diff.files_added == ["c.txt"]
    assert diff.files_removed == ["b.bin"]
    assert diff.files_modified == ["data/a.txt"]
    assert diff.changed_paths() == ["b.bin", "c.txt", "data/a.txt", "orders.O1.status"]
    assert World.diff(before, before).empty


def test_blob_store_keeps_each_content_once(tmp_path: Path) -> None:
    blobs = BlobStore(tmp_path / "blobs")
    sha = blobs.put_bytes(b"same")
    assert blobs.put_bytes(b"same") == sha
    assert blobs.has(sha) and blobs.get_bytes(sha) == b"same"
    assert len([p for p in (tmp_path / "blobs").rglob("*") if p.is_file()]) == 1
    with pytest.raises(FileNotFoundError):
        blobs.get_bytes("0" * 64)


def test_close_removes_the_directory_and_closes_extras(world: World) -> None:
    assert world.workspace is not None
    root = world.workspace.root

    class Closable:
        closed = False

        def close(self) -> None:
            self.closed = True

    extra = Closable()
    world.extras["sandbox"] = extra
    world.close()
    world.close()  # idempotent
    assert not root.exists()
    assert extra.closed
