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
normalised, and may not expose the host's kernel interfaces, devices, secrets or
home directories (:data:`FORBIDDEN_HOST_PATHS`), nor hide the workspace.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

MAX_PATH_BYTES = 1024
"""Longest workspace path, in UTF-8 bytes."""
MAX_NAME_BYTES = 255
"""Longest component of a path (the limit of Linux file systems)."""
MAX_FIXTURE_ENTRIES = 100_000
"""Most entries a fixtures directory may hold (a bound on the walk that checks it)."""
VIRTUAL_ROOT = "/workspace"
FORBIDDEN_HOST_PATHS = ("/proc", "/sys", "/dev", "/etc", "/root", "/home", "/run", "/var/run")
"""Host paths ``ro_binds`` may not expose (nor ``/`` itself)."""
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
        return f"{path!r} may not be bound ({what} paths under {', '.join(forbidden)} or / itself)"
    return None


def ro_bind_problem(host: str, inside: str) -> str | None:
    """Why a ``ro_binds`` entry ``host: inside`` is refused, or None."""
    return _host_path_problem(host, FORBIDDEN_HOST_PATHS, "host") or _host_path_problem(
        inside, FORBIDDEN_INSIDE_PATHS, "sandbox"
    )
