"""A real directory per episode, seen by the agent as ``/workspace``.

Nothing in it is trusted: the agent's commands may have put links, FIFOs, sockets,
odd names or millions of entries there. Every harness-side access goes through
:mod:`._safefs` (no link is followed at any component, no special file is opened,
every open is non-blocking, walks are bounded); this module adds the agent's view of
paths (``/workspace/...``) and the harness's writes, given to the sandbox's user.
Snapshots and restores of the whole tree are in :mod:`._tree`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from . import _safefs, _tree
from ._safefs import LinkError, SpecialFileError, WalkBudget, shown
from ._tree import BlobSink, FileEntry

__all__ = [
    "VIRTUAL_ROOT",
    "FileEntry",
    "LinkError",
    "PathEscapeError",
    "SpecialFileError",
    "WalkBudget",
    "Workspace",
    "shown",
]

VIRTUAL_ROOT = "/workspace"


class PathEscapeError(ValueError):
    """A path that would reach outside the workspace."""


@dataclass(frozen=True)
class Listed:
    """One entry of :meth:`Workspace.listdir`: its path below the root and its kind."""

    parts: tuple[bytes, ...]
    mode: int
    size: int


class Workspace:
    """A directory the agent's file tools and commands work in.

    Args:
        root: The directory.
        owner: ``(uid, gid)`` that everything the harness writes here is given to (the
            sandbox's user, see :func:`toolproof.sandbox.sandbox_owner`); None leaves
            files to the harness's own user.
    """

    def __init__(self, root: Path, *, owner: tuple[int, int] | None = None) -> None:
        self.root = root.resolve()
        self.owner = owner
        self.overflow: str | None = None
        """Why the last :meth:`scan` stopped early (too many entries, too deep), or None."""
        self._hash_cache: dict[str, _tree.Hashed] = {}

    # -- agent paths -------------------------------------------------------------------

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
                f"{shown(path)!r} is outside the workspace; use a path under {VIRTUAL_ROOT}/"
            )
        parts: list[str] = []
        for part in PurePosixPath(raw.lstrip("/")).parts:
            if part in ("", "."):
                continue
            if part == "..":
                if not parts:
                    raise PathEscapeError(f"{shown(path)!r} climbs out of the workspace with '..'")
                parts.pop()
            else:
                parts.append(part)
        return "/".join(parts)

    def parts(self, path: str) -> list[bytes]:
        """An agent-given path as name components (bytes) below the root.

        Names that are not UTF-8 are reached with the ``\\udcNN`` escapes Python's
        ``surrogateescape`` uses. Agents never send those (a lone surrogate is refused by
        the ingress for agent bytes, ``toolproof.trajectory.ingress``): for them such a
        name is reached by commands; harness code may still use the escapes.

        Raises:
            PathEscapeError: The path leaves the workspace.
            ValueError: It holds a NUL byte or a character no file name can hold.
        """
        rel = self.relative(path)
        if "\0" in rel:
            raise ValueError("a path cannot contain a NUL byte")
        try:
            return [os.fsencode(p) for p in rel.split("/")] if rel else []
        except UnicodeEncodeError:
            raise ValueError("it holds a character no file name can hold") from None

    def virtual(self, rel: str | bytes | tuple[bytes, ...] | list[bytes]) -> str:
        """The path as the agent sees it (odd bytes shown as ``\\xNN``)."""
        if isinstance(rel, tuple | list):
            rel = b"/".join(rel)
        text = shown(rel)
        return f"{VIRTUAL_ROOT}/{text}" if text else VIRTUAL_ROOT

    def resolve(self, path: str, *, must_exist: bool = False) -> Path:
        """The real path for an agent-given path, refused if any component is a link.

        Prefer :meth:`read_bytes` and friends: a path can be swapped for a link after
        this check. Kept for code that needs a path and runs when no agent can act.

        Raises:
            PathEscapeError: the path, or a link on the way, leads outside.
            FileNotFoundError: ``must_exist`` and nothing is there.
        """
        parts = self.parts(path)
        target = self.root.joinpath(*(os.fsdecode(p) for p in parts))
        for n in range(1, len(parts) + 1):
            at = self.root.joinpath(*(os.fsdecode(p) for p in parts[:n]))
            try:
                mode = at.lstat().st_mode
            except (FileNotFoundError, NotADirectoryError):
                if must_exist:
                    raise FileNotFoundError(
                        f"no such file or directory: {self.virtual(parts)}"
                    ) from None
                return target
            if stat.S_ISLNK(mode):
                raise PathEscapeError(
                    f"{shown(path)!r} goes through a link; file links are never followed"
                )
        return target

    # -- safe access ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _root_fd(self) -> Iterator[int]:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def open_file(self, parts: list[bytes], flags: int = os.O_RDONLY) -> Iterator[int]:
        """A regular file (or with ``O_DIRECTORY`` a directory) opened safely; see _safefs."""
        with self._root_fd() as root:
            fd, _ = _safefs.open_file(root, parts, flags)
        try:
            yield fd
        finally:
            os.close(fd)

    def read_bytes(self, parts: list[bytes], limit: int) -> bytes:
        """A regular file's first ``limit`` bytes (plus one more if it is longer).

        Raises:
            LinkError, SpecialFileError, IsADirectoryError, OSError: see :func:`_safefs.open_file`.
        """
        with self.open_file(parts) as fd:
            return _safefs.read_capped(fd, limit)

    def write_bytes(self, parts: list[bytes], data: bytes, *, exclusive: bool = False) -> None:
        """Write a regular file (parents made as needed), owned by :attr:`owner`.

        A file with other hard links is replaced by a new one, never written through
        (the other name may be outside the workspace).

        Raises:
            IsADirectoryError: ``parts`` is the root or a directory.
            FileExistsError: ``exclusive`` and something is there.
            LinkError, SpecialFileError, OSError: see :func:`_safefs.open_file`.
        """
        if not parts:
            raise IsADirectoryError(21, "is a directory")
        name = parts[-1]
        create = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else 0)
        with self._root_fd() as root:
            parent = _safefs.open_parent(root, parts, create=True, owner=self.owner)
        try:
            fd, info = _safefs.open_file(parent, [name], create)
            if info.st_nlink > 1:
                os.close(fd)
                os.unlink(name, dir_fd=parent)
                mode = stat.S_IMODE(info.st_mode)
                fd, info = _safefs.open_file(parent, [name], create | os.O_EXCL, mode)
            try:
                os.ftruncate(fd, 0)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                if self.owner is not None:
                    os.fchown(fd, *self.owner)
            finally:
                os.close(fd)
        finally:
            os.close(parent)

    def delete(self, parts: list[bytes]) -> None:
        """Remove one entry that is not a directory (a link itself, never its target).

        Raises:
            IsADirectoryError: It is a directory (or the root).
            FileNotFoundError, LinkError, OSError: missing, or a link on the way.
        """
        if not parts:
            raise IsADirectoryError(21, "is a directory")
        with self._root_fd() as root:
            parent = _safefs.open_parent(root, parts)
        try:
            if stat.S_ISDIR(os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode):
                raise IsADirectoryError(21, "is a directory")
            os.unlink(parts[-1], dir_fd=parent)
        finally:
            os.close(parent)

    def listdir(self, parts: list[bytes], budget: WalkBudget | None = None) -> list[Listed]:
        """A directory's entries (``budget``: everything below it, bounded), unsorted.

        Raises:
            NotADirectoryError: ``parts`` is not a directory.
            LinkError, SpecialFileError, OSError: see :func:`_safefs.open_file`.
        """
        with self.open_file(parts, os.O_RDONLY | os.O_DIRECTORY) as fd:
            if budget is None:
                budget = WalkBudget(max_depth=1, shallow=True)
            out: list[Listed] = []
            for path, _, info in _safefs.walk(fd, budget, tuple(parts)):
                out.append(Listed(path, info.st_mode, info.st_size))
            return out

    def walk_files(
        self, parts: list[bytes], budget: WalkBudget, max_bytes: int
    ) -> Iterator[tuple[tuple[bytes, ...], bytes]]:
        """Every regular file below ``parts`` of at most ``max_bytes``, with its content.

        In a fixed order (names sorted, depth first); bounded by ``budget``.

        Links, FIFOs, sockets and devices are skipped unopened; a file swapped for one
        of them after it was listed is refused by the open (``O_NOFOLLOW``, ``fstat``).
        """
        with self.open_file(parts, os.O_RDONLY | os.O_DIRECTORY) as top:
            for path, dir_fd, info in _safefs.walk(top, budget, tuple(parts)):
                if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
                    continue
                try:
                    fd, _ = _safefs.open_file(dir_fd, [path[-1]])
                except OSError:
                    continue
                try:
                    yield path, _safefs.read_capped(fd, max_bytes)
                finally:
                    os.close(fd)

    # -- the whole tree ------------------------------------------------------------------

    def manifest(self) -> dict[str, FileEntry]:
        """Every file and link, relative path to entry (see :meth:`scan`)."""
        return self.scan()[0]

    def scan(self, sink: BlobSink | None = None) -> tuple[dict[str, FileEntry], dict[str, int]]:
        """Every file and link (key to entry) and every directory (key to mode), sorted.

        Keys are paths below the root as :func:`_safefs.key_of` writes them (plain
        text unless a name is not UTF-8). Links are recorded, never followed; FIFOs,
        sockets and devices are not listed and never opened. The walk is bounded
        (:class:`WalkBudget`); when it stops early :attr:`overflow` says why. A file is
        hashed again only when its (size, mtime, ctime, inode) changed (see _tree).

        Args:
            sink: Where file contents go as they are seen (a blob store), if anywhere.
        """
        with self._root_fd() as root:
            files, dirs, self._hash_cache, self.overflow = _tree.scan(root, self._hash_cache, sink)
        return files, dirs

    def restore(
        self,
        files: dict[str, list[Any]],
        dirs: dict[str, int],
        fetch: Callable[[str, int], None],
    ) -> None:
        """Make the tree equal to a snapshot's, touching only what differs.

        Args:
            files: Snapshot entries: key to ``[sha256, mode]`` or ``[None, 0, target]``.
            dirs: Directory modes (empty for snapshots older than directory capture:
                directories are then the files' parents, with modes left as they are).
            fetch: Writes the content with a given sha256 to an open, empty file.

        Raises:
            ValueError: A path in the snapshot leaves the workspace.
        """
        have = self.scan()
        with self._root_fd() as root:
            _tree.restore(root, have, files, dirs, fetch, self.owner)

    def clear(self) -> None:
        """Remove everything inside the root (the root itself stays); no link is followed."""
        with self._root_fd() as root:
            for name in os.listdir(root):
                _tree.remove(root, os.fsencode(name))
        self._hash_cache.clear()
