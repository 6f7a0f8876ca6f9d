"""Scanning and restoring a whole workspace tree, never following what the agent left.

Both work on directory file descriptors (see :mod:`._safefs`): a link is recorded
as a link and recreated as one, a FIFO, socket or device is never opened, and a
restore never writes through a link, so a snapshot cannot be made to read or write
outside the workspace.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from . import _safefs
from ._safefs import WalkBudget, key_of, name_of_key

MAX_ENTRIES = 200_000
"""A scan records no more entries than this (then ``WorldSnapshot.incomplete`` says so)."""
MAX_DEPTH = 128
"""... nor goes deeper than this many directories ..."""
MAX_SECONDS = 30.0
"""... nor walks for longer."""
MAX_FILE_BYTES = 1 << 30
"""A bigger file is not hashed or stored (a sparse 1 TB file would take minutes): it is
left out of the snapshot, which says so, with its size and time so the digest changes."""
_RACY_NS = 50_000_000
"""A file changed this soon before it was hashed is hashed again next time: a write
in the same clock tick may leave its times unchanged (timestamps come from a coarse clock)."""


@dataclass(frozen=True)
class FileEntry:
    """One entry of a workspace manifest: a regular file or a symbolic link."""

    sha256: str | None
    mode: int
    link: str | None = None
    """The link's target (as :func:`_safefs.key_of` writes it), for links."""


class Hashed(NamedTuple):
    """A file's hash and the times it was taken at, to know when it is still good."""

    key: tuple[int, int, int, int]
    """(size, mtime_ns, ctime_ns, inode) when hashed."""
    sha256: str
    hashed_at: int
    """``time.time_ns()`` before the scan that hashed it."""


class BlobSink(Protocol):
    """Where a scan stores file contents (a :class:`~toolproof.worlds.BlobStore`)."""

    def has(self, sha: str) -> bool:
        """Whether the content is stored already."""
        ...

    def put_fd(self, fd: int, sha: str) -> None:
        """Store the content read from ``fd`` (from its start) under ``sha``."""
        ...


def scan(
    root: int, cache: dict[str, Hashed], sink: BlobSink | None
) -> tuple[dict[str, FileEntry], dict[str, int], dict[str, Hashed], str | None]:
    """Walk the tree below ``root``: files, directories, the new hash cache, why it stopped."""
    files: dict[str, FileEntry] = {}
    dirs: dict[str, int] = {}
    fresh: dict[str, Hashed] = {}
    now = time.time_ns()
    budget = WalkBudget(max_entries=MAX_ENTRIES, max_depth=MAX_DEPTH, max_seconds=MAX_SECONDS)
    unlocked: list[tuple[int, int]] | None = None if os.geteuid() == 0 else []
    too_big: list[str] = []
    try:
        for parts, dir_fd, info in _safefs.walk(root, budget, unlocked=unlocked):
            key = key_of(b"/".join(parts))
            mode = info.st_mode
            if stat.S_ISDIR(mode):
                dirs[key] = stat.S_IMODE(mode)
            elif stat.S_ISLNK(mode):
                try:
                    target = os.readlink(parts[-1], dir_fd=dir_fd)
                except OSError:
                    continue
                files[key] = FileEntry(None, 0o777, key_of(target))
            elif stat.S_ISREG(mode) and info.st_size > MAX_FILE_BYTES:
                too_big.append(f"{_safefs.shown(key)} ({info.st_size} bytes, {info.st_mtime_ns})")
            elif stat.S_ISREG(mode):
                hashed = _hash(key, parts[-1], dir_fd, info, cache, now, sink)
                if hashed is not None:
                    fresh[key] = hashed
                    files[key] = FileEntry(hashed.sha256, stat.S_IMODE(mode))
    finally:
        if unlocked:
            _safefs.relock(unlocked)
    stopped = budget.stopped
    if too_big:
        big = f"files over {MAX_FILE_BYTES} bytes not captured: {', '.join(too_big[:20])}"
        stopped = big if stopped is None else f"{stopped}; {big}"
    return dict(sorted(files.items())), dict(sorted(dirs.items())), fresh, stopped


def _hash(
    key: str,
    name: bytes,
    dir_fd: int,
    info: os.stat_result,
    cache: dict[str, Hashed],
    now: int,
    sink: BlobSink | None,
) -> Hashed | None:
    stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
    cached = cache.get(key)
    # Times in whole seconds mean a coarse file system: allow for a 2 s granularity.
    racy = 2_000_000_000 if info.st_ctime_ns % 1_000_000_000 == 0 else _RACY_NS
    trusted = cached is not None and cached.key == stamp and stamp[2] + racy < cached.hashed_at
    if cached is not None and trusted and (sink is None or sink.has(cached.sha256)):
        return cached
    try:
        fd = _open_regular(dir_fd, name)
    except OSError:  # gone, or swapped for a link or a FIFO since it was listed
        return None
    try:
        sha = _hash_file(fd)
        if sink is not None and not sink.has(sha):
            os.lseek(fd, 0, os.SEEK_SET)
            sink.put_fd(fd, sha)
    finally:
        os.close(fd)
    return Hashed(stamp, sha, now)


def _open_regular(dir_fd: int, name: bytes) -> int:
    """Open a regular file to read, even one whose mode forbids it (a non-root harness)."""
    try:
        return _safefs.open_file(dir_fd, [name])[0]
    except PermissionError:
        mode = stat.S_IMODE(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        if not _safefs.chmod_nofollow(dir_fd, name, mode | 0o400):
            raise
        try:
            return _safefs.open_file(dir_fd, [name])[0]
        finally:
            _safefs.chmod_nofollow(dir_fd, name, mode)


def _hash_file(fd: int) -> str:
    """sha256 of an open file's content."""
    sha = hashlib.sha256()
    while chunk := os.read(fd, 1 << 20):
        sha.update(chunk)
    return sha.hexdigest()


def _split(key: str) -> list[bytes]:
    """A snapshot key as name components, refused if it could leave the workspace."""
    if key and "\0" not in key:  # the common case: plain text, checked as text
        names = key.split("/")
        if "" not in names and "." not in names and ".." not in names:
            return [name.encode("utf-8") for name in names]
    else:
        parts = name_of_key(key).split(b"/")
        if key and not any(p in (b"", b".", b"..") or b"\0" in p for p in parts):
            return parts
    raise ValueError(f"snapshot path {_safefs.shown(key)!r} leaves the workspace")


def _parents(key: str) -> list[str]:
    parts = key.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _same_kind(have: FileEntry, want: list[Any] | None) -> bool:
    """Whether ``have`` is dealt with in place (a file stays a file, a link a link)."""
    return want is not None and (have.link is None) == (want[0] is not None)


def restore(
    root: int,
    have: tuple[dict[str, FileEntry], dict[str, int]],
    files: dict[str, list[Any]],
    dirs: dict[str, int],
    fetch: Callable[[str, int], None],
    owner: tuple[int, int] | None,
) -> None:
    """Make the tree below ``root`` equal to a snapshot's (see ``Workspace.restore``)."""
    for key in [*files, *dirs]:
        _split(key)  # all of them checked before anything changes
    have_files, have_dirs = have
    want_dirs: dict[str, int | None] = {p: None for key in files for p in _parents(key)}
    want_dirs.update(dirs)
    for key in have_dirs:  # a harness that is not root must be able to write in them
        if have_dirs[key] & 0o700 != 0o700:
            _chmod(root, _split(key), have_dirs[key] | 0o700)
    for key, entry in have_files.items():
        if not _same_kind(entry, files.get(key)):
            _in_parent(root, _split(key), remove)
    for key in sorted(have_dirs.keys() - want_dirs.keys(), reverse=True):
        _in_parent(root, _split(key), remove)
    for key in sorted(want_dirs):
        if key not in have_dirs:
            _in_parent(root, _split(key), _mkdir(owner))
    for key, want in files.items():
        now = have_files.get(key)
        if want[0] is None:
            if now is None or now.link != want[2]:
                _in_parent(root, _split(key), _symlink(name_of_key(str(want[2])), owner))
        elif now is None or now.sha256 != want[0]:
            _in_parent(root, _split(key), _new_file(want[0], int(want[1]), fetch, owner))
        elif now.mode != want[1]:
            _chmod(root, _split(key), int(want[1]))
    for key, mode in sorted(want_dirs.items(), reverse=True):  # children first
        had = have_dirs.get(key)
        final = had if mode is None else mode
        if final is not None and (had != final or final & 0o700 != 0o700):
            _chmod(root, _split(key), final)


def _in_parent(root: int, parts: list[bytes], act: Callable[[int, bytes], None]) -> None:
    parent = _safefs.open_parent(root, parts)
    try:
        act(parent, parts[-1])
    finally:
        os.close(parent)


def _chmod(root: int, parts: list[bytes], mode: int) -> None:
    _in_parent(
        root, parts, lambda fd, name: _ignore_missing(_safefs.chmod_nofollow, fd, name, mode)
    )


def _ignore_missing(fn: Callable[..., object], *args: Any) -> None:
    with contextlib.suppress(FileNotFoundError):
        fn(*args)


def _mkdir(owner: tuple[int, int] | None) -> Callable[[int, bytes], None]:
    def act(parent: int, name: bytes) -> None:
        try:
            os.mkdir(name, 0o755, dir_fd=parent)
        except FileExistsError:  # a directory (fine) or a FIFO, socket, ... in the way
            if stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                return
            remove(parent, name)
            os.mkdir(name, 0o755, dir_fd=parent)
        if owner is not None:
            os.chown(name, *owner, dir_fd=parent, follow_symlinks=False)

    return act


def _symlink(target: bytes, owner: tuple[int, int] | None) -> Callable[[int, bytes], None]:
    def act(parent: int, name: bytes) -> None:
        remove(parent, name)
        os.symlink(target, name, dir_fd=parent)
        if owner is not None:
            os.chown(name, *owner, dir_fd=parent, follow_symlinks=False)

    return act


def _new_file(
    sha: str, mode: int, fetch: Callable[[str, int], None], owner: tuple[int, int] | None
) -> Callable[[int, bytes], None]:
    def act(parent: int, name: bytes) -> None:
        remove(parent, name)  # a fresh inode: never writes through a hard link or a FIFO
        fd, _ = _safefs.open_file(parent, [name], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            fetch(sha, fd)
            if owner is not None:
                os.fchown(fd, *owner)
            os.fchmod(fd, mode)
        finally:
            os.close(fd)

    return act


def remove(parent: int, name: bytes) -> None:
    """Remove ``name`` in ``parent`` whatever it is (a tree is removed without following)."""
    try:
        info = os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=parent)
        return
    try:
        shutil.rmtree(os.fsdecode(name), dir_fd=parent)
    except PermissionError:  # directories an agent locked (only when not root)
        _open_up(parent, name)
        shutil.rmtree(os.fsdecode(name), dir_fd=parent)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise


def _open_up(parent: int, name: bytes) -> None:
    """Give the owner rwx on ``name`` and every directory below it (no link followed)."""
    _safefs.chmod_nofollow(parent, name, 0o700)
    unlocked: list[tuple[int, int]] = []
    fd = _safefs.open_dir(parent, [name])
    try:
        for parts, dir_fd, info in _safefs.walk(fd, WalkBudget(), unlocked=unlocked):
            if stat.S_ISDIR(info.st_mode):
                _safefs.chmod_nofollow(dir_fd, parts[-1], 0o700)
    finally:
        os.close(fd)
        for opened, _ in unlocked:
            os.close(opened)
