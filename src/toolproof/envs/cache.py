"""Where set-up environments live, what is really installed there, and drift.

Layout of the cache (default ``~/.cache/toolproof/envs``)::

    <root>/<name>-<16 hex of the digest>/
        manifest.json      what set-up found (written last: its presence means complete)
        bin/               links to the programs on PATH (ruff, eslint, ...)
        py/                pip --target (PyPI packages)
        node/              package.json, package-lock.json, node_modules (npm ci)

Inside a sandbox the directory is mounted read-only at :data:`MOUNT`.
"""

from __future__ import annotations

import functools
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EnvDrift, EnvNotSetUp
from .lock import EnvLock, component_changes, compute_digest, file_sha256

__all__ = [
    "MOUNT",
    "STD_PATH",
    "EnvStatus",
    "default_cache_root",
    "inspect_env",
    "live_state",
    "runtime_version",
]

MOUNT = "/opt/toolproof-env"
"""Where an environment appears inside the sandbox (read-only)."""
STD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""The sandbox's PATH without the environment: host runtimes are probed with it."""
MANIFEST = "manifest.json"
_VERSION = re.compile(r"(\d+(?:\.\d+)*)")


def default_cache_root() -> Path:
    """``~/.cache/toolproof/envs`` (the CLI's ``--env-cache`` or TOOLPROOF_ENV_CACHE win)."""
    return Path.home() / ".cache" / "toolproof" / "envs"


@functools.cache
def runtime_version(program: str) -> str | None:
    """The full version a host program reports (``node`` → ``"20.20.2"``), or None if absent."""
    path = shutil.which(program, path=STD_PATH)
    if path is None:
        return None
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = _VERSION.search(done.stdout + done.stderr)
    return found.group(1) if found else None


def _prefix(full: str | None, pinned: str) -> str:
    """``full`` cut to as many parts as ``pinned`` has (``20.20.2`` against ``20`` → ``20``)."""
    if full is None:
        return "(none)"
    parts = full.split(".")[: len(pinned.split("."))]
    return ".".join(parts)


def _pip_versions(site: Path) -> dict[str, str]:
    versions: dict[str, str] = {}
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        text = meta.read_text(encoding="utf-8", errors="replace")
        name = re.search(r"^Name: (.+)$", text, re.MULTILINE)
        version = re.search(r"^Version: (.+)$", text, re.MULTILINE)
        if name and version:
            versions[name.group(1).strip().lower().replace("_", "-")] = version.group(1).strip()
    return versions


def _npm_version(modules: Path, name: str) -> str:
    try:
        data = json.loads((modules / name / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "(none)"
    return str(data.get("version", "(none)"))


def live_state(lock: EnvLock, directory: Path) -> tuple[dict[str, str], dict[str, str], str]:
    """What an environment directory really holds: (components, install files, live digest).

    Runtimes are probed on the host with the sandbox's PATH (the sandbox sees the
    same /usr); packages are read from their installed metadata, not from the lock.
    """
    components = {n: _prefix(runtime_version(n), v) for n, v in lock.runtimes.items()}
    pip = _pip_versions(directory / "py")
    components.update({n: pip.get(n.lower().replace("_", "-"), "(none)") for n in lock.pip})
    modules = directory / "node" / "node_modules"
    components.update({n: _npm_version(modules, n) for n in lock.npm})
    files = {
        n: file_sha256(directory / "node" / n) if (directory / "node" / n).is_file() else "(none)"
        for n in lock.files
    }
    bin_dir = directory / "bin"
    bins = sorted(p.name for p in bin_dir.iterdir()) if bin_dir.is_dir() else []
    return components, files, compute_digest(lock.name, components, files, lock.env, bins)


@dataclass(frozen=True)
class EnvStatus:
    """What the cache holds for one version file.

    Attributes:
        lock: The version file's contents.
        lock_path: Where it is.
        directory: The set-up environment to use (the exact one, else the newest of
            the same name), or None when none was set up.
        live: Component versions really installed there.
        live_digest: The digest of what is installed (None without a directory).
        changes: Components that differ, ``"ruff 0.6.9 → 0.7.0"`` (pinned → live),
            plus a line when the version file's digest does not match its contents.
    """

    lock: EnvLock
    lock_path: Path
    directory: Path | None
    live: dict[str, str] = field(default_factory=dict)
    live_digest: str | None = None
    changes: list[str] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        """Set up and exactly as pinned."""
        return self.directory is not None and not self.changes

    def require(self, setup_hint: str, *, allow_drift: bool = False) -> Path:
        """The directory to use, or the error that says why there is none.

        Args:
            setup_hint: The command that sets it up, e.g. ``toolproof env setup lint``.
            allow_drift: Use a drifted environment (its changes are still reported).

        Raises:
            EnvNotSetUp: nothing of this name is in the cache.
            EnvDrift: the environment differs from the pins and drift is not allowed.
        """
        name = self.lock.name
        if self.directory is None:
            raise EnvNotSetUp(
                f"the tool environment {name!r} ({self.lock_path}) is not set up in the "
                f"cache; run `{setup_hint}` first (it installs the pinned tools once)"
            )
        if self.changes and not allow_drift:
            raise EnvDrift(
                f"the tool environment {name!r} differs from its version file "
                f"{self.lock_path} (pinned → live): {'; '.join(self.changes)}. Run "
                f"`{setup_hint}` to install the pinned versions, or pass --allow-drift "
                "to run on the environment as it is (results may not compare)",
                self.changes,
            )
        return self.directory


def inspect_env(lock_path: Path, cache_root: Path | None = None) -> EnvStatus:
    """Find the set-up environment of a version file and compare it with the pins.

    Raises:
        SpecError: the version file is missing or invalid.
    """
    lock = EnvLock.load(lock_path)
    root = cache_root or default_cache_root()
    directory = root / lock.key
    if not (directory / MANIFEST).is_file():
        others = sorted(
            (p.parent for p in root.glob(f"{lock.name}-*/{MANIFEST}")),
            key=lambda p: (p / MANIFEST).stat().st_mtime,
        )
        if not others:
            return EnvStatus(lock, lock_path, None)
        directory = others[-1]
    live, _, live_digest = live_state(lock, directory)
    changes = component_changes(lock.components, live)
    if lock.expected_digest() != lock.digest:
        changes.append(
            "the version file's digest does not match its contents (edited by hand? "
            "record it again with `toolproof env setup SUITE --record`)"
        )
    elif live_digest != lock.digest and not changes:
        changes.append(f"install files or programs differ (digest {live_digest})")
    return EnvStatus(lock, lock_path, directory, live, live_digest, changes)
