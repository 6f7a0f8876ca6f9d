"""Third-party plug-ins: one entry-point group, ``toolproof``, loaded lazily and once.

A plug-in's entry point names a module (or callable) that registers tools,
agents or checks with the usual decorators when imported. A broken plug-in is
reported, not fatal. The CLI turns autoload off when ``TOOLPROOF_NO_PLUGINS`` is set.

Finding the entry points through :mod:`importlib.metadata` costs more than the rest of
a quick command (importing it, then reading every installed distribution), so the CLI
passes a *cache file*: the entry points found are kept there under a stamp of every
place :mod:`importlib.metadata` would look, and used only while the stamp computed now
equals the stored one. The stamp covers ``sys.path`` itself (and the working folder,
which ``''`` stands for), and for each folder on it: the names of its ``*.dist-info`` /
``*.egg-info`` entries (a distribution added or removed changes it whatever the clocks
say) and the size, times and inode of each one's ``entry_points.txt`` (a reinstall
replaces the file); a zip or egg on the path counts by its stat. Nothing is cached when
a finder other than the standard path finder can supply distributions, or while a
stamped file is younger than two seconds (a change within the file system's clock tick
could otherwise go unseen); a cache that is corrupt, of another format or of another
stamp is ignored and rewritten.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

GROUP = "toolproof"
PYDANTIC_GROUP = "pydantic"
"""pydantic's own plug-in group, found in the same pass (see :func:`spare_pydantic_scan`)."""
CACHE_VERSION = 2
"""Bump when the cache's format changes; other versions are ignored and rewritten."""
_MAX_CACHE_BYTES = 1024 * 1024
_SETTLED_NS = 2_000_000_000  # a stamped file younger than this keeps the cache unwritten
_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")
"""An entry point's ``module[:attr.attr] [extras]`` (importlib.metadata's own pattern)."""
_INFO_SUFFIXES = (".dist-info", ".egg-info")
_loaded: dict[str, str | None] | None = None
_pydantic_points: list[tuple[str, str]] | None = None
"""The ``pydantic`` group's entry points, as the last :func:`find_entry_points` saw them."""


def load_plugins(enabled: bool = True, cache: Path | None = None) -> dict[str, str | None]:
    """Load every plug-in once; return name to None (loaded) or the error text.

    Args:
        enabled: False: load none (``TOOLPROOF_NO_PLUGINS``).
        cache: Where to keep the entry points found (None: scan every time).
    """
    global _loaded
    if _loaded is not None:
        return _loaded
    _loaded = {}
    if not enabled:
        return _loaded
    for name, value in find_entry_points(cache):
        try:
            target = _resolve(value)
            if callable(target) and not isinstance(target, type):
                target()
            _loaded[name] = None
        except (Exception, SystemExit) as exc:  # a plug-in that exits is broken, not the run
            _loaded[name] = f"{type(exc).__name__}: {exc}"
    return _loaded


def reset_plugins() -> None:
    """Forget what was loaded (for tests)."""
    global _loaded
    _loaded = None


def find_entry_points(cache: Path | None = None) -> list[tuple[str, str]]:
    """``(name, value)`` of every entry point of the ``toolproof`` group, in the order
    :func:`importlib.metadata.entry_points` gives them: from ``cache`` where its stamp
    is current, else found (and the cache rewritten)."""
    global _pydantic_points
    stamp = _stamp() if cache is not None else None
    if cache is not None and stamp is not None:
        cached = _read(cache, stamp[0])
        if cached is not None:
            found, _pydantic_points = cached
            return found
    from importlib.metadata import entry_points

    every = entry_points()
    found = [(ep.name, ep.value) for ep in every.select(group=GROUP)]
    _pydantic_points = [(ep.name, ep.value) for ep in every.select(group=PYDANTIC_GROUP)]
    if cache is not None and stamp is not None and stamp[1]:
        data = {
            "version": CACHE_VERSION,
            "stamp": stamp[0],
            "entry_points": found,
            "pydantic_entry_points": _pydantic_points,
        }
        write_json_atomic(cache, data)
    return found


def spare_pydantic_scan() -> bool:
    """Tell pydantic it has no plug-ins when the entry points found last hold none of its
    group; return whether it was told.

    pydantic looks for plug-ins of its own (the ``pydantic`` entry-point group) when it
    builds its first model, by reading every installed distribution through
    :mod:`importlib.metadata`: tens of milliseconds with a few hundred installed.
    :func:`find_entry_points` finds that group in the same pass as toolproof's (or from
    its cache, under the same stamp), so where it holds nothing, pydantic's list is set
    to what its own look would find: empty. Where the group holds a plug-in, or pydantic
    already looked, or no look was made (plug-ins off), pydantic is left to do as it does.
    """
    if _pydantic_points is None or _pydantic_points:
        return False
    try:
        from pydantic.plugin import _loader
    except ImportError:  # another pydantic's layout: it looks for itself
        return False
    if getattr(_loader, "_plugins", False) is not None or _loader._loading_plugins:
        return False
    _loader._plugins = {}
    return True


def installed_version(distribution: str) -> str | None:
    """The version of an installed distribution (None: not installed), as
    :func:`importlib.metadata.version` finds it, without importing that module where the
    path holds only folders (its ``METADATA`` / ``PKG-INFO`` header is read)."""
    wanted = _normalize(distribution)
    folders = _path_folders()
    if folders is None:
        return _metadata_version(distribution)
    for folder in folders:
        for name in _info_names(folder):
            if _normalize(name.rpartition(".")[0].partition("-")[0]) != wanted:
                continue
            info = os.path.join(folder, name)
            for meta in ("METADATA", "PKG-INFO"):
                version = _header_version(os.path.join(info, meta))
                if version is not None:
                    return version
            return _metadata_version(distribution)  # an odd layout: ask the real thing
    return None


def _metadata_version(distribution: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _header_version(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            for line in file:
                if not line.strip():
                    break  # the headers end at the first blank line
                if line.startswith("Version:"):
                    return line[len("Version:") :].strip() or None
    except OSError:
        pass
    return None


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _resolve(value: str) -> Any:
    """What an entry point's value names (``EntryPoint.load``, without importlib.metadata)."""
    match = _VALUE.match(value)
    if match is None:
        raise ValueError(f"not an entry point value: {value!r}")
    module = importlib.import_module(match.group("module"))
    attrs = filter(None, (match.group("attr") or "").split("."))
    return functools.reduce(getattr, attrs, module)


def _path_folders() -> list[str] | None:
    """The folders on ``sys.path`` (absolute), or None when something else could supply
    distributions (a zip or egg on the path, a finder of distributions of its own)."""
    if any(
        hasattr(finder, "find_distributions") and not _is_path_finder(finder)
        for finder in sys.meta_path
    ):
        return None
    folders = []
    for entry in sys.path:
        path = os.path.abspath(entry or ".")
        if os.path.isdir(path):
            if path.lower().endswith(".egg"):
                return None
            folders.append(path)
        elif os.path.exists(path):
            return None  # a zip on the path may hold distributions
    return folders


def _is_path_finder(finder: Any) -> bool:
    from importlib.machinery import PathFinder

    return finder is PathFinder


def _info_names(folder: str) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if e.name.lower().endswith(_INFO_SUFFIXES))
    except OSError:
        return []


def _stamp() -> tuple[str, bool] | None:
    """The stamp of every place the entry points could come from, and whether every
    stamped file is settled (old enough to cache); None: not cacheable here."""
    if any(
        hasattr(finder, "find_distributions") and not _is_path_finder(finder)
        for finder in sys.meta_path
    ):
        return None
    sha = hashlib.sha256(f"toolproof-plugins {CACHE_VERSION}\0{sys.executable}\0".encode())
    settled_before = time.time_ns() - _SETTLED_NS
    settled = True
    for part in _stamp_parts():
        if isinstance(part, int):
            settled = settled and part < settled_before
            continue
        sha.update(part.encode("utf-8", "surrogateescape") + b"\0")
    return sha.hexdigest(), settled


def _stamp_parts() -> Iterator[str | int]:
    """Text to hash, and modification times (ns) to check for being settled."""
    yield repr(sys.path)
    yield os.getcwd()
    for entry in sys.path:
        path = os.path.abspath(entry or ".")
        try:
            st = os.stat(path)
        except OSError:
            yield f"absent {path}"
            continue
        if not os.path.isdir(path):  # a zip: by its stat (a folder: by what is in it)
            yield f"{path} {st.st_mode} {st.st_size} {st.st_mtime_ns} {st.st_ino}"
            yield max(st.st_mtime_ns, st.st_ctime_ns)
            continue
        yield f"{path} folder"
        names = _info_names(path)
        if path.lower().endswith(".egg"):
            names.append("EGG-INFO")
        for name in names:
            points = os.path.join(path, name, "entry_points.txt")
            try:
                ep = os.stat(points)
            except OSError:
                yield f"{name} none"
                continue
            yield f"{name} {ep.st_size} {ep.st_mtime_ns} {ep.st_ctime_ns} {ep.st_ino}"
            yield max(ep.st_mtime_ns, ep.st_ctime_ns)


def _read(path: Path, stamp: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
    """The cached entry points (toolproof's and pydantic's groups) if the file is ours,
    well formed and of this stamp."""
    try:
        if path.stat().st_size > _MAX_CACHE_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    if data.get("stamp") != stamp:
        return None
    toolproofs = _points(data.get("entry_points"))
    pydantics = _points(data.get("pydantic_entry_points"))
    if toolproofs is None or pydantics is None:
        return None
    return toolproofs, pydantics


def _points(items: Any) -> list[tuple[str, str]] | None:
    """A cached group's ``[name, value]`` pairs, or None when any is malformed."""
    if not isinstance(items, list):
        return None
    found: list[tuple[str, str]] = []
    for item in items:
        if not (isinstance(item, list) and len(item) == 2):
            return None
        if not all(isinstance(part, str) for part in item):
            return None
        if _VALUE.match(item[1]) is None:
            return None
        found.append((item[0], item[1]))
    return found


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (temporary file, then rename); a cache that cannot be written is
    skipped, it only saves time."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):  # e.g. the folder is a file: no tmp was made
            tmp.unlink(missing_ok=True)
