"""A real directory per episode, seen by the agent as ``/workspace``.

File tools go through :meth:`Workspace.resolve`, which refuses ``..``
escapes, absolute paths elsewhere and symbolic links that lead outside.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

VIRTUAL_ROOT = "/workspace"


class PathEscapeError(ValueError):
    """A path that would reach outside the workspace."""


@dataclass(frozen=True)
class FileEntry:
    """One entry of a workspace manifest: a regular file or a symbolic link."""

    sha256: str | None
    mode: int
    link: str | None = None


class Workspace:
    """A directory the agent's file tools and commands work in."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._hash_cache: dict[str, tuple[tuple[int, int, int], str]] = {}

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
        """Every file and link, relative path to entry; hashes cached by (size, mtime, inode)."""
        entries: dict[str, FileEntry] = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            dirnames.sort()
            base = Path(dirpath)
            for name in [*filenames, *(d for d in dirnames if (base / d).is_symlink())]:
                full = base / name
                rel = full.relative_to(self.root).as_posix()
                info = full.lstat()
                if stat.S_ISLNK(info.st_mode):
                    entries[rel] = FileEntry(None, 0o777, os.readlink(full))
                elif stat.S_ISREG(info.st_mode):
                    key = (info.st_size, info.st_mtime_ns, info.st_ino)
                    cached = self._hash_cache.get(rel)
                    if cached is not None and cached[0] == key:
                        sha = cached[1]
                    else:
                        sha = _hash_file(full)
                        self._hash_cache[rel] = (key, sha)
                    entries[rel] = FileEntry(sha, stat.S_IMODE(info.st_mode))
        return entries

    def clear(self) -> None:
        """Remove everything inside the root (the root itself stays)."""
        for child in self.root.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        self._hash_cache.clear()


def _hash_file(path: Path) -> str:
    sha = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()
