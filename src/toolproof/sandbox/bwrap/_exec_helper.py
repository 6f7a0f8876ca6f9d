"""The C programs a root harness's spawner uses, each built once with the system's C compiler.

``native_spawner`` builds ``_spawner.c``, the spawner itself in C (the same protocol
and steps as ``_spawner_main``, no Python per command); ``exec_helper`` builds
``_exec_helper.c``, which the Python spawner starts each command through with
``posix_spawn`` instead of forking itself and running Python in the child. Each is
compiled on first use into a private directory (``/tmp/toolproof-exec-helper-<uid>``,
mode 0700, checked to be this user's and no one else's before anything in it is run)
under a name carrying the source's digest, so a changed source is rebuilt and a
built one is reused by every later process. Where no compiler exists (or it fails),
both are None: the harness runs the Python spawner, which forks and runs the same
steps in Python, with the same guarantees.

Only a root harness uses them (the spawner exists only there).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

__all__ = ["SOURCE", "SPAWNER_SOURCE", "builds", "exec_helper", "native_spawner", "trusted"]

_log = logging.getLogger(__name__)
#: The helper's C source, shipped inside the package.
SOURCE = Path(__file__).with_name("_exec_helper.c")
#: The C spawner's source (``_spawner.c``), built the same way.
SPAWNER_SOURCE = Path(__file__).with_name("_spawner.c")
#: The header it includes (the JSON parser), part of its digest.
SPAWNER_JSON = Path(__file__).with_name("_spawner_json.h")
_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#: How it is built (part of the digest: a new recipe builds a new file).
_RECIPE = b"cc -O2, -static where the C library allows"
#: How many times this process ran the compiler (tests count them).
builds = 0


def trusted(path: Path, *, directory: bool) -> bool:
    """True when ``path`` (never followed if a link) is this user's and no one else may write it.

    A directory must also be closed to everyone else (mode 0700): the helper runs as
    root, so nothing another user could have put or replaced there may be run.
    """
    try:
        info = os.lstat(path)
    except OSError:
        return False
    kind = stat.S_ISDIR if directory else stat.S_ISREG
    closed = 0o077 if directory else 0o022
    return kind(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & closed


def _directory() -> Path | None:
    """The private build directory (made if missing), or None when it is not trustworthy."""
    where = Path(tempfile.gettempdir()) / f"toolproof-exec-helper-{os.geteuid()}"
    try:
        where.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        _log.debug("no directory for the exec helper: %s", exc)
        return None
    if not trusted(where, directory=True):
        _log.warning("%s is not this user's private directory; the exec helper is not used", where)
        return None
    return where


def _compile(source: Path, target: Path) -> bool:
    """Compile ``source`` to ``target`` (atomically); False when no compiler could.

    Linked statically where the C library allows it (no dynamic loader at each
    command's start: ≈0.1 ms of CPU), else dynamically.
    """
    global builds
    compiler = shutil.which("cc", path=_PATH) or shutil.which("gcc", path=_PATH)
    if compiler is None:
        return False
    partial = target.with_name(f".{target.name}.{os.getpid()}.{os.urandom(4).hex()}")
    builds += 1
    try:
        for linking in (["-static"], []):
            run = subprocess.run(
                [compiler, "-O2", *linking, "-o", str(partial), str(source)],
                capture_output=True, text=True, timeout=120, env={"PATH": _PATH},
            )  # fmt: skip
            if run.returncode == 0:
                break
        else:
            _log.warning("could not build the exec helper: %s", run.stderr.strip()[-500:])
            return False
        partial.chmod(0o755)
        partial.replace(target)
        return True
    except (OSError, subprocess.TimeoutExpired) as exc:
        _log.warning("could not build the exec helper: %s", exc)
        return False
    finally:
        partial.unlink(missing_ok=True)


def _built(source: Path, name: str, headers: tuple[Path, ...] = ()) -> str | None:
    """The path of ``source`` built as ``name-<digest>``, or None (not root, no compiler,
    untrusted directory). The digest covers the ``headers`` it includes too."""
    if os.geteuid() != 0:
        return None
    try:
        text = b"".join(path.read_bytes() for path in (source, *headers))
        digest = hashlib.sha256(text + _RECIPE).hexdigest()[:16]
    except OSError:
        return None
    where = _directory()
    if where is None:
        return None
    target = where / f"{name}-{digest}"
    if not trusted(target, directory=False) and not _compile(source, target):
        return None
    return str(target) if trusted(target, directory=False) else None


@functools.cache
def exec_helper() -> str | None:
    """The path of the built helper, or None (not root, no compiler, untrusted directory).

    Built at most once per source digest and machine (until the directory is removed);
    looked up once per process.
    """
    return _built(SOURCE, "exec-helper")


@functools.cache
def native_spawner() -> str | None:
    """The path of the built C spawner (``_spawner.c``), or None where it cannot be built
    or trusted (as ``exec_helper``); the harness then runs ``_spawner_main.py``."""
    return _built(SPAWNER_SOURCE, "spawner", (SPAWNER_JSON,))
