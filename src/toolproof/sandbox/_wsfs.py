"""The workspace as the sandbox user sees it: ownership and a size-limited filesystem.

When the harness is root, sandboxed commands run as the unprivileged host user of
``_identity``; this module makes the workspace theirs and bounds it:

* ``_handover.OwnerWalk`` gives every entry of the workspace to that user, walking
  with directory file descriptors and never following a symbolic link, so a
  command running at the same time cannot redirect it to a host file.
* ``WorkspaceFs`` (root with ``CAP_SYS_ADMIN`` only) puts the workspace on its own
  tmpfs with ``size=`` and ``nr_inodes=``: a command that writes past the budget
  gets ``ENOSPC`` *while it runs*, and an inode bomb runs out of inodes. The tmpfs
  is mounted in a private scratch directory that the sandbox user can reach (the
  workspace's own parents are often ``0700``), the workspace is copied in once, and
  the tmpfs is bind-mounted over the workspace path, so harness code keeps using
  the same path. ``close`` copies the tree back into the real directory (the
  caller's files stay the caller's) and unmounts both; a finalizer does it if
  ``close`` is never called.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import functools
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from toolproof.sandbox._errors import SandboxError

__all__ = [
    "ReachableBinds",
    "WorkspaceFs",
    "can_mount",
    "check_reachable",
    "is_full",
    "on_workspace_tmpfs",
    "reachable_tmp",
    "unreachable_parent",
]

_log = logging.getLogger(__name__)
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND = 0x1, 0x2, 0x4, 0x20, 0x1000
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
_CAP_SYS_ADMIN = 21
#: Extra room above ``workspace_mb``, so a write that stops at the budget is seen as over it.
SLACK_BYTES = 1024 * 1024
#: One inode per this many bytes of budget (at least ``_MIN_INODES``).
BYTES_PER_INODE = 8192
_MIN_INODES = 4096
#: Directories deeper than this are not walked (nothing of the harness writes so deep).
MAX_DEPTH = 256
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str) -> None:
    result = _libc().mount(
        source.encode() if source else None,
        target.encode(),
        fstype.encode() if fstype else None,
        ctypes.c_ulong(flags),
        data.encode() if data else None,
    )
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {target}: {os.strerror(code)}")


def _umount(target: str) -> None:
    if _libc().umount2(target.encode(), _MNT_DETACH) != 0:
        code = ctypes.get_errno()
        if code not in (errno.EINVAL, errno.ENOENT):  # not mounted (any more)
            _log.warning(
                "could not unmount %s: %s; run umount -l %s", target, os.strerror(code), target
            )


@functools.cache
def can_mount() -> bool:
    """True when this process is root with ``CAP_SYS_ADMIN`` (it may mount a tmpfs)."""
    if os.geteuid() != 0:
        return False
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> _CAP_SYS_ADMIN & 1)
    except (OSError, ValueError):
        return False
    return False


def on_workspace_tmpfs(path: Path) -> bool:
    """True when ``path`` is already the root of a toolproof workspace tmpfs.

    A second sandbox on the same workspace (a checker's, while the episode's is
    open) then needs no tmpfs of its own: the first one's size limit holds.
    """
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return False
    for line in mountinfo.splitlines():
        head, _, tail = line.partition(" - ")
        fields = head.split()
        if (
            len(fields) > 4
            and fields[4] == str(path)
            and tail.startswith("tmpfs toolproof-workspace ")
        ):
            return True
    return False


def unreachable_parent(path: Path, uid: int, gid: int) -> Path | None:
    """The first directory on the way to ``path`` that ``uid``/``gid`` cannot search, or None.

    ``path`` itself counts when it is a directory (bwrap must enter it).
    """
    for parent in [*reversed(path.parents), *([path] if path.is_dir() else [])]:
        try:
            info = parent.stat()
        except OSError:
            return parent
        if info.st_uid == uid:
            bit = stat.S_IXUSR
        elif info.st_gid == gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return parent
    return None


def check_reachable(path: Path, what: str, owner: tuple[int, int]) -> None:
    """Raise a SandboxError with the fix when ``owner`` cannot reach ``path``."""
    blocked = unreachable_parent(path, *owner)
    if blocked is not None:
        raise SandboxError(
            f"the sandbox user (uid {owner[0]}) cannot reach the {what} {str(path)!r}: "
            f"{str(blocked)!r} is not searchable by it; chmod o+x {str(blocked)!r}, "
            "or run the harness with CAP_SYS_ADMIN (then it is bound where it can)"
        )


#: Where scratch directories go when ``TMPDIR`` is out of the sandbox user's reach.
SHARED_TMP = ("/tmp", "/var/tmp", "/dev/shm")


def reachable_tmp(owner: tuple[int, int] | None) -> str | None:
    """A directory for the sandbox's scratch files that ``owner`` can search, or None.

    None (``tempfile``'s own choice) when the harness is not root: commands then run
    as the harness's user, who reaches its own ``TMPDIR``. For a root harness,
    ``TMPDIR`` when the sandbox user can reach it, else the first of
    :data:`SHARED_TMP` it can: a private ``TMPDIR`` (``mktemp -d``, mode ``0700``) must
    not stop the sandbox. Scratch directories made there are the harness's (mode
    ``0711``), so sharing ``/tmp`` shows nothing to anyone.

    Raises:
        SandboxError: No such directory exists; the message names TMPDIR and the fix.
    """
    if owner is None:
        return None
    default = Path(tempfile.gettempdir())
    for candidate in (default, *map(Path, SHARED_TMP)):
        if candidate.is_dir() and unreachable_parent(candidate, *owner) is None:
            return str(candidate)
    blocked = unreachable_parent(default, *owner)
    raise SandboxError(
        f"the sandbox user (uid {owner[0]}) can reach no directory for scratch files: "
        f"TMPDIR {str(default)!r} is behind {str(blocked)!r}, which it cannot search, and "
        f"none of {', '.join(SHARED_TMP)} is usable; set TMPDIR to a directory it can "
        "search (e.g. TMPDIR=/tmp, mode 1777)"
    )


def is_full(path: Path) -> bool:
    """True when the filesystem at ``path`` has (almost) no free bytes or no free inodes."""
    try:
        info = os.statvfs(path)
    except OSError:
        return False
    return info.f_ffree == 0 or info.f_bfree * info.f_frsize < 64 * 1024


def _options(budget_mb: int, files: int, held: int, owner: tuple[int, int]) -> str:
    """tmpfs options for a budget, ``files`` entries and ``held`` bytes already there.

    A workspace already over its budget (the agent's file tools wrote it before the
    first command) still fits: the command after it then reports ``workspace_size``,
    the agent's limit, instead of the sandbox failing to start (an infra error).
    """
    inodes = max(_MIN_INODES, budget_mb * 1024 * 1024 // BYTES_PER_INODE, files + 1024)
    size = max(budget_mb * 1024 * 1024, held) + SLACK_BYTES
    return f"size={size},nr_inodes={inodes},mode=0755,uid={owner[0]},gid={owner[1]}"


def _copy_file(name: str, dirfd: int, out: str) -> None:
    """Copy regular file ``name`` (relative to ``dirfd``, never through a link) to ``out``."""
    src = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dirfd)
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):  # swapped meanwhile: skip it
            return
        dst = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            while os.sendfile(dst, src, None, 1 << 30):
                pass
            os.fchmod(dst, stat.S_IMODE(info.st_mode))
            os.utime(dst, ns=(info.st_atime_ns, info.st_mtime_ns))
        finally:
            os.close(dst)
    finally:
        os.close(src)


def _copy_into(source: str, target: str) -> int:
    """Copy the tree ``source`` into the existing directory ``target``; return entries.

    Regular files, directories and symbolic links only (fifos, sockets and devices
    are skipped: opening a fifo would block); links are copied as links. The source
    is walked with directory descriptors and ``O_NOFOLLOW`` at every component, so
    a link swapped in meanwhile is never followed; below ``MAX_DEPTH`` levels
    nothing is copied. Modes and times are kept (of files, links and directories: a
    listing inside shows the source's), owners are not.
    """
    count = 0
    top = os.open(source, _DIR_FLAGS)
    # (descriptor, entries, target, the source's times: set once its contents are in)
    stack = [(top, os.scandir(top), target, _times(os.fstat(top)))]
    try:
        while stack:
            dirfd, entries, dst, times = stack[-1]
            entry = next(entries, None)
            if entry is None:
                entries.close()
                os.close(dirfd)
                stack.pop()
                os.utime(dst, ns=times, follow_symlinks=False)  # after its entries were made
                continue
            out = os.path.join(dst, entry.name)
            info = entry.stat(follow_symlinks=False)
            count += 1
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(entry.name, dir_fd=dirfd), out)
                os.utime(out, ns=_times(info), follow_symlinks=False)
            elif stat.S_ISREG(info.st_mode):
                _copy_file(entry.name, dirfd, out)
            elif stat.S_ISDIR(info.st_mode) and len(stack) < MAX_DEPTH:
                os.mkdir(out, stat.S_IMODE(info.st_mode) | 0o700)
                os.chmod(out, stat.S_IMODE(info.st_mode))
                child = os.open(entry.name, _DIR_FLAGS, dir_fd=dirfd)
                stack.append((child, os.scandir(child), out, _times(info)))
    finally:
        for dirfd, entries, _, _ in stack:
            entries.close()
            os.close(dirfd)
    return count


def _times(info: os.stat_result) -> tuple[int, int]:
    """The (access, modification) times of ``info`` in nanoseconds, for ``os.utime``."""
    return info.st_atime_ns, info.st_mtime_ns


def _count(root: str) -> tuple[int, int]:
    """(entries, bytes a tmpfs copy needs: regular files and links, rounded to pages)."""
    count, held, todo = 0, 0, [root]
    while todo:
        with contextlib.suppress(OSError), os.scandir(todo.pop()) as it:
            for entry in it:
                count += 1
                with contextlib.suppress(OSError):
                    info = entry.stat(follow_symlinks=False)
                    if stat.S_ISDIR(info.st_mode):
                        todo.append(entry.path)
                    elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                        held += -(-info.st_size // 4096) * 4096
    return count, held


class WorkspaceFs:
    """The workspace on a size-limited tmpfs, reachable by the sandbox user (root only).

    Attributes:
        workspace: The workspace path harness code uses (the tmpfs is bound over it).
        mountpoint: Where the tmpfs itself is mounted; bwrap binds this path.
        budget_mb: The ``workspace_mb`` the tmpfs size is set from now; None when the
            workspace has no limit: then the workspace itself is only bound at
            ``mountpoint`` (for the sandbox user to reach it), without a tmpfs.
    """

    def __init__(
        self, workspace: Path, scratch: Path, budget_mb: int | None, owner: tuple[int, int]
    ) -> None:
        """Mount the tmpfs, copy the workspace in and bind it over the workspace path.

        Args:
            workspace: The workspace directory.
            scratch: A private directory the sandbox user can search (mode 0711).
            budget_mb: The workspace limit in MiB, or None for none (bind only).
            owner: The sandbox user's (uid, gid), owner of the tmpfs root.

        Raises:
            SandboxError: A mount failed, or the workspace grew while it was copied.
        """
        self.workspace, self.budget_mb, self._owner = workspace, budget_mb, owner
        self.mountpoint = scratch / "workspace"
        self.mountpoint.mkdir(mode=0o755)
        self._mounted: list[str] = []
        self._original: int | None = None  # the real directory, under the bind
        try:
            if budget_mb is None:
                _mount(str(workspace), str(self.mountpoint), None, _MS_BIND, "")
                self._mounted.append(str(self.mountpoint))
                _mount(None, str(self.mountpoint), None, _MS_PRIVATE, "")
                return
            options = _options(budget_mb, *_count(str(workspace)), owner)
            _mount("toolproof-workspace", str(self.mountpoint), "tmpfs",
                   _MS_NOSUID | _MS_NODEV, options)  # fmt: skip
            self._mounted.append(str(self.mountpoint))
            _mount(None, str(self.mountpoint), None, _MS_PRIVATE, "")
            shutil.copystat(workspace, self.mountpoint)
            try:
                _copy_into(str(workspace), str(self.mountpoint))
            except OSError as exc:
                if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
                    raise
                raise SandboxError(  # it grew while being copied: nothing writes it now
                    f"the workspace {str(workspace)!r} changed while it was copied onto its "
                    "tmpfs; nothing may write it while a sandbox is created"
                ) from None
            self._original = os.open(workspace, _DIR_FLAGS)
            _mount(str(self.mountpoint), str(workspace), None, _MS_BIND, "")
            self._mounted.append(str(workspace))
            _mount(None, str(workspace), None, _MS_PRIVATE, "")
        except OSError as exc:
            self.close()
            raise SandboxError(f"could not put the workspace on its own tmpfs: {exc}") from exc
        except BaseException:
            self.close()
            raise

    @property
    def limited(self) -> bool:
        """True when the workspace is on a size-limited tmpfs (not just bound)."""
        return self.budget_mb is not None

    def resize(self, budget_mb: int) -> None:
        """Set the tmpfs size for a new ``workspace_mb`` (kept as is if it holds more)."""
        if self.budget_mb is None or budget_mb == self.budget_mb or not self._mounted:
            return
        options = _options(budget_mb, 0, 0, self._owner).split(",mode=")[0]
        try:
            _mount(None, str(self.mountpoint), None, _MS_REMOUNT | _MS_NOSUID | _MS_NODEV, options)
        except OSError as exc:  # e.g. more is stored than the new size; the check after holds
            _log.debug("tmpfs resize to %s MiB refused: %s", budget_mb, exc)
            return
        self.budget_mb = budget_mb

    def close(self) -> None:
        """Copy the tree back to the real directory and unmount; safe to call twice.

        Call it only when no command runs any more (``Sandbox.close`` kills them first).
        """
        if self._original is not None:
            if len(self._mounted) == 2:
                try:
                    self._copy_back(self._original)
                except Exception as exc:  # close() must not fail; the tmpfs still goes
                    _log.warning("could not copy the workspace %s back: %s", self.workspace, exc)
            os.close(self._original)
            self._original = None
        while self._mounted:
            _umount(self._mounted.pop())

    def _copy_back(self, original: int) -> None:
        """Replace the real directory's contents by the tmpfs's (no link is followed)."""
        base = f"/proc/self/fd/{original}"
        for name in os.listdir(original):
            info = os.stat(name, dir_fd=original, follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(f"{base}/{name}")
            else:
                os.unlink(name, dir_fd=original)
        _copy_into(str(self.mountpoint), base)
        shutil.copystat(self.mountpoint, base)


class ReachableBinds:
    """Read-only bind mounts of host paths into a scratch directory (root only).

    bwrap runs as the sandbox user, so it can only bind what that user can reach;
    a tool cache under ``/root`` or a ``0700`` temporary directory is first bound
    here (read-only, private) by the harness. Permissions inside still apply.
    """

    def __init__(self, scratch: Path) -> None:
        """Bind into ``scratch/binds`` (created on first use)."""
        self._dir = scratch / "binds"
        self._mounted: list[str] = []

    def add(self, source: Path) -> Path:
        """Bind ``source`` (a directory or a file) and return the reachable path.

        Raises:
            SandboxError: The bind mount failed.
        """
        self._dir.mkdir(mode=0o711, exist_ok=True)
        target = self._dir / str(len(self._mounted))
        if source.is_dir():
            target.mkdir(mode=0o755)
        else:
            target.touch(mode=0o644)
        try:
            _mount(str(source), str(target), None, _MS_BIND, "")
            self._mounted.append(str(target))
            _mount(None, str(target), None, _MS_PRIVATE, "")
            _mount(None, str(target), None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY, "")
        except OSError as exc:
            raise SandboxError(
                f"could not bind {str(source)!r} for the sandbox user: {exc}"
            ) from exc
        return target

    def close(self) -> None:
        """Unmount every bind; safe to call twice."""
        while self._mounted:
            _umount(self._mounted.pop())
