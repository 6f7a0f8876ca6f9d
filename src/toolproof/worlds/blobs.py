"""A content-addressed blob store: each file's bytes stored once, under their sha256.

Blobs are always copies, never hard links to workspace files: a hard link shares
the inode, so a later in-place write in the workspace would change the stored
blob (and every snapshot naming it). Where the file system can share extents
(btrfs, XFS: ``FICLONE``), a copy is a reflink and costs no data; elsewhere it is
an in-kernel copy. Only content not stored yet is copied, so a snapshot after a
step costs the files that step changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sys
import threading
from pathlib import Path

_FICLONE = 0x40049409
"""ioctl that makes a file share another's extents (Linux btrfs, XFS, bcachefs)."""


def _tmp_name(target: Path) -> Path:
    """A temporary name beside ``target`` unique to this process and thread.

    Several threads of one run store blobs at once (workspace walks run off the event
    loop), sometimes the same blob: a name unique per process alone would let one thread
    rename the other's half-written file.
    """
    return target.with_name(f"{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")


class BlobStore:
    """Blobs under ``root/ab/cdef...``; writing the same content twice is free."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self._known: set[str] = set()
        self._reflink = sys.platform == "linux"

    def path(self, sha: str) -> Path:
        """Where a blob lives."""
        return self.root / sha[:2] / sha[2:]

    def has(self, sha: str) -> bool:
        """Whether the blob is stored."""
        if sha in self._known:
            return True
        if self.path(sha).exists():
            self._known.add(sha)  # blobs are never removed, so this stays true
            return True
        return False

    def put_bytes(self, data: bytes) -> str:
        """Store bytes; return their sha256."""
        sha = hashlib.sha256(data).hexdigest()
        if not self.has(sha):
            target = self.path(sha)
            target.parent.mkdir(exist_ok=True)
            tmp = _tmp_name(target)
            tmp.write_bytes(data)
            tmp.replace(target)
            self._known.add(sha)
        return sha

    def put_file(self, source: Path, sha: str) -> None:
        """Store a file whose hash is already known (a copy or reflink, never a hard link)."""
        if self.has(sha):
            return
        target = self.path(sha)
        target.parent.mkdir(exist_ok=True)
        tmp = _tmp_name(target)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        self._copy(source, tmp)
        tmp.replace(target)
        self._known.add(sha)

    def put_fd(self, fd: int, sha: str) -> None:
        """Store the content of an open file (from its current offset) whose hash is known.

        The workspace hands over a descriptor it opened safely (no link followed, a
        regular file), so the store never opens a path the agent controls.
        """
        if self.has(sha):
            return
        target = self.path(sha)
        target.parent.mkdir(exist_ok=True)
        tmp = _tmp_name(target)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        try:
            self._copy_fd(fd, out)
        finally:
            os.close(out)
        tmp.replace(target)
        self._known.add(sha)

    def copy_into(self, sha: str, fd: int) -> None:
        """Write a blob's content into an open, empty file (a restore's fresh file)."""
        src = os.open(self.path(sha), os.O_RDONLY | os.O_CLOEXEC)
        try:
            self._copy_fd(src, fd)
        finally:
            os.close(src)

    def _copy_fd(self, src: int, dst: int) -> None:
        """Reflink where the file system can, else an in-kernel copy, else read and write."""
        if self._reflink:
            import fcntl  # Unix only, so not at the top

            try:
                if os.lseek(src, 0, os.SEEK_CUR) == 0:
                    fcntl.ioctl(dst, _FICLONE, src)
                    return
            except OSError:  # not supported here (ext4, tmpfs, across file systems)
                self._reflink = False
        while True:
            try:
                n = os.copy_file_range(src, dst, 1 << 30)
            except OSError:  # not between these file systems: plain reads and writes
                while chunk := os.read(src, 1 << 20):
                    view = memoryview(chunk)
                    while view:
                        view = view[os.write(dst, view) :]
                return
            if n == 0:
                return

    def get_bytes(self, sha: str) -> bytes:
        """The stored bytes.

        Raises:
            FileNotFoundError: no such blob.
        """
        return self.path(sha).read_bytes()

    def copy_to(self, sha: str, dest: Path) -> None:
        """Write a blob's content to ``dest`` (a fresh file, never a shared link)."""
        self._copy(self.path(sha), dest)

    def _copy(self, source: Path, dest: Path) -> None:
        """Reflink where the file system can, else an ordinary (in-kernel) copy."""
        if self._reflink:
            import fcntl  # Unix only, so not at the top

            with open(source, "rb") as src, open(dest, "wb") as dst:
                try:
                    fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
                    return
                except OSError:  # not supported here (ext4, tmpfs, across file systems)
                    self._reflink = False
        shutil.copyfile(source, dest)
