"""The workspace size check after each command, walked again only when something changed.

After every command the harness checks the workspace's apparent size (``_detect``'s
rule: regular files, hard links once, no link followed; a sparse file counts at its
full size). That walk is one ``fstatat`` per entry. ``SizeWatch`` keeps the last
total and an inotify watch on every directory it walked (added *before* the
directory is listed, so a change after the listing is never missed): while no
event arrived since, the total still holds. Every way to change a size (``write``,
``truncate``, ``fallocate``, ``copy_file_range``, a link or rename in or out, a new
or removed entry) raises ``IN_MODIFY`` or a directory event; a memory-mapped write
cannot grow a file. Anything else (a lost event queue, a watch refused, no inotify)
means walking every time, as before.

One inotify instance serves the whole process (the kernel allows a user only ~128),
shared by every sandbox's ``SizeWatch``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import threading
from pathlib import Path

from ._detect import workspace_bytes

__all__ = ["SizeWatch"]

_IN_MODIFY, _IN_CLOSE_WRITE = 0x2, 0x8
_IN_MOVED_FROM, _IN_MOVED_TO, _IN_CREATE, _IN_DELETE = 0x40, 0x80, 0x100, 0x200
_IN_DELETE_SELF, _IN_MOVE_SELF = 0x400, 0x800
_IN_Q_OVERFLOW, _IN_IGNORED = 0x4000, 0x8000
_IN_ONLYDIR, _IN_DONT_FOLLOW = 0x0100_0000, 0x0200_0000
_MASK = (
    _IN_MODIFY | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
    | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW
)  # fmt: skip
_EVENT = struct.Struct("iIII")  # struct inotify_event: wd, mask, cookie, len (then name)


class _Inotify:
    """The process's one inotify instance and which ``SizeWatch`` owns each watch."""

    def __init__(self) -> None:
        """Open the instance (non-blocking, close-on-exec).

        Raises:
            OSError: The kernel refused one.
        """
        self._libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        self.fd = self._libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code))
        self.lock = threading.Lock()
        self._owners: dict[int, set[SizeWatch]] = {}

    def add(self, directory: str, owner: SizeWatch) -> bool:
        """Watch ``directory`` (never through a link) for ``owner``; False if refused."""
        wd = self._libc.inotify_add_watch(self.fd, os.fsencode(directory), _MASK)
        if wd < 0:
            return False
        with self.lock:
            self._owners.setdefault(wd, set()).add(owner)
            owner.wds.add(wd)
        return True

    def drain(self) -> None:
        """Read every pending event and mark the watches' owners changed (hold ``lock``)."""
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            offset = 0
            while offset + _EVENT.size <= len(data):
                wd, mask, _, length = _EVENT.unpack_from(data, offset)
                offset += _EVENT.size + length
                if mask & _IN_Q_OVERFLOW:  # events were lost: nobody can trust a total
                    for owners in self._owners.values():
                        for owner in owners:
                            owner.changed = True
                    continue
                for owner in self._owners.get(wd, ()):
                    owner.changed = True
                if mask & _IN_IGNORED:  # the directory is gone (or the watch removed)
                    for owner in self._owners.pop(wd, ()):
                        owner.wds.discard(wd)

    def forget(self, owner: SizeWatch) -> None:
        """Remove ``owner``'s watches (those no other owner shares)."""
        with self.lock:
            for wd in owner.wds:
                owners = self._owners.get(wd)
                if owners is None:
                    continue
                owners.discard(owner)
                if not owners:
                    del self._owners[wd]
                    self._libc.inotify_rm_watch(self.fd, wd)
            owner.wds.clear()


_shared: dict[int, _Inotify | None] = {}  # process id -> its instance
_shared_lock = threading.Lock()


def _inotify() -> _Inotify | None:
    """This process's instance, or None where inotify cannot be used (every check walks).

    Keyed by process id: a forked child would otherwise read (and so take) events from
    its parent's queue; it gets its own instance, and its sizes are walked afresh.
    """
    pid = os.getpid()
    with _shared_lock:
        if pid not in _shared:
            try:
                _shared[pid] = _Inotify()
            except (OSError, AttributeError):
                _shared[pid] = None
        return _shared[pid]


class SizeWatch:
    """The apparent size of one workspace tree, walked only after a change.

    Attributes:
        root: The workspace directory.
        changed: Something may have changed since the last walk (set by events).
        walks: How many times ``bytes`` walked the tree (tests read it).
        wds: The inotify watches this tree holds.
    """

    def __init__(self, root: Path) -> None:
        """Watch ``root``; nothing is walked or watched until the first ``bytes``."""
        self.root = root
        self.changed = True
        self.walks = 0
        self.wds: set[int] = set()
        self._total = 0
        self._notify: _Inotify | None = None  # the instance its watches are on
        self._closed = False

    def bytes(self) -> int:
        """Apparent size of all regular files under the root, hard links counted once."""
        notify = None if self._closed else _inotify()
        if notify is not None and notify is not self._notify:  # first use, or a fork
            self._notify, self.changed = notify, True
            self.wds.clear()
        if notify is not None:
            with notify.lock:
                notify.drain()
                fresh, self.changed = self.changed, False
            if not fresh:
                return self._total
        self.walks += 1
        self._total = self._walk(notify)
        return self._total

    def _walk(self, notify: _Inotify | None) -> int:
        """The total, watching each directory before it is listed (see the module docstring)."""

        def watch(directory: str) -> None:
            if notify is not None and not notify.add(directory, self):
                self.changed = True  # unwatched: the next check walks again

        return workspace_bytes(self.root, watch)

    def close(self) -> None:
        """Drop the watches; safe to call twice."""
        notify = _inotify()
        if notify is not None and notify is self._notify:
            notify.forget(self)
        self._closed, self.changed = True, True
