"""A content-addressed blob store: each file's bytes stored once, under their sha256."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from pathlib import Path


class BlobStore:
    """Blobs under ``root/ab/cdef...``; writing the same content twice is free."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)

    def path(self, sha: str) -> Path:
        """Where a blob lives."""
        return self.root / sha[:2] / sha[2:]

    def has(self, sha: str) -> bool:
        """Whether the blob is stored."""
        return self.path(sha).exists()

    def put_bytes(self, data: bytes) -> str:
        """Store bytes; return their sha256."""
        sha = hashlib.sha256(data).hexdigest()
        target = self.path(sha)
        if not target.exists():
            target.parent.mkdir(exist_ok=True)
            tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            tmp.replace(target)
        return sha

    def put_file(self, source: Path, sha: str) -> None:
        """Store a file whose hash is already known (hard link when possible, else copy)."""
        target = self.path(sha)
        if target.exists():
            return
        target.parent.mkdir(exist_ok=True)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        shutil.copyfile(source, tmp)
        tmp.replace(target)

    def get_bytes(self, sha: str) -> bytes:
        """The stored bytes.

        Raises:
            FileNotFoundError: no such blob.
        """
        return self.path(sha).read_bytes()

    def copy_to(self, sha: str, dest: Path) -> None:
        """Write a blob's content to ``dest`` (a fresh file, never a shared link)."""
        shutil.copyfile(self.path(sha), dest)
