"""The state an episode acts on: records (JSON) and an optional workspace directory."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolproof.sandbox import sandbox_owner
from toolproof.spec import WorldSpec
from toolproof.trajectory import StateDiff

from . import records as rec
from ._fixtures import copy_fixtures
from .blobs import BlobStore
from .workspace import FileEntry, PathEscapeError, Workspace

BUILT_AT = 1767225600
"""The modification time every built workspace entry gets (2026-01-01 00:00 UTC): ``ls -l``
shows the agent the same bytes in every episode, not the moment the world was built."""


def _settle_times(root: Path) -> None:
    """Set the mtime of everything under ``root`` (and ``root``) to :data:`BUILT_AT`."""
    for folder, dirs, files in os.walk(root):
        for name in [*files, *dirs]:
            os.utime(os.path.join(folder, name), (BUILT_AT, BUILT_AT), follow_symlinks=False)
    os.utime(root, (BUILT_AT, BUILT_AT))


class WorldSnapshot(BaseModel):
    """A world's state at one moment: the records and a manifest of the files."""

    records: dict[str, Any] = Field(default_factory=dict)
    files: dict[str, list[Any]] = Field(
        default_factory=dict,
        description="Relative path to [sha256, mode] (files) or [null, 0, target] (links).",
    )
    dirs: dict[str, int] = Field(
        default_factory=dict,
        description="Every directory (empty ones too), relative path to its mode.",
    )
    has_workspace: bool = False
    incomplete: str | None = Field(
        None,
        description="Why the walk of the workspace stopped early (e.g. 'more than 200000 "
        "entries'), so the files are only part of it; null when they are all of it.",
    )

    def digest(self) -> str:
        """Digest of the whole state."""
        return _digest(self.records, self.files, self.dirs, self.incomplete)


def _digest(
    records: dict[str, Any],
    files: dict[str, list[Any]],
    dirs: dict[str, int],
    incomplete: str | None = None,
) -> str:
    sha = hashlib.sha256(rec.canonical_json(records).encode())
    if files:
        sha.update(b"\0files\0")
        sha.update(rec.canonical_json(files).encode())
    if dirs:
        sha.update(b"\0dirs\0")
        sha.update(rec.canonical_json(dirs).encode())
    if incomplete:
        sha.update(b"\0incomplete\0" + incomplete.encode())
    return sha.hexdigest()


def _entry_list(entry: FileEntry) -> list[Any]:
    return [entry.sha256, entry.mode] if entry.link is None else [None, 0, entry.link]


class World:
    """Records and files that tools act on, with digests, snapshots and diffs.

    Tools that change records must call :meth:`touch` so the cached digest
    is recomputed; the gateway does this after every WRITE tool.
    """

    def __init__(
        self,
        spec: WorldSpec,
        *,
        fixtures_base: Path | None = None,
        tmp_root: Path | None = None,
    ) -> None:
        self.records: dict[str, Any] = rec.copy_json(spec.records)
        self.workspace: Workspace | None = None
        self._tmpdir: str | None = None
        self._records_digest: str | None = None
        self.extras: dict[str, Any] = {}
        """Per-episode state of toolkits that is not part of the world (e.g. a sandbox)."""
        if spec.needs_workspace:
            self._tmpdir = tempfile.mkdtemp(prefix="toolproof-ws-", dir=tmp_root)
            root = Path(self._tmpdir) / "workspace"
            root.mkdir()
            owner = sandbox_owner()
            if owner is not None:
                os.chown(root, *owner)
            self.workspace = Workspace(root, owner=owner)
            if spec.fixtures:
                try:
                    copy_fixtures(fixtures_base or Path.cwd(), spec.fixtures, root, owner)
                except BaseException:
                    self.close()
                    raise
            for path, content in spec.files.items():
                try:
                    parts = self.workspace.parts(path)
                    self.workspace.write_bytes(parts, content.encode("utf-8"))
                except (PathEscapeError, ValueError, OSError) as exc:
                    self.close()
                    raise ValueError(
                        f"world.files: key {path!r} is not a file path inside the workspace "
                        f"({exc}); use a relative path such as 'data/notes.txt'"
                    ) from None
            _settle_times(root)

    def touch(self) -> None:
        """Mark the records as changed."""
        self._records_digest = None

    def records_digest(self) -> str:
        """Digest of the records (cached until :meth:`touch`)."""
        if self._records_digest is None:
            self._records_digest = rec.digest(self.records)
        return self._records_digest

    def digest(self) -> str:
        """Digest of the whole state, files and directories included."""
        if self.workspace is None:
            return self.records_digest()
        entries, dirs = self.workspace.scan()
        if not entries and not dirs and self.workspace.overflow is None:
            return self.records_digest()
        files = {k: _entry_list(v) for k, v in entries.items()}
        return _digest(self.records, files, dirs, self.workspace.overflow)

    def snapshot(self, blobs: BlobStore | None = None) -> WorldSnapshot:
        """Capture the state; with ``blobs``, file contents are stored for a later restore.

        Unchanged files are not hashed again (see :meth:`Workspace.scan`) and content
        the store holds already is not copied again, so a snapshot costs a walk of
        the tree plus the files that changed.
        """
        files: dict[str, list[Any]] = {}
        dirs: dict[str, int] = {}
        incomplete = None
        if self.workspace is not None:
            entries, dirs = self.workspace.scan(blobs)
            files = {rel: _entry_list(entry) for rel, entry in entries.items()}
            incomplete = self.workspace.overflow
        return WorldSnapshot(
            records=rec.copy_json(self.records),
            files=files,
            dirs=dirs,
            has_workspace=self.workspace is not None,
            incomplete=incomplete,
        )

    def save_snapshot(self, blobs: BlobStore) -> str:
        """Store a full snapshot in ``blobs``; return its reference (the manifest's sha256)."""
        snap = self.snapshot(blobs)
        return blobs.put_bytes(snap.model_dump_json().encode())

    def restore(self, snapshot: WorldSnapshot, blobs: BlobStore | None = None) -> None:
        """Put the world back into a snapshot's state, byte for byte.

        Only what differs is written: files whose content is already there stay.

        Raises:
            ValueError: the snapshot has files but no blob store was given.
        """
        self.records = rec.copy_json(snapshot.records)
        self.touch()
        if self.workspace is None:
            return
        if any(entry[0] is not None for entry in snapshot.files.values()) and blobs is None:
            raise ValueError("restoring files needs the blob store the snapshot was saved to")

        def fetch(sha: str, fd: int) -> None:
            assert blobs is not None
            blobs.copy_into(sha, fd)

        self.workspace.restore(snapshot.files, snapshot.dirs, fetch)

    @staticmethod
    def load_snapshot(blobs: BlobStore, ref: str) -> WorldSnapshot:
        """Read a snapshot saved by :meth:`save_snapshot`."""
        return WorldSnapshot.model_validate(json.loads(blobs.get_bytes(ref)))

    @staticmethod
    def diff(before: WorldSnapshot, after: WorldSnapshot) -> StateDiff:
        """What changed between two snapshots."""
        a, b = before.files, after.files
        return StateDiff(
            records=rec.diff(before.records, after.records),
            files_added=sorted(b.keys() - a.keys()),
            files_removed=sorted(a.keys() - b.keys()),
            files_modified=sorted(k for k in a.keys() & b.keys() if a[k] != b[k]),
        )

    def close(self) -> None:
        """Delete the workspace directory; idempotent."""
        for closer in self.extras.values():
            close = getattr(closer, "close", None)
            if callable(close):
                close()
        self.extras.clear()
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> World:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
