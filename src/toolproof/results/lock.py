"""One writer per run directory: an exclusive ``flock`` on ``run_dir/run.lock``."""

from __future__ import annotations

import fcntl
import os
import shlex
from pathlib import Path

from toolproof.spec.errors import ToolproofError

from ._format import unwritable

LOCK_NAME = "run.lock"
"""The lock file of a run directory: whoever holds its ``flock`` is the one writer."""


class RunLockedError(ToolproofError):
    """Another live process is writing to this run directory."""


_HELD: dict[Path, tuple[int, int]] = {}
"""Run directories this process holds the lock of: resolved path -> (fd, holders)."""


class RunLock:
    """One writer per run directory: an exclusive ``flock`` on ``run_dir/run.lock``.

    Two processes writing one run side by side would interleave episodes and race
    in :meth:`RunStore.finalize`, so the second is refused while the first lives.
    The kernel drops the lock when its process dies, however it dies, so a crashed
    run never leaves a stale lock behind. Within one process the lock is
    re-entrant (counted): the CLI holds it for the whole command while the
    :class:`RunStore` it opens takes it again.
    """

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._key: Path | None = None

    def acquire(self) -> RunLock:
        """Take the lock (creating the directory), or refuse at once.

        Raises:
            RunLockedError: Another process holds it; the message names its pid.
            RunDirError: the folder cannot be made or written (read-only, not a folder).
        """
        if self._key is not None:
            return self
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise unwritable(self.run_dir, exc) from None
        key = self.run_dir.resolve()
        held = _HELD.get(key)
        if held is not None:
            _HELD[key] = (held[0], held[1] + 1)
            self._key = key
            return self
        try:
            fd = os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise unwritable(self.run_dir, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            text = os.pread(fd, 32, 0).decode("ascii", "replace")
            first = text.split("\n", 1)[0].strip()
            owner = first if first.isdigit() else "unknown"  # only ever a pid is shown
            os.close(fd)
            raise RunLockedError(
                f"{self.run_dir} is in use by another toolproof process (pid {owner}): a run "
                "directory has one writer at a time. Wait for that run to end (or stop it "
                f"with Ctrl-C), then `toolproof run --resume {shlex.quote(str(self.run_dir))}`; "
                "or write to "
                "another folder with -o."
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _HELD[key] = (fd, 1)
        self._key = key
        return self

    def release(self) -> None:
        """Give the lock back (the last holder in this process unlocks); idempotent."""
        key, self._key = self._key, None
        if key is None or key not in _HELD:
            return
        fd, holders = _HELD[key]
        if holders > 1:
            _HELD[key] = (fd, holders - 1)
            return
        del _HELD[key]
        os.close(fd)  # closing the only descriptor drops the flock

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
