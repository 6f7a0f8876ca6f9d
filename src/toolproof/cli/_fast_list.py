"""A plain ``toolproof list`` answered from what it printed last time, when nothing it
depends on has changed since: the interpreter's start-up and one walk of the package.

The overview (``_listing``) is a function of toolproof's own files (its code and the
built-in suites), of what is installed beside it (provided suites, plug-ins), of the
caches it reads (suite index, registries, plug-ins) and of the terminal (width, bold).
So the text is kept in the cache folder under a key of all of them: the Python build
and ``sys.path``; the path, size and modification time of every file of the package;
the modification time of every ``sys.path`` folder (installing or removing a
distribution adds or removes an entry there); the same of the cache files; the
terminal's width and whether stdout is one; ``TOOLPROOF_NO_PLUGINS``. Any difference,
and the overview is made again. It is kept only when no plug-in was found (a plug-in's
code runs at every start and may register anything).

Each file counts by its path, size, modification and change times and inode, and nothing is
kept while an input is younger than two seconds (a second change within the same clock tick
would go unseen). This module imports ``os``, ``sys``, ``time`` and ``marshal`` only: reading
the cache costs less than importing ``re`` would.
"""

from __future__ import annotations

import marshal
import os
import sys
import time

FORMAT = 1
"""Bumped when the key or the file changes shape."""

_FILE = f"list-overview-py{sys.version_info[0]}{sys.version_info[1]}.marshal"
"""One file per Python version: marshal's format is the interpreter's own, so another
version never reads this one (and two interpreters sharing the folder do not take turns)."""
_INPUTS = ("suite-index.json", "registries.json", "plugins.json")


def cache_folder() -> str | None:
    """``$XDG_CACHE_HOME/toolproof`` (default ``~/.cache/toolproof``); None when
    ``TOOLPROOF_NO_INDEX`` is set or no cache folder can be named."""
    if os.environ.get("TOOLPROOF_NO_INDEX"):
        return None
    cache = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(cache):  # the XDG rule: a relative value is ignored
        home = os.environ.get("HOME")
        if not home:
            return None
        cache = os.path.join(home, ".cache")
    return os.path.join(cache, "toolproof")


def terminal_columns(fallback: int = 100) -> int:
    """``shutil.get_terminal_size((fallback, 24)).columns`` without importing shutil (and
    the compression modules it imports): ``COLUMNS`` when set, else stdout's terminal."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno()) if sys.__stdout__ else None
    except (AttributeError, ValueError, OSError):  # not a terminal, closed, detached
        size = None
    return (size.columns if size is not None else 0) or fallback


Stamp = tuple[str, int, int, int, int]
"""``(path, size, mtime_ns, ctime_ns, inode)``; sizes and times -1 for a path not there."""


def _stat(path: str, stat: os.stat_result) -> Stamp:
    return (path, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_ino)


def _files(root: str) -> list[Stamp]:
    """The stamp of every file under ``root`` (bytecode caches aside)."""
    found: list[Stamp] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            found.append((folder, -1, -1, -1, -1))
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    folders.append(entry.path)
                continue
            try:
                found.append(_stat(entry.path, entry.stat()))
            except OSError:
                found.append((entry.path, -1, -1, -1, -1))
    return found


def _stamp(path: str) -> Stamp:
    try:
        return _stat(path, os.stat(path))
    except OSError:
        return (path, -1, -1, -1, -1)


SETTLE_NS = 2 * 10**9
"""A file of the package or a ``sys.path`` folder changed less than this long ago may
change again within the same clock tick, unseen: nothing is kept until they are older."""


def key(folder: str, package: str | None = None) -> tuple[object, ...]:
    """What the overview depends on, now (see the module's docstring)."""
    root = package or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    isatty = False
    try:  # noqa: SIM105 (contextlib is one more import)
        isatty = sys.stdout.isatty()
    except (AttributeError, ValueError):  # no stdout, or a closed one
        pass
    return (
        FORMAT,
        sys.version,
        sys.executable,
        tuple(sys.path),
        terminal_columns(),
        isatty,
        os.environ.get("TOOLPROOF_NO_PLUGINS", ""),
        tuple(_files(root)),
        tuple(_stamp(p) for p in sys.path if p),
        tuple(_stamp(os.path.join(folder, name)) for name in _INPUTS),
    )


_LIVE = ("toolproof._plugins", "toolproof.cli._listing", "toolproof.spec")
"""Modules whose presence means the process has run toolproof's code already (a test, a
notebook): what they would print may differ from what a fresh start prints (a patched
function, a registered plug-in), so the kept text is neither used nor written there."""


def fresh_process() -> bool:
    """Whether none of :data:`_LIVE` is loaded: a ``toolproof list`` from a clean start."""
    return not any(name in sys.modules for name in _LIVE)


def cached() -> str | None:
    """The overview printed last time, if nothing it depends on changed; else None."""
    folder = cache_folder()
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, _FILE), "rb") as file:
            stored = marshal.load(file)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not (isinstance(stored, tuple) and len(stored) == 2 and isinstance(stored[1], str)):
        return None
    return stored[1] if stored[0] == key(folder) else None


def store(text: str) -> None:
    """Keep ``text`` as the overview for the current key (quietly not, where it cannot)."""
    folder = cache_folder()
    if folder is None:
        return
    now = key(folder)
    young = time.time_ns() - SETTLE_NS
    for part in now[-3:-1]:  # the package's files and sys.path (the caches are toolproof's own)
        assert isinstance(part, tuple)
        if any(max(stamp[2], stamp[3]) > young for stamp in part):
            return
    path = os.path.join(folder, _FILE)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(folder, exist_ok=True)
        with open(temporary, "wb") as file:
            marshal.dump((now, text), file)  # type: ignore[arg-type]  # plain data
        os.replace(temporary, path)
    except (OSError, ValueError):
        try:  # noqa: SIM105 (contextlib is one more import)
            os.unlink(temporary)
        except OSError:
            pass
