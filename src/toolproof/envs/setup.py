"""Installing a pinned environment into the cache, once; agents never install anything.

``setup_env`` installs into a private temporary directory of the cache root
(PyPI packages with ``pip --no-deps --only-binary :all: --target``, npm packages
with ``npm ci --ignore-scripts`` from the lock's own ``package-lock.json``),
links the programs into ``bin/``, checks that what got installed is what the
version file pins, writes the manifest and renames the directory into place. A
directory already in place is reused (a warm set-up costs a few file reads).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from toolproof._version import __version__

from .cache import MANIFEST, default_cache_root, inspect_env, live_state
from .errors import EnvDrift, SetupFailed
from .lock import INSTALL_FILES, EnvLock, component_changes, file_sha256

__all__ = ["SetupResult", "setup_env"]

Log = Callable[[str], None]
_TIMEOUT_S = 900


@dataclass(frozen=True)
class SetupResult:
    """What ``setup_env`` did.

    Attributes:
        lock: The version file as it now is (rewritten when ``record`` was given).
        directory: The environment in the cache.
        installed: False when an existing directory was reused (warm).
        seconds: Wall time of the set-up.
        changes: What ``record`` changed in the version file (pinned → live).
    """

    lock: EnvLock
    directory: Path
    installed: bool
    seconds: float
    changes: list[str]


def _run(argv: list[str], cwd: Path, what: str) -> None:
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SetupFailed(f"{what} failed: {exc}") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-1500:]
        raise SetupFailed(f"{what} failed (exit {done.returncode}):\n{tail}")


def _install(lock: EnvLock, lock_dir: Path, target: Path, *, record: bool) -> None:
    """Install the lock's packages and link its programs under ``target``."""
    if lock.pip:
        pins = [f"{name}=={version}" for name, version in sorted(lock.pip.items())]
        argv = [sys.executable, "-m", "pip", "install", "--no-deps", "--only-binary", ":all:"]
        argv += ["--disable-pip-version-check", "--no-input", "--quiet"]
        what = "pip install " + " ".join(pins)
        _run([*argv, "--target", str(target / "py"), *pins], target, what)
    if lock.npm:
        node = target / "node"
        node.mkdir()
        for name in INSTALL_FILES:
            shutil.copyfile(lock_dir / name, node / name)
            if not record and file_sha256(node / name) != lock.files.get(name):
                raise SetupFailed(
                    f"{lock_dir / name} changed since the version file was recorded; "
                    "record it again with `toolproof env setup SUITE --record`"
                )
        declared = json.loads((node / "package.json").read_text(encoding="utf-8"))
        deps = declared.get("devDependencies", {}) | declared.get("dependencies", {})
        if deps != lock.npm:
            raise SetupFailed(
                f"{lock_dir / 'package.json'} pins {deps}, the version file {lock.npm}; "
                "make them agree"
            )
        npm = shutil.which("npm")
        if npm is None:
            raise SetupFailed("npm is not installed; install Node.js (with npm) first")
        _run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund"], node, "npm ci")
    (target / "bin").mkdir()
    for program in lock.bin:
        for candidate in (Path("py") / "bin" / program, Path("node/node_modules/.bin") / program):
            if (target / candidate).exists():
                os.symlink(Path("..") / candidate, target / "bin" / program)
                break
        else:
            raise SetupFailed(f"no program {program!r} in the installed packages of {lock.name!r}")


def _recorded(lock: EnvLock, components: dict[str, str], files: dict[str, str]) -> EnvLock:
    """The lock with the runtimes and install files as found, and its digest recomputed.

    Raises:
        EnvDrift: a package got installed in another version than pinned (only
            runtimes and install-file hashes are taken from what was found).
    """
    packages = {**lock.pip, **lock.npm}
    wrong = component_changes(packages, {n: components[n] for n in packages})
    if wrong:
        raise EnvDrift(f"{lock.name}: packages installed differ from the pins: {wrong}", wrong)
    runtimes = {name: components[name] for name in lock.runtimes}
    new = lock.model_copy(update={"runtimes": runtimes, "files": files, "bin": sorted(lock.bin)})
    return new.model_copy(update={"digest": new.expected_digest()})


def setup_env(
    lock_path: Path,
    cache_root: Path | None = None,
    *,
    force: bool = False,
    record: bool = False,
    log: Log | None = None,
) -> SetupResult:
    """Install the environment of a version file into the cache (or reuse it).

    Args:
        lock_path: The ``env.lock.json``.
        cache_root: The cache (default ``~/.cache/toolproof/envs``).
        force: Install again even when the environment is in place.
        record: Rewrite the version file from what got installed (runtimes, install
            file hashes, digest) instead of refusing a difference.
        log: Progress messages.

    Raises:
        SetupFailed: an install step failed.
        EnvDrift: what got installed differs from the pins (without ``record``).
        SpecError: the version file is invalid.
    """
    started = time.perf_counter()
    say = log or (lambda _: None)
    root = cache_root or default_cache_root()
    status = inspect_env(lock_path, root)
    lock = status.lock
    if status.ready and not force and not record:
        assert status.directory is not None
        say(f"{lock.name}: reusing {status.directory}")
        return SetupResult(lock, status.directory, False, time.perf_counter() - started, [])
    root.mkdir(parents=True, exist_ok=True)
    temp = root / f".tmp-{lock.name}-{os.getpid()}-{time.monotonic_ns()}"
    temp.mkdir()
    try:
        packages = [f"{n}=={v}" for n, v in sorted({**lock.pip, **lock.npm}.items())]
        say(f"{lock.name}: installing {', '.join(packages)}")
        _install(lock, lock_path.parent, temp, record=record)
        components, files, live_digest = live_state(lock, temp)
        changes = component_changes(lock.components, components)
        if record:
            lock = _recorded(lock, components, files)
            changes = component_changes(EnvLock.load(lock_path).components, lock.components)
        elif changes or live_digest != lock.digest:
            raise EnvDrift(
                f"{lock.name}: the installed environment differs from {lock_path} "
                f"(pinned → live): {'; '.join(changes) or 'digest ' + live_digest}; "
                "record it with `toolproof env setup SUITE --record` if that is intended",
                changes,
            )
        manifest = {
            "name": lock.name,
            "digest": lock.digest,
            "components": components,
            "files": files,
            "env": lock.env,
            "bin": sorted(lock.bin),
            "toolproof": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        (temp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        final = root / lock.key
        if final.exists():
            shutil.rmtree(final)
        temp.rename(final)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    if record:
        lock.save(lock_path)
    say(f"{lock.name}: ready in {final}")
    return SetupResult(lock, final, True, time.perf_counter() - started, changes)
