"""Version files and fake set-up environments for the envs tests (no registry needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolproof.envs import EnvLock
from toolproof.envs.cache import MANIFEST


def write_lock(directory: Path, *, name: str = "tools", **fields: Any) -> Path:
    """An ``env.lock.json`` in ``directory`` with a digest that matches its contents."""
    directory.mkdir(parents=True, exist_ok=True)
    body: dict[str, Any] = {"name": name, "pip": {"ruff": "0.6.9"}, "bin": ["ruff"], "digest": ""}
    body.update(fields)
    lock = EnvLock.model_validate(body)
    lock = lock.model_copy(update={"digest": lock.expected_digest()})
    path = directory / "env.lock.json"
    lock.save(path)
    return path


def fake_env(root: Path, lock_path: Path, *, versions: dict[str, str] | None = None) -> Path:
    """A set-up environment for the lock in cache ``root``, its packages at ``versions``.

    ``bin/ruff`` is a shell script that prints a ruff-like report.
    """
    lock = EnvLock.load(lock_path)
    directory = root / lock.key
    (directory / "bin").mkdir(parents=True)
    for package, version in {**lock.pip, **(versions or {})}.items():
        info = directory / "py" / f"{package}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n"
        )
    for program in lock.bin:
        script = directory / "bin" / program
        script.write_text("#!/bin/sh\necho 'Found 3 errors.'\nexit 1\n")
        script.chmod(0o755)
    (directory / MANIFEST).write_text(json.dumps({"name": lock.name, "digest": lock.digest}))
    return directory
