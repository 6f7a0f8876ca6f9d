"""Opening files under a workspace root without trusting anything the agent put there.

Every path is a list of name components (bytes) below a directory file descriptor.
Opens never follow a symbolic link at any component: with ``openat2`` and
``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`` where the kernel has
it (Linux 5.6+), else one ``O_NOFOLLOW`` open per component, each relative to the
directory opened before it. Every open is ``O_NONBLOCK`` (a FIFO can never block the
harness) and is checked with ``fstat`` afterwards: only regular files and directories
are used, never FIFOs, sockets or devices. Walks are bounded in entries, depth and time.

Names stay bytes. They reach JSON (snapshots, tool results) in two forms:
:func:`key_of` is reversible (used as snapshot keys, so a restore recreates odd names
exactly) and :func:`shown` is for people (invalid UTF-8 as ``\\xNN``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import stat
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

__all__ = [
    "LinkError",
    "SpecialFileError",
    "WalkBudget",
    "chmod_nofollow",
    "key_of",
    "kind_of",
    "name_of_key",
    "open_dir",
    "open_file",
    "open_parent",
    "read_capped",
    "relock",
    "shown",
    "walk",
]

_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_NO_SYMLINKS = 0x04
_RESOLVE_BENEATH = 0x08
_SYS_OPENAT2 = 437
"""The same number on every Linux architecture (it came after the syscall tables merged)."""
_NOFOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_DIR = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW

_openat2_ok: bool | None = None
"""Whether openat2 works here (None: not tried yet). Tests set it False for the fallback."""


class LinkError(OSError):
    """A path goes through a symbolic link (never followed)."""

    def __init__(self, where: bytes, target: bytes) -> None:
        super().__init__(errno.ELOOP, "symbolic link")
        self.where = where
        """The components up to the link, joined with ``/``."""
        self.target = target
        """What the link points to."""


class SpecialFileError(OSError):
    """A path names something other than a regular file or directory."""

    def __init__(self, kind: str) -> None:
        super().__init__(errno.EPERM, kind)
        self.kind = kind


class _OpenHow(ctypes.Structure):
    _fields_ = (
        ("flags", ctypes.c_uint64),
        ("mode", ctypes.c_uint64),
        ("resolve", ctypes.c_uint64),
    )


_libc: ctypes.CDLL | None = None


def _openat2(dir_fd: int, path: bytes, flags: int, mode: int) -> int | None:
    """``openat2`` beneath ``dir_fd`` with no links; None where the kernel lacks it."""
    global _libc, _openat2_ok
    if _openat2_ok is False:
        return None
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    if flags & os.O_PATH:  # openat2 refuses any other flag beside O_PATH
        flags &= os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    mode = stat.S_IMODE(mode) if flags & os.O_CREAT else 0  # ... and a mode without O_CREAT
    how = _OpenHow(flags, mode, _RESOLVE_BENEATH | _RESOLVE_NO_SYMLINKS | _RESOLVE_NO_MAGICLINKS)
    fd = _libc.syscall(
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dir_fd),
        ctypes.c_char_p(path),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd >= 0:
        _openat2_ok = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and _openat2_ok is None:  # old kernel, seccomp
        _openat2_ok = False
        return None
    raise OSError(err, os.strerror(err), path)


def _find_link(dir_fd: int, parts: Sequence[bytes]) -> LinkError | None:
    """The first symbolic link on ``parts`` (for a clear refusal), if any."""
    current = os.dup(dir_fd)
    try:
        for n, part in enumerate(parts):
            try:
                info = os.stat(part, dir_fd=current, follow_symlinks=False)
            except OSError:
                return None
            if stat.S_ISLNK(info.st_mode):
                return LinkError(b"/".join(parts[: n + 1]), os.readlink(part, dir_fd=current))
            if not stat.S_ISDIR(info.st_mode) or n == len(parts) - 1:
                return None
            try:
                nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | _NOFOLLOW, dir_fd=current)
            except OSError:
                return None
            os.close(current)
            current = nxt
        return None
    finally:
        os.close(current)


def _open(dir_fd: int, parts: Sequence[bytes], flags: int, mode: int = 0o644) -> int:
    """Open ``parts`` below ``dir_fd`` without following links; ``flags`` plus no-follow.

    Raises:
        LinkError: A component is a symbolic link.
        OSError: Anything else the open reports (missing, not a directory, ...).
    """
    flags |= _NOFOLLOW
    if not parts:
        return os.open(".", flags & ~os.O_CREAT, dir_fd=dir_fd)
    try:
        fd = _openat2(dir_fd, b"/".join(parts), flags, mode)
        if fd is not None:
            return fd
        current = dir_fd
        try:
            for part in parts[:-1]:
                nxt = os.open(part, os.O_PATH | os.O_DIRECTORY | _NOFOLLOW, dir_fd=current)
                if current != dir_fd:
                    os.close(current)
                current = nxt
            return os.open(parts[-1], flags, mode, dir_fd=current)
        finally:
            if current != dir_fd:
                os.close(current)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
            link = _find_link(dir_fd, parts)
            if link is not None:
                raise link from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, or a socket, opened to write
            raise SpecialFileError(kind_of(_lstat(dir_fd, parts))) from None
        raise


def _lstat(dir_fd: int, parts: Sequence[bytes]) -> int:
    if not parts:
        return 0
    try:
        parent = _open(dir_fd, parts[:-1], os.O_PATH | os.O_DIRECTORY)
    except OSError:
        return 0
    try:
        return os.stat(parts[-1], dir_fd=parent, follow_symlinks=False).st_mode
    except OSError:
        return 0
    finally:
        os.close(parent)


def kind_of(mode: int) -> str:
    """What a file is, in words (for refusals)."""
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def open_file(
    dir_fd: int, parts: Sequence[bytes], flags: int = os.O_RDONLY, mode: int = 0o644
) -> tuple[int, os.stat_result]:
    """Open a regular file (or, with ``O_DIRECTORY`` in ``flags``, a directory).

    Returns:
        The descriptor and its ``fstat``.

    Raises:
        LinkError: A component is a symbolic link.
        SpecialFileError: It is a FIFO, socket or device (closed again, never read).
        IsADirectoryError: It is a directory and a file was asked for.
        OSError: Missing, not a directory on the way, and the like.
    """
    fd = _open(dir_fd, parts, flags & ~os.O_TRUNC, mode)
    try:
        info = os.fstat(fd)
        want_dir = bool(flags & os.O_DIRECTORY)
        if stat.S_ISDIR(info.st_mode) and not want_dir:
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
            raise SpecialFileError(kind_of(info.st_mode))
        if flags & os.O_TRUNC:
            os.ftruncate(fd, 0)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def open_dir(dir_fd: int, parts: Sequence[bytes]) -> int:
    """Open a directory for listing (never through a link)."""
    return open_file(dir_fd, parts, os.O_RDONLY | os.O_DIRECTORY)[0]


def open_parent(
    dir_fd: int,
    parts: Sequence[bytes],
    *,
    create: bool = False,
    owner: tuple[int, int] | None = None,
) -> int:
    """The directory holding ``parts[-1]``, made (and given to ``owner``) with ``create``."""
    if not create:
        return open_dir(dir_fd, parts[:-1])
    current = os.dup(dir_fd)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=current)
                if owner is not None:
                    os.chown(part, *owner, dir_fd=current, follow_symlinks=False)
            except FileExistsError:
                pass
            nxt = open_dir(current, [part])
            os.close(current)
            current = nxt
    except BaseException:
        os.close(current)
        raise
    return current


def read_capped(fd: int, limit: int) -> bytes:
    """At most ``limit`` bytes from ``fd`` (one more if there is more, to tell)."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


@dataclass
class WalkBudget:
    """Bounds of one walk; ``stopped`` says why it ended early (None: it saw everything)."""

    max_entries: int = 200_000
    max_depth: int = 128
    max_seconds: float = 30.0
    shallow: bool = False
    """Reaching ``max_depth`` is expected (a listing of one level), not a reason to stop."""
    entries: int = 0
    stopped: str | None = None
    _deadline: float = field(default=0.0, repr=False)

    def start(self) -> None:
        """Start the clock."""
        self._deadline = time.monotonic() + self.max_seconds

    def take(self) -> bool:
        """Count one entry; False (and ``stopped`` set) once a bound is passed."""
        self.entries += 1
        if self.entries > self.max_entries:
            self.stopped = f"more than {self.max_entries} entries"
        elif self.entries % 256 == 0 and time.monotonic() > self._deadline:
            self.stopped = f"longer than {self.max_seconds:g} s"
        return self.stopped is None


def chmod_nofollow(dir_fd: int, name: bytes, mode: int) -> bool:
    """Change the mode of ``name`` unless it is a link (never its target); whether it did."""
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        if stat.S_ISLNK(os.fstat(fd).st_mode):
            return False
        os.chmod(f"/proc/self/fd/{fd}", mode)  # an O_PATH fd cannot fchmod; its proc link can
        return True
    finally:
        os.close(fd)


def walk(
    dir_fd: int,
    budget: WalkBudget,
    prefix: tuple[bytes, ...] = (),
    unlocked: list[tuple[int, int]] | None = None,
) -> Iterator[tuple[tuple[bytes, ...], int, os.stat_result]]:
    """Every entry below ``dir_fd``: (components, the directory's fd, ``lstat``), parents first.

    Directories are entered through an ``O_NOFOLLOW | O_DIRECTORY`` open relative to
    their parent, so a link swapped in for a directory is never followed. The fd is
    valid only until the next item. Unreadable or vanished entries are skipped.

    Args:
        dir_fd: Where to start.
        budget: Bounds (entries, depth, time); says afterwards whether one stopped the walk.
        prefix: Components of ``dir_fd`` itself, put before every yielded path.
        unlocked: A harness that is not root passes a list: directories of its own that
            an agent made unreadable are then opened up (``u+rx``) and noted here as
            ``(O_PATH fd, old mode)``, for :func:`relock` once the caller is done.
    """
    budget.start()
    todo: list[tuple[tuple[bytes, ...], int]] = [(prefix, os.dup(dir_fd))]
    try:
        while todo and budget.stopped is None:
            where, fd = todo.pop()
            try:
                with os.scandir(fd) as it:
                    names = sorted(os.fsencode(e.name) for e in it)
                below: list[tuple[tuple[bytes, ...], int]] = []
                for name in names:
                    if not budget.take():
                        return
                    try:
                        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except OSError:
                        continue
                    path = (*where, name)
                    yield path, fd, info
                    if stat.S_ISDIR(info.st_mode):
                        if unlocked is not None and info.st_mode & 0o500 != 0o500:
                            _unlock(fd, name, info.st_mode, unlocked)
                        if len(path) - len(prefix) >= budget.max_depth:
                            if not budget.shallow:
                                budget.stopped = f"deeper than {budget.max_depth} directories"
                                return
                            continue
                        try:
                            below.append((path, os.open(name, _DIR, dir_fd=fd)))
                        except OSError:  # replaced meanwhile, or not readable
                            continue
                todo.extend(reversed(below))  # so the first name is walked next
                below = []
            finally:
                os.close(fd)
                for _, opened in below:  # stopped early: not handed to todo
                    os.close(opened)
    finally:
        for _, fd in todo:
            os.close(fd)


def _unlock(dir_fd: int, name: bytes, mode: int, unlocked: list[tuple[int, int]]) -> None:
    if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_uid != os.geteuid():
        return
    fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=dir_fd)
    os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(mode) | 0o700)
    unlocked.append((fd, stat.S_IMODE(mode)))


def relock(unlocked: list[tuple[int, int]]) -> None:
    """Put back the modes :func:`walk` opened up (last first) and close their fds."""
    while unlocked:
        fd, mode = unlocked.pop()
        try:
            os.chmod(f"/proc/self/fd/{fd}", mode)
        finally:
            os.close(fd)


_ESCAPE = re.compile(rb"\\(\\|x([0-9a-f]{2}))")


def key_of(name: bytes) -> str:
    """A JSON-safe, reversible text form of a name (or ``/``-joined path) of bytes.

    Valid UTF-8 stays as it is. Anything else gets a leading NUL (never part of a real
    name) and its undecodable bytes as ``\\xNN`` (backslashes doubled).
    """
    try:
        return name.decode("utf-8")
    except UnicodeDecodeError:
        return "\0" + name.replace(b"\\", b"\\\\").decode("utf-8", "backslashreplace")


def name_of_key(key: str) -> bytes:
    """The bytes :func:`key_of` made ``key`` from."""
    if not key.startswith("\0"):
        return key.encode("utf-8")

    def unescape(match: re.Match[bytes]) -> bytes:
        hex_ = match.group(2)
        return bytes([int(hex_, 16)]) if hex_ else b"\\"

    return _ESCAPE.sub(unescape, key[1:].encode("utf-8"))


def shown(name: bytes | str) -> str:
    """A name as people (and agents) see it: invalid UTF-8 as ``\\xNN``, never a crash."""
    if isinstance(name, bytes):
        return name.decode("utf-8", "backslashreplace")
    try:
        raw = name_of_key(name) if name.startswith("\0") else os.fsencode(name)
    except UnicodeEncodeError:  # a lone surrogate from JSON that is no escaped byte
        return name.encode("utf-8", "backslashreplace").decode("ascii")
    return raw.decode("utf-8", "backslashreplace")
