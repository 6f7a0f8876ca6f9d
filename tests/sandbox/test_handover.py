"""The owner walk before each command: what the harness wrote is handed over, and
directories that did not change are not listed again."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from toolproof.sandbox import SANDBOX_GID, SANDBOX_UID
from toolproof.sandbox._handover import SETTLE_S, OwnerWalk

OWNER = (SANDBOX_UID, SANDBOX_GID)
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")


def _owners(root: Path) -> set[tuple[int, int]]:
    found = {(os.lstat(root).st_uid, os.lstat(root).st_gid)}
    for path in root.rglob("*"):
        info = os.lstat(path)
        found.add((info.st_uid, info.st_gid))
    return found


def _settled(walk: OwnerWalk, root: Path) -> None:
    """Walk until the tree's directories are old enough to be trusted unchanged."""
    time.sleep(SETTLE_S + 0.05)
    walk.hand_over(root, *OWNER)  # records the ctimes as settled


@root_only
def test_unchanged_directories_are_passed_through_not_listed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    for index in range(50):
        (ws / "a" / f"f{index}").write_text("x")
    walk = OwnerWalk()
    assert walk.hand_over(ws, *OWNER) == 53 and walk.scanned == 3
    _settled(walk, ws)
    assert walk.hand_over(ws, *OWNER) == 0 and walk.scanned == 0
    assert _owners(ws) == {OWNER}


@root_only
def test_what_the_harness_creates_later_is_handed_over(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / "a" / "b").mkdir(parents=True)
    walk = OwnerWalk()
    walk.hand_over(ws, *OWNER)
    _settled(walk, ws)
    (ws / "a" / "b" / "new.txt").write_text("root wrote this")  # deep: only b changed
    (ws / "a" / "b" / "newdir" / "inner").mkdir(parents=True)
    (ws / "a" / "b" / "newdir" / "inner" / "f").write_text("x")
    assert walk.hand_over(ws, *OWNER) == 4 and walk.scanned == 3  # b, newdir, inner
    assert _owners(ws) == {OWNER}
    os.replace(ws / "a" / "b" / "new.txt", ws / "moved.txt")  # a rename changes both
    (ws / "rooted").write_text("x")
    assert walk.hand_over(ws, *OWNER) == 1 and _owners(ws) == {OWNER}


@root_only
def test_a_directory_swapped_for_a_link_is_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "host"
    secret.mkdir()
    (secret / "file").write_text("root's")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    walk = OwnerWalk()
    walk.hand_over(ws, *OWNER)
    _settled(walk, ws)
    (ws / "sub").rmdir()
    (ws / "sub").symlink_to(secret)  # what a command could do between two walks
    walk.hand_over(ws, *OWNER)
    assert os.lstat(secret).st_uid == 0 and os.lstat(secret / "file").st_uid == 0
    assert os.lstat(ws / "sub").st_uid == SANDBOX_UID  # the link itself


@root_only
def test_a_change_within_the_settle_time_is_listed_again(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    walk = OwnerWalk()
    walk.hand_over(ws, *OWNER)  # the directory is brand new: not trusted yet
    (ws / "same-tick").write_text("x")  # may share the ctime the walk just read
    assert walk.hand_over(ws, *OWNER) == 1 and _owners(ws) == {OWNER}
