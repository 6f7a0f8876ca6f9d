"""The owner walk before each command, skipping directories that have not changed.

Before each command of a root harness, what the harness wrote into the workspace
since the last one is given to the sandbox user (``Sandbox._hand_over``). Files are
only ever *created* as root (the harness rewriting an existing file keeps its
owner), and creating, removing or renaming an entry changes its directory's ctime,
which no user can set. So ``OwnerWalk`` remembers each directory's ctime from its
last scan and scans again only the directories whose ctime moved; the rest it only
passes through to reach their subdirectories. A ctime within ``SETTLE_S`` of the
scan that read it is never trusted (timestamps come from a coarse clock: a change
in the same tick would look the same), so such a directory is scanned again.

It walks with directory descriptors and ``O_NOFOLLOW`` at every component and
changes entries with ``AT_SYMLINK_NOFOLLOW``, so a command running at the same time
cannot redirect it to a host file; skipping a directory only ever gives the sandbox
user less.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

from toolproof.sandbox._wsfs import MAX_DEPTH

__all__ = ["SETTLE_S", "OwnerWalk"]

#: A directory's ctime must be this much older than the scan that read it to be trusted.
SETTLE_S = 0.25
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class _Seen:
    """One directory as its last scan found it: identity, ctime, subdirectory names."""

    key: tuple[int, int, int]
    settled: bool
    subdirs: tuple[str, ...]


class OwnerWalk:
    """Gives a workspace tree to one user, rescanning only what changed (one per sandbox).

    Attributes:
        scanned: Directories whose entries the last ``hand_over`` listed (tests read it).
    """

    def __init__(self) -> None:
        self._seen: dict[str, _Seen] = {}
        self.scanned = 0

    def hand_over(self, root: Path, uid: int, gid: int) -> int:
        """Give ``root`` and everything new below it to ``uid``/``gid``; how many changed.

        Entries that vanish meanwhile are skipped; directories below ``MAX_DEPTH`` are
        not entered.

        Raises:
            OSError: ``root`` itself cannot be opened or changed.
        """
        changed = 0
        self.scanned = 0
        now = time.time_ns()
        top = os.open(root, _DIR_FLAGS)
        info = os.fstat(top)
        if (info.st_uid, info.st_gid) != (uid, gid):
            os.fchown(top, uid, gid)
            changed += 1
        stack = [(top, "", 0)]
        seen: dict[str, _Seen] = {}
        try:
            while stack:
                dirfd, rel, depth = stack.pop()
                try:
                    changed += self._visit(dirfd, rel, depth, now, uid, gid, seen, stack)
                finally:
                    os.close(dirfd)
        finally:
            for dirfd, _, _ in stack:
                os.close(dirfd)
        self._seen = seen  # directories gone since are forgotten
        return changed

    def _visit(
        self,
        dirfd: int,
        rel: str,
        depth: int,
        now: int,
        uid: int,
        gid: int,
        seen: dict[str, _Seen],
        stack: list[tuple[int, str, int]],
    ) -> int:
        """Scan one directory (or pass through it when unchanged); push its subdirectories."""
        try:
            info = os.fstat(dirfd)
        except OSError:
            return 0
        key = (info.st_dev, info.st_ino, info.st_ctime_ns)
        known = self._seen.get(rel)
        changed = 0
        if known is not None and known.settled and known.key == key:
            names = known.subdirs
        else:
            self.scanned += 1
            found: list[str] = []
            with os.scandir(dirfd) as entries:
                for entry in entries:
                    try:
                        entry_info = entry.stat(follow_symlinks=False)
                        if (entry_info.st_uid, entry_info.st_gid) != (uid, gid):
                            os.chown(entry.name, uid, gid, dir_fd=dirfd, follow_symlinks=False)
                            changed += 1
                    except OSError:  # gone meanwhile
                        continue
                    if stat.S_ISDIR(entry_info.st_mode):
                        found.append(entry.name)
            names = tuple(found)
        # The ctime read before the listing: a change during it shows as a new ctime.
        seen[rel] = _Seen(key, info.st_ctime_ns < now - int(SETTLE_S * 1e9), names)
        if depth + 1 >= MAX_DEPTH:
            return changed
        for name in names:
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=dirfd)
            except OSError:  # gone, or replaced by a non-directory meanwhile
                continue
            stack.append((child, f"{rel}/{name}", depth + 1))
        return changed
