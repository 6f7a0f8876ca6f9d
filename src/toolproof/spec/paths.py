"""Paths a task file names, checked as data before anything is built from them.

Two kinds of path appear in task files:

* **workspace paths** (``world.files`` keys, ``state`` check ``files`` keys, the
  ``lint`` check's ``config`` and ``paths``): relative POSIX paths inside
  ``/workspace``. No absolute path, no ``..``, ``.`` or empty component, no NUL,
  at most :data:`MAX_PATH_BYTES` bytes and :data:`MAX_NAME_BYTES` per component.
* **suite paths** (``world.fixtures``, ``sandbox.toolenv``): relative to the task
  file and resolving, symlinks followed, inside the suite directory. A fixtures
  directory holds only directories, regular files and relative symlinks that stay
  inside it (the copy in the workspace keeps the links, so a link that leads out of
  the fixtures would lead out of the workspace).

``sandbox.ro_binds`` names host paths by design; they must be absolute and
normalised, and may not expose the host's kernel interfaces, devices, secrets, home
directories, shared scratch space or other services' data (:data:`FORBIDDEN_HOST_PATHS`
and the harness's ``$HOME`` wherever it is), nor answer keys (a suite, a copy of
toolproof, a run folder: ``_answer_keys``), nor hide the workspace.
:func:`host_bind_problem` is the one judge of a bind's host path: it judges the path as
written and the path it resolves to (every symlink followed), since that is what gets
mounted. Validation calls it when a file loads, :func:`~toolproof.spec.effective_sandbox`
again before each episode (a link changed since load is caught there), and every sandbox
(``sandbox._args.check_binds``) once more when it mounts, for the system paths
(:data:`SYSTEM_HOST_PATHS`) that no bind, the harness's own included, may ever show.

A denylist, not an allowlist: tasks bind tool installations and data folders wherever
a host keeps them (``/usr/local/...``, ``/data/...``, a cluster's shared file system),
which no fixed allowlist can name; what a bind must never show (secrets, other users' and
other runs' files, answer keys) can be named, and is judged after every symlink.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from ._answer_keys import answer_key_problem

MAX_PATH_BYTES = 1024
"""Longest workspace path, in UTF-8 bytes."""
MAX_NAME_BYTES = 255
"""Longest component of a path (the limit of Linux file systems)."""
MAX_FIXTURE_ENTRIES = 100_000
"""Most entries a fixtures directory may hold (a bound on the walk that checks it)."""
VIRTUAL_ROOT = "/workspace"
SYSTEM_HOST_PATHS = ("/proc", "/sys", "/dev", "/etc", "/run", "/var/run", "/boot")
"""Host paths no bind ever shows, the harness's own binds included: the kernel's
interfaces, devices, system configuration and secrets (``/etc/ssl/private``), live sockets
and locks. Re-checked on the resolved path when a sandbox mounts its binds."""
FORBIDDEN_HOST_PATHS = (
    *SYSTEM_HOST_PATHS,
    "/root",
    "/home",
    "/tmp",
    "/var/tmp",
    "/var/lib",
    "/var/log",
    "/var/spool",
    "/var/mail",
    "/var/cache",
    "/var/backups",
    "/srv",
    "/mnt",
    "/media",
    "/opt",
    "/lost+found",
)
"""Host paths a task's or suite's ``ro_binds`` may not show (nor ``/`` itself, nor the
harness's ``$HOME`` wherever it is): besides :data:`SYSTEM_HOST_PATHS`, home directories,
shared scratch space (other runs' workspaces, other users' files: ``/tmp``, ``/var/tmp``),
other services' data (``/var/lib``: container storage, CI agents' homes), logs, and the
mount points of other disks and add-on software (``/srv``, ``/mnt``, ``/media``, ``/opt``)."""
FORBIDDEN_INSIDE_PATHS = ("/proc", "/dev", VIRTUAL_ROOT)
"""Sandbox paths a ``ro_binds`` target may not cover (nor ``/`` itself)."""


def _text_problem(path: str) -> str | None:
    if not path:
        return "is empty; give a path"
    if "\0" in path:
        return f"{path!r} contains a NUL byte"
    if len(path.encode("utf-8", "surrogatepass")) > MAX_PATH_BYTES:
        return f"{path[:40]!r}... is longer than {MAX_PATH_BYTES} bytes"
    return None


def workspace_path_problem(
    path: str, *, virtual_root: bool = False, dot: bool = False
) -> str | None:
    """Why ``path`` is not a relative path inside the workspace, or None when it is one.

    Args:
        path: The path as written in the task file.
        virtual_root: Also accept the absolute form ``/workspace/...`` (check fields,
            which read the final state through the same normalisation as the tools).
        dot: Also accept ``.``, the workspace itself (the ``lint`` check's paths).
    """
    problem = _text_problem(path)
    if problem is not None:
        return problem
    if dot and path == ".":
        return None
    relative = path
    if virtual_root and path.startswith(VIRTUAL_ROOT + "/"):
        relative = path[len(VIRTUAL_ROOT) + 1 :]
    if relative.startswith("/"):
        return f"{path!r} is absolute; write it relative to {VIRTUAL_ROOT}, e.g. 'notes/todo.txt'"
    for part in relative.split("/"):
        if part in ("", "."):
            return f"{path!r} has an empty or '.' component; write it as 'dir/name'"
        if part == "..":
            return f"{path!r} has a '..' component, which leads out of the workspace; remove it"
        if len(part.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
            return f"{path!r} has a component longer than {MAX_NAME_BYTES} bytes"
    return None


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def suite_path_problem(
    value: str, base: Path, root: Path, *, directory: bool, tree: bool = True
) -> str | None:
    """Why ``value`` (relative to ``base``) is not a file or directory inside ``root``.

    Args:
        value: The path as written, relative to the task file's directory ``base``.
        base: The task file's directory.
        root: The suite directory; the path must resolve (symlinks followed) inside it.
        directory: Whether a directory (else a regular file) is expected.
        tree: For a directory, also check what it holds (fixtures copied into a workspace).
    """
    problem = _text_problem(value)
    if problem is not None:
        return problem
    if value.startswith("/") or PurePosixPath(value).is_absolute():
        return f"{value!r} is absolute; give a path relative to the task file, inside the suite"
    suite = root.resolve()
    try:
        target = (base / value).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return f"{value!r} cannot be resolved: {exc}"
    if not _inside(target, suite):
        return f"{value!r} leads to {target}, outside the suite directory {suite}; keep it inside"
    if directory and not target.is_dir():
        return f"{value!r} is not a directory inside the suite ({target})"
    if not directory and not target.is_file():
        return f"{value!r} is not a file inside the suite ({target})"
    return _fixture_tree_problem(value, target) if directory and tree else None


def _fixture_tree_problem(value: str, top: Path) -> str | None:
    """Why the fixtures tree under ``top`` cannot be copied into a workspace safely."""
    seen = 0
    for current, dirs, files in os.walk(top, followlinks=False):
        for name in [*dirs, *files]:
            seen += 1
            if seen > MAX_FIXTURE_ENTRIES:
                return f"{value!r} holds more than {MAX_FIXTURE_ENTRIES:,} entries"
            entry = Path(current) / name
            shown = entry.relative_to(top).as_posix()
            try:
                mode = entry.lstat().st_mode
            except OSError as exc:
                return f"{value!r}: cannot read {shown}: {exc.strerror}"
            if stat.S_ISLNK(mode):
                link = os.readlink(entry)
                landing = os.path.normpath(os.path.join(current, link))
                if os.path.isabs(link) or not _inside(Path(landing), top):
                    return (
                        f"{value!r}: the symlink {shown} -> {link} leads out of the fixtures; "
                        "replace it by the file or a relative link inside them"
                    )
            elif not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                return f"{value!r}: {shown} is not a regular file or directory; remove it"
    return None


def _host_path_problem(path: str, forbidden: tuple[str, ...], what: str) -> str | None:
    problem = _text_problem(path)
    if problem is not None:
        return problem
    if not path.startswith("/"):
        return f"{path!r} must be an absolute {what} path"
    if os.path.normpath(path) != path or "//" in path:
        fixed = os.path.normpath(path)
        return f"{path!r} is not normalised (no '..', '.', '//' or trailing '/'); write {fixed!r}"
    if path == "/" or any(_inside(Path(path), Path(f)) for f in forbidden):
        fix = (
            "keep what the task needs in a folder of its own outside those (e.g. /data/NAME)"
            if what == "host"
            else "mount it elsewhere inside, e.g. /opt/NAME"
        )
        under = ", ".join(forbidden)
        return f"{path!r} may not be bound ({what} paths under {under} or / itself); {fix}"
    return None


def _homes() -> tuple[str, ...]:
    """The harness's home directory, as ``$HOME`` says and resolved (never ``/``)."""
    found: list[str] = []
    for home in (os.environ.get("HOME"), str(Path.home())):
        if not home or not home.startswith("/"):
            continue
        for form in (os.path.normpath(home), os.path.realpath(home)):
            if form != "/" and form not in found:
                found.append(form)
    return tuple(found)


def _under(path: str, roots: tuple[str, ...]) -> str | None:
    """The first of ``roots`` that ``path`` is or lies inside, or None."""
    return next((r for r in roots if _inside(Path(path), Path(r))), None)


def host_bind_problem(host: str, *, system_only: bool = False) -> str | None:
    """Why the host path of a bind may not be shown in a sandbox, or None: the one judge.

    The path as written must be absolute and normalised; then it and the path it resolves
    to (every symlink followed: what is mounted) may not be ``/`` nor lie under a
    forbidden path, and the resolved path may not show an answer key (``_answer_keys``: a
    suite, a copy of toolproof, a run folder).

    Args:
        host: The host path as written (a task's ``ro_binds`` key).
        system_only: Judge only :data:`SYSTEM_HOST_PATHS` (what a sandbox re-checks at
            mount time for every bind, the harness's own included); else every rule.
    """
    forbidden = SYSTEM_HOST_PATHS if system_only else FORBIDDEN_HOST_PATHS
    problem = _host_path_problem(host, forbidden, "host")
    if problem is not None:
        return problem
    try:
        real = str(Path(host).resolve())
    except (OSError, RuntimeError) as exc:  # a symlink loop
        return f"{host!r} cannot be resolved: {exc}; bind a path that exists"
    homes = () if system_only else _homes()
    fix = "bind a directory that holds only what the task needs, outside those"
    if real == "/":
        return f"{host!r} leads to / (symlinks followed); {fix}"
    shown = repr(host) if real == host else f"{host!r} leads to {real!r} (symlinks followed), which"
    where = _under(real, forbidden)
    if where is not None:
        return f"{shown} lies under {where}: it may not be bound; {fix}"
    home = _under(host, homes) or _under(real, homes)
    if home is not None:
        return f"{shown} lies in the home directory {home}: it may not be bound; {fix}"
    return None if system_only else answer_key_problem(real)


def ro_bind_problem(host: str, inside: str) -> str | None:
    """Why a ``ro_binds`` entry ``host: inside`` is refused, or None (see
    :func:`host_bind_problem` for the host path)."""
    return host_bind_problem(host) or _host_path_problem(inside, FORBIDDEN_INSIDE_PATHS, "sandbox")
