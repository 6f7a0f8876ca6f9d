"""The workspace: agent paths are confined to /workspace, links included."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolproof.worlds import PathEscapeError, Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "workspace"
    (root / "data").mkdir(parents=True)
    (root / "data" / "a.txt").write_text("a")
    (tmp_path / "outside.txt").write_text("secret")
    return Workspace(root)


@pytest.mark.parametrize(
    ("given", "rel"),
    [
        ("/workspace/data/a.txt", "data/a.txt"),
        ("data/a.txt", "data/a.txt"),
        ("./data/../data/a.txt", "data/a.txt"),
        ("/workspace", ""),
        ("/workspace/", ""),
        ("  /workspace/data  ", "data"),
    ],
)
def test_relative_normalises_agent_paths(ws: Workspace, given: str, rel: str) -> None:
    assert ws.relative(given) == rel


@pytest.mark.parametrize(
    "given",
    ["../outside.txt", "/workspace/../outside.txt", "data/../../x", "/etc/passwd", "/workspacex/a"],
)
def test_escapes_are_refused(ws: Workspace, given: str) -> None:
    with pytest.raises(PathEscapeError):
        ws.resolve(given)


def test_no_link_is_followed_at_any_component(ws: Workspace, tmp_path: Path) -> None:
    os.symlink("/etc/passwd", ws.root / "passwd")
    os.symlink(tmp_path, ws.root / "up")
    os.symlink("data", ws.root / "inside")
    with pytest.raises(PathEscapeError, match="through a link"):
        ws.resolve("passwd")
    with pytest.raises(PathEscapeError):
        ws.resolve("up/outside.txt")
    with pytest.raises(PathEscapeError):  # even a link that stays inside
        ws.resolve("inside/a.txt")
    assert ws.resolve("data/a.txt") == ws.root / "data" / "a.txt"


def test_must_exist_names_the_virtual_path(ws: Workspace) -> None:
    with pytest.raises(FileNotFoundError, match=r"/workspace/data/nope\.txt"):
        ws.resolve("data/nope.txt", must_exist=True)
    assert ws.virtual("data/a.txt") == "/workspace/data/a.txt"
    assert ws.virtual("") == "/workspace"


def test_manifest_lists_files_and_links_with_hashes(ws: Workspace) -> None:
    os.symlink("data", ws.root / "link")
    manifest = ws.manifest()
    assert set(manifest) == {"data/a.txt", "link"}
    assert manifest["link"].link == "data" and manifest["link"].sha256 is None
    before = manifest["data/a.txt"].sha256
    (ws.root / "data" / "a.txt").write_text("changed, and longer")
    assert ws.manifest()["data/a.txt"].sha256 != before


def test_clear_empties_the_root_but_keeps_it(ws: Workspace) -> None:
    ws.clear()
    assert ws.root.is_dir() and list(ws.root.iterdir()) == []
