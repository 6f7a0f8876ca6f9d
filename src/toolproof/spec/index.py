"""An index of suite metadata that cannot go stale, so ``toolproof list`` need not load suites.

Loading a suite validates every task (pydantic models, five rendered epochs each):
seconds for the built-in suites. ``toolproof list`` shows only each suite's name,
version, description and task count, so those are kept in a small JSON file, one
entry per suite folder, under a *fingerprint*: a hash of the relative path, size,
modification and change times and inode of every file of the folder (a symlink by its
target), and of every source file of this package (the validator itself). An entry is
used only when the fingerprint computed now, from the files, equals the stored one; any
other case (no index, a corrupt or hostile one, an edited, added or removed file, a
touched file, a changed validator) loads the suite in full, as before, and rewrites the
entry. Only suites that loaded without problems are recorded, so a broken suite is reported on
every call.

The same file also records suites that passed *every* check of ``run`` (the spec
layer's and :mod:`toolproof.engine.preflight`'s), under a stronger fingerprint
(:func:`checked_fingerprint`): the suite's files, every source file of the installed
package (validators, tools, check functions) and a digest of the live registries
(tools with their schemas, toolkits, handlers, simulators, check kinds and functions:
plug-ins included) that the caller computes. Only for such an entry may ``run`` of some
tasks (``--task``) load and check just those tasks' files (:func:`load_recorded_tasks`):
every other file is byte-for-byte the one that passed under the same code and registries.
A changed file changes the fingerprint, so the whole suite is loaded again and its
problems reported with ``file:line``; a suite whose ``custom`` checks import a module
from outside the suite and the package is never recorded (that module is not in the
fingerprint), nor one with a file younger than two seconds (an edit within the file
system's clock tick could otherwise keep the stamp). The suite digest a run records is
always computed from the files.

Stdlib only at import (no pydantic), so reading the index is cheap.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .suite import Suite

INDEX_VERSION = 1
"""Bump when the entry format changes; other versions are ignored and rewritten."""
_MAX_INDEX_BYTES = 4 * 1024 * 1024  # far above any real index; a bigger file is ignored
SETTLED_NS = 2_000_000_000
"""A suite with a file changed less than this long ago (ns) is not recorded as checked."""
_PACKAGE = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class SuiteInfo:
    """What ``toolproof list`` shows of a suite.

    Attributes:
        name: The suite's name (``suite.yaml`` ``name``).
        version: Its version.
        description: What it measures.
        tasks: How many tasks it holds.
    """

    name: str
    version: str
    description: str
    tasks: int


def suite_fingerprint(root: Path) -> str:
    """Hash of the path, size and modification time of every file under ``root`` and of
    this package's source files: changes whenever any of them could change the suite."""
    sha = hashlib.sha256(f"toolproof-suite-index {INDEX_VERSION}\0".encode())
    _stat_files(sha, root)
    _stat_files(sha, Path(__file__).parent)
    return sha.hexdigest()


def tree_fingerprint(top: Path, skip: tuple[str, ...] = ()) -> str:
    """Hash of the path, size, times and inode of every file under ``top`` except the
    top-level folders named in ``skip`` (for caches of what code there registers, e.g.
    the CLI's agent and tool listing)."""
    sha = hashlib.sha256(f"toolproof-tree {INDEX_VERSION}\0".encode())
    _stat_files(sha, top, skip)
    return sha.hexdigest()


def _stat_files(
    sha: Any, top: Path, skip: tuple[str, ...] = (), newest: list[int] | None = None
) -> None:
    """Hash every file's stamp into ``sha``; ``newest[0]`` becomes the latest time seen."""
    stack = [(str(top), "")]
    while stack:
        folder, rel = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:  # gone or unreadable: the fingerprint just differs
            continue
        subdirs = []
        for entry in entries:
            name = rel + entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__" and not (rel == "" and entry.name in skip):
                        subdirs.append((entry.path, name + "/"))
                    continue
                st = entry.stat(follow_symlinks=False)
                link = os.readlink(entry.path) if entry.is_symlink() else ""
            except OSError:
                continue
            stamp = (
                f"{name}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}\0{link}\0"
            )
            sha.update(stamp.encode("utf-8", "surrogateescape"))
            if newest is not None:
                newest[0] = max(newest[0], st.st_mtime_ns, st.st_ctime_ns)
        stack.extend(reversed(subdirs))


class SuiteIndex:
    """The JSON index file: read once, looked up by suite folder, written back atomically.

    Args:
        path: The index file (``None``: no index, every lookup misses).
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries, self._checked = self._read()
        self._dirty = False

    def _read(self) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        data = self._load()
        parts = []
        for key in ("suites", "checked"):
            entries = data.get(key)
            if not isinstance(entries, dict):
                entries = {}
            parts.append(
                {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)}
            )
        return parts[0], parts[1]

    def _load(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            if self.path.stat().st_size > _MAX_INDEX_BYTES:
                return {}
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("version") != INDEX_VERSION:
            return {}
        return data

    def get(self, root: Path, fingerprint: str) -> SuiteInfo | None:
        """The entry of ``root`` if it was recorded under this very fingerprint."""
        entry = self._entries.get(str(root.resolve()))
        if entry is None or entry.get("fingerprint") != fingerprint:
            return None
        fields = (entry.get("name"), entry.get("version"), entry.get("description"))
        tasks = entry.get("tasks")
        if not all(isinstance(f, str) for f in fields) or type(tasks) is not int or tasks < 0:
            return None  # not written by us: ignore it, it will be rewritten
        name, version, description = (str(f) for f in fields)
        return SuiteInfo(name, version, description, tasks)

    def put(self, root: Path, fingerprint: str, info: SuiteInfo) -> None:
        """Record ``info`` for ``root`` under ``fingerprint`` (written by :meth:`save`)."""
        self._entries[str(root.resolve())] = {
            "fingerprint": fingerprint,
            "name": info.name,
            "version": info.version,
            "description": info.description,
            "tasks": info.tasks,
        }
        self._dirty = True

    def checked(self, root: Path, fingerprint: str) -> list[tuple[str, str]] | None:
        """``(task id, file relative to root)`` of every task of a suite recorded as fully
        checked under this very fingerprint, in suite order; None: no such entry."""
        entry = self._checked.get(str(root.resolve()))
        if entry is None or entry.get("fingerprint") != fingerprint:
            return None
        tasks = entry.get("tasks")
        if not isinstance(tasks, list):
            return None
        found: list[tuple[str, str]] = []
        for item in tasks:
            if not (isinstance(item, list) and len(item) == 2):
                return None
            task_id, rel = item
            if not (isinstance(task_id, str) and isinstance(rel, str)) or not _inside(rel):
                return None  # not written by us: ignore it, it will be rewritten
            found.append((task_id, rel))
        return found

    def has_checked(self, root: Path) -> bool:
        """Whether ``root`` has a fully checked record at all, under any fingerprint."""
        return str(root.resolve()) in self._checked

    def put_checked(self, root: Path, fingerprint: str, tasks: list[tuple[str, str]]) -> None:
        """Record that every task of ``root`` passed every check under ``fingerprint``."""
        self._checked[str(root.resolve())] = {
            "fingerprint": fingerprint,
            "tasks": [list(t) for t in tasks],
        }
        self._dirty = True

    def save(self) -> None:
        """Write the index if it changed: to a temporary file, then renamed over it (a
        reader never sees half a file). An index that cannot be written is skipped: it
        only saves time."""
        if self.path is None or not self._dirty:
            return
        data = {"version": INDEX_VERSION, "suites": self._entries, "checked": self._checked}
        text = json.dumps(data, indent=1)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):  # e.g. the folder is a file: no tmp was made
                tmp.unlink(missing_ok=True)
            return
        self._dirty = False


def suite_infos(names: list[str], index_file: Path | None) -> list[SuiteInfo]:
    """Metadata of each named suite (built-in name or folder), from the index where it is
    current, else by loading the suite (and recording it).

    Raises:
        SpecError: a suite that had to be loaded has problems (it is not recorded).
    """
    from ._find import resolve_suite_path

    index = SuiteIndex(index_file)
    infos: list[SuiteInfo] = []
    try:
        for name in names:
            root = resolve_suite_path(name)
            fingerprint = suite_fingerprint(root)
            info = index.get(root, fingerprint)
            if info is None:
                from .loader import load_suite  # the models, only when a suite must load

                suite = load_suite(root)
                config = suite.config
                info = SuiteInfo(config.name, config.version, config.description, len(suite.tasks))
                # Recorded under the fingerprint taken *before* loading: a file changed
                # meanwhile makes the entry miss next time instead of hiding the change.
                index.put(root, fingerprint, info)
            infos.append(info)
    finally:
        index.save()
    return infos


def _inside(rel: str) -> bool:
    """Whether a recorded path names a file inside the suite (relative, no ``..``)."""
    path = Path(rel)
    return bool(rel) and not path.is_absolute() and ".." not in path.parts and "\0" not in rel


def checked_fingerprint(root: Path, registries: str) -> tuple[str, bool]:
    """The fingerprint of a fully checked suite: its files, every source file of this
    package and ``registries`` (the caller's digest of the live registries); and whether
    every file is settled (older than :data:`SETTLED_NS`), so that it may be recorded."""
    import time

    newest = [0]
    sha = hashlib.sha256(f"toolproof-checked {INDEX_VERSION}\0{registries}\0".encode())
    _stat_files(sha, root, newest=newest)
    _stat_files(sha, _PACKAGE, skip=("suites",), newest=newest)
    return sha.hexdigest(), newest[0] < time.time_ns() - SETTLED_NS


def recorded_tasks(
    index_file: Path | None, root: Path, fingerprint: str
) -> list[tuple[str, str]] | None:
    """The tasks of ``root`` if the index records it as fully checked under ``fingerprint``."""
    return SuiteIndex(index_file).checked(root, fingerprint) if index_file else None


def has_checked(index_file: Path | None, root: Path) -> bool:
    """Whether the index holds a fully checked record of ``root`` (of any fingerprint):
    without one, no fingerprint can find one, so a run of some tasks need not compute it."""
    return SuiteIndex(index_file).has_checked(root) if index_file else False


def record_checked(
    index_file: Path | None, root: Path, fingerprint: str, tasks: list[tuple[str, str]]
) -> None:
    """Record ``root`` as fully checked under ``fingerprint`` (tasks: id, relative file)."""
    if index_file is None:
        return
    index = SuiteIndex(index_file)
    index.put_checked(root, fingerprint, tasks)
    index.save()


def load_recorded_tasks(root: Path, tasks: list[tuple[str, str]]) -> Suite | None:
    """The suite of ``root`` with only ``tasks`` (id, relative file), each loaded and
    validated from its file as :func:`~toolproof.spec.loader.load_suite` would; the
    digest is of every file of the suite, as ever. None when the entry does not fit the
    files (a path outside the suite, another task id): then the caller loads it all.

    Raises:
        SpecError: problems of suite.yaml or of one of these task files.
    """
    from ._semantic import suite_problems
    from .errors import SpecError
    from .loader import _parse, load_task, suite_digest
    from .suite import Suite, SuiteConfig

    config, source = _parse(SuiteConfig, root / "suite.yaml")
    problems = suite_problems(config, root / "suite.yaml", source)
    if problems:
        raise SpecError(problems)
    loaded = []
    files: dict[str, Path] = {}
    inside = root.resolve()
    for task_id, rel in tasks:
        file = root / rel
        if not file.is_file() or not file.resolve().is_relative_to(inside):
            return None
        task = load_task(file, config, root)
        if task.id != task_id:
            return None
        files[task.id] = file
        loaded.append(task)
    suite = Suite(config=config, tasks=loaded, root=root, digest=suite_digest(root))
    suite._task_files.update(files)
    return suite
