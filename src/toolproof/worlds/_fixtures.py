"""Copying a task's ``world.fixtures`` into a fresh workspace, from inside the suite only.

A task file is data: ``fixtures: /etc`` or ``fixtures: ../../..`` (or a link inside
the suite that leads out of it) must not copy host files into a workspace and the
run's blobs. The ``validate`` command reports it with the file and line; this is the
runtime guard. FIFOs, sockets and devices in a fixture tree are skipped, never opened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from . import _safefs
from ._safefs import WalkBudget

_MODE_BITS = 0o7777 & ~(stat.S_ISUID | stat.S_ISGID)
"""A fixture's setuid/setgid bits are never copied: the copy belongs to the sandbox's user."""


def copy_fixtures(base: Path, fixtures: str, root: Path, owner: tuple[int, int] | None) -> None:
    """Copy ``base/fixtures`` (a directory inside ``base``) into ``root``.

    Links are copied as links; regular files with their modes; everything is given
    to ``owner`` when it is set.

    Raises:
        ValueError: The fixture path leaves ``base`` (directly or through a link), is
            missing or is not a directory; or the tree is too large to copy.
    """
    suite = _suite_dir(base.resolve())
    source = (base / fixtures).resolve()
    if source != suite and suite not in source.parents:
        raise ValueError(
            f"world.fixtures: {fixtures!r} resolves to {str(source)!r}, outside the suite "
            f"directory {str(suite)!r}; fixtures must be a directory inside the suite"
        )
    try:
        src = os.open(source, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ValueError(
            f"world.fixtures: {fixtures!r} ({str(source)!r}) is not a directory the harness "
            f"can read: {exc.strerror}"
        ) from None
    dst_root = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    budget = WalkBudget(max_seconds=120.0)
    made: set[tuple[bytes, ...]] = {()}
    try:
        for parts, src_dir, info in _safefs.walk(src, budget):
            if parts[:-1] not in made:  # below a directory that was not copied
                continue
            parent = _safefs.open_dir(dst_root, list(parts[:-1]))
            try:
                _copy_entry(src_dir, parent, parts[-1], info.st_mode, owner)
            finally:
                os.close(parent)
            if stat.S_ISDIR(info.st_mode):
                made.add(parts)
    finally:
        os.close(dst_root)
        os.close(src)
    if budget.stopped is not None:
        raise ValueError(f"world.fixtures: {fixtures!r} has {budget.stopped}; keep fixtures small")


def _suite_dir(base: Path) -> Path:
    """The suite directory around ``base`` (a task file's directory): the nearest one up
    that holds ``suite.yaml``; ``base`` itself when none does (a task run on its own)."""
    for candidate in (base, *base.parents):
        if (candidate / "suite.yaml").is_file():
            return candidate
    return base


def _copy_entry(
    src_dir: int, parent: int, name: bytes, mode: int, owner: tuple[int, int] | None
) -> None:
    """Copy one directory (empty), link or regular file; skip anything else."""
    if stat.S_ISDIR(mode):
        os.mkdir(name, 0o700, dir_fd=parent)
        made = _safefs.open_dir(parent, [name])
        try:
            os.fchmod(made, stat.S_IMODE(mode) & _MODE_BITS | (0 if os.geteuid() == 0 else 0o700))
            if owner is not None:
                os.fchown(made, *owner)
        finally:
            os.close(made)
    elif stat.S_ISLNK(mode):
        os.symlink(os.readlink(name, dir_fd=src_dir), name, dir_fd=parent)
        if owner is not None:
            os.chown(name, *owner, dir_fd=parent, follow_symlinks=False)
    elif stat.S_ISREG(mode):
        _copy_file(src_dir, parent, name, mode, owner)


def _copy_file(
    src_dir: int, dst_dir: int, name: bytes, mode: int, owner: tuple[int, int] | None
) -> None:
    try:
        src, _ = _safefs.open_file(src_dir, [name])
    except OSError:  # swapped for a link or a special file since it was listed
        return
    try:
        dst, _ = _safefs.open_file(dst_dir, [name], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            while chunk := os.read(src, 1 << 20):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(dst, view) :]
            if owner is not None:
                os.fchown(dst, *owner)
            os.fchmod(dst, stat.S_IMODE(mode) & _MODE_BITS)
        finally:
            os.close(dst)
    finally:
        os.close(src)
