"""A real directory per episode, seen by the agent as ``/workspace``.

File tools go through :meth:`Workspace.resolve`, which refuses ``..``
escapes, absolute paths elsewhere and symbolic links that lead outside.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

VIRTUAL_ROOT = "/workspace"
_RACY_NS = 50_000_000
"""A file changed this soon before it was hashed is hashed again next time: a write
in the same clock tick may leave its times unchanged (timestamps come from a coarse clock)."""


class PathEscapeError(ValueError):
    """A path that would reach outside the workspace."""


@dataclass(frozen=True)
class FileEntry:
    """One entry of a workspace manifest: a regular file or a symbolic link."""

    sha256: str | None
    mode: int
    link: str | None = None


class _Hashed(NamedTuple):
    key: tuple[int, int, int, int]
    """(size, mtime_ns, ctime_ns, inode) when hashed."""
    sha256: str
    hashed_at: int
    """``time.time_ns()`` before the scan that hashed it."""


class Workspace:
    """A directory the agent's file tools and commands work in."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._hash_cache: dict[str, _Hashed] = {}

    def relative(self, path: str) -> str:
        """Normalise an agent-given path to a POSIX path relative to the root.

        Raises:
            PathEscapeError: the path leaves the workspace.
        """
        raw = path.strip()
        if raw.startswith(VIRTUAL_ROOT + "/") or raw == VIRTUAL_ROOT:
            raw = raw[len(VIRTUAL_ROOT) :]
        elif raw.startswith("/"):
            raise PathEscapeError(
                f"{path!r} is outside the workspace; use a path under {VIRTUAL_ROOT}/"
            )
        parts: list[str] = []
        for part in PurePosixPath(raw.lstrip("/")).parts:
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise PathEscapeError(f"{path!r} climbs out of the workspace with '..'")
                parts.pop()
            else:
                parts.append(part)
        return "/".join(parts)

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """The real path for an agent-given path, after following links inside the workspace.

        Raises:
            PathEscapeError: the path, or a link on the way, leads outside.
            FileNotFoundError: ``must_exist`` and nothing is there.
        """
        rel = self.relative(path)
        target = self.root / rel if rel else self.root
        real = Path(os.path.realpath(target))
        if real != self.root and self.root not in real.parents:
            raise PathEscapeError(f"{path!r} leads outside the workspace through a link")
        if must_exist and not real.exists():
            raise FileNotFoundError(f"no such file or directory: {self.virtual(rel)}")
        return real

    def virtual(self, rel: str) -> str:
        """The path as the agent sees it."""
        return f"{VIRTUAL_ROOT}/{rel}" if rel else VIRTUAL_ROOT

    def manifest(self) -> dict[str, FileEntry]:
        """Every file and link, relative path to entry (see :meth:`scan`)."""
        return self.scan()[0]

    def scan(self) -> tuple[dict[str, FileEntry], dict[str, int]]:
        """Every file and link (path to entry) and every directory (path to mode), sorted.

        A file is hashed again only when its (size, mtime, ctime, inode) changed, or
        when it changed so shortly before its last hash that a later write could have
        kept the same times (the "racy" case git also guards against). Fifos,
        sockets and devices are not listed.
        """
        files: dict[str, FileEntry] = {}
        dirs: dict[str, int] = {}
        cache: dict[str, _Hashed] = {}
        now = time.time_ns()
        todo = [("", str(self.root))]
        opened: list[tuple[str, int]] = []  # directories made readable, with their modes
        try:
            while todo:
                rel_dir, path = todo.pop()
                for entry in _entries(path, opened):
                    rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                    try:
                        info = entry.stat(follow_symlinks=False)
                        if stat.S_ISDIR(info.st_mode):
                            dirs[rel] = stat.S_IMODE(info.st_mode)
                            todo.append((rel, entry.path))
                        elif stat.S_ISLNK(info.st_mode):
                            files[rel] = FileEntry(None, 0o777, os.readlink(entry.path))
                        elif stat.S_ISREG(info.st_mode):
                            cache[rel] = self._hash(rel, entry.path, info, now)
                            files[rel] = FileEntry(cache[rel].sha256, stat.S_IMODE(info.st_mode))
                    except FileNotFoundError:  # removed while being read: it is not there
                        continue
        finally:
            for path, mode in reversed(opened):
                os.chmod(path, mode)
        self._hash_cache = cache
        return dict(sorted(files.items())), dict(sorted(dirs.items()))

    def _hash(self, rel: str, path: str, info: os.stat_result, now: int) -> _Hashed:
        key = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        cached = self._hash_cache.get(rel)
        # Times in whole seconds mean a coarse file system: allow for a 2 s granularity.
        racy = 2_000_000_000 if info.st_ctime_ns % 1_000_000_000 == 0 else _RACY_NS
        if cached is not None and cached.key == key and key[2] + racy < cached.hashed_at:
            return cached
        return _Hashed(key, _hash_file(path), now)

    def restore(
        self,
        files: dict[str, list[Any]],
        dirs: dict[str, int],
        fetch: Callable[[str, Path], None],
    ) -> None:
        """Make the tree equal to a snapshot's, touching only what differs.

        Args:
            files: Snapshot entries: path to ``[sha256, mode]`` or ``[None, 0, target]``.
            dirs: Directory modes (empty for snapshots older than directory capture:
                directories are then the files' parents, with modes left as they are).
            fetch: Writes the content with a given sha256 to a new file at a path.

        Raises:
            ValueError: A path in the snapshot leaves the workspace.
        """
        for rel in [*files, *dirs]:
            if rel.startswith("/") or ".." in rel.split("/") or not rel:
                raise ValueError(f"snapshot path {rel!r} leaves the workspace")
        have_files, have_dirs = self.scan()
        want_dirs: dict[str, int | None] = {p: None for rel in files for p in _parents(rel)}
        want_dirs.update(dirs)
        for rel, entry in have_files.items():
            if not _same_kind(entry, files.get(rel)):
                _unlink(self.root / rel)
        for rel in sorted(have_dirs.keys() - want_dirs.keys(), reverse=True):
            _rmtree(self.root / rel)
        for rel in sorted(want_dirs):
            target = self.root / rel
            if rel not in have_dirs:
                target.mkdir(exist_ok=True)
            elif have_dirs[rel] & 0o700 != 0o700:
                os.chmod(target, have_dirs[rel] | 0o700)
        for rel, want in files.items():
            have = have_files.get(rel)
            target = self.root / rel
            if want[0] is None:
                if have is None or have.link != want[2]:
                    _unlink(target)
                    os.symlink(want[2], target)
            elif have is None or have.sha256 != want[0]:
                _unlink(target)
                fetch(want[0], target)
                os.chmod(target, want[1])
            elif have.mode != want[1]:
                os.chmod(target, want[1])
        for rel, mode in sorted(want_dirs.items(), reverse=True):  # children first
            final = have_dirs.get(rel) if mode is None else mode
            if final is not None and (have_dirs.get(rel) != final or final & 0o700 != 0o700):
                os.chmod(self.root / rel, final)

    def clear(self) -> None:
        """Remove everything inside the root (the root itself stays)."""
        for child in self.root.iterdir():
            if child.is_dir() and not child.is_symlink():
                _rmtree(child)
            else:
                child.unlink()
        self._hash_cache.clear()


def _parents(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _same_kind(have: FileEntry, want: list[Any] | None) -> bool:
    """Whether ``have`` is dealt with in place (a file stays a file, a link a link)."""
    return want is not None and (have.link is None) == (want[0] is not None)


def _unlink(path: Path) -> None:
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except PermissionError:  # a directory we may not write in (only when not root)
        os.chmod(path.parent, stat.S_IMODE(path.parent.lstat().st_mode) | 0o700)
        path.unlink()


def _rmtree(path: Path) -> None:
    """``shutil.rmtree`` that also empties directories whose mode forbids it (not as root)."""
    try:
        shutil.rmtree(path)
    except FileNotFoundError:
        return
    except PermissionError:
        todo = [path.parent, path]
        while todo:
            directory = todo.pop()
            os.chmod(directory, stat.S_IMODE(directory.lstat().st_mode) | 0o700)
            if directory != path.parent:
                entries = os.scandir(directory)
                todo += [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
        shutil.rmtree(path)


@contextlib.contextmanager
def _allowing(path: str, bits: int) -> Iterator[None]:
    """Add permission ``bits`` to one of our own files for a moment; put the mode back."""
    mode = stat.S_IMODE(os.lstat(path).st_mode)
    os.chmod(path, mode | bits)
    try:
        yield
    finally:
        os.chmod(path, mode)


def _entries(path: str, opened: list[tuple[str, int]]) -> list[os.DirEntry[str]]:
    """A directory's entries, even when its mode forbids reading it (an agent's chmod).

    Such a directory is opened up (its mode noted in ``opened``) until the scan is
    done, since what is below it must be reached too. Never needed as root.
    """
    try:
        if not os.access(path, os.R_OK | os.X_OK):
            mode = stat.S_IMODE(os.lstat(path).st_mode)
            os.chmod(path, mode | 0o500)
            opened.append((path, mode))
        with os.scandir(path) as it:
            return list(it)
    except FileNotFoundError:
        return []


def _hash_file(path: str) -> str:
    """sha256 of a file's content, even when its mode forbids reading it."""
    sha = hashlib.sha256()
    try:
        handle = open(path, "rb")  # noqa: SIM115  (closed by the with below)
    except PermissionError:
        with _allowing(path, 0o400):
            handle = open(path, "rb")  # noqa: SIM115  (closed by the with below)
    with handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()
