"""The version file of a pinned tool environment (``env.lock.json``) and its digest.

A lock names every component of the environment a task's commands and its
checks run with: host runtimes (``node``, ``python3``, by version prefix), PyPI
packages (installed with ``pip --target``), npm packages (installed by ``npm ci``
from the ``package.json`` and ``package-lock.json`` beside the lock), and the
hashes of those install files. Its ``digest`` is the sha256 of all of that; the
same digest computed from what is actually installed is the *live* digest, and
a run refuses to use an environment whose live digest differs (drift).

The lock also records, per task, the number of lint errors the task starts
with (``baseline``), checked again by every ``toolproof env setup``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from toolproof.spec import Problem, SpecError

__all__ = ["LOCK_NAME", "EnvLock", "component_changes", "compute_digest", "file_sha256"]

LOCK_NAME = "env.lock.json"
"""The file name of a version file."""
INSTALL_FILES = ("package.json", "package-lock.json")
"""Files beside a lock that ``npm ci`` installs from (when the lock has npm packages)."""


def file_sha256(path: Path) -> str:
    """The sha256 of a file's bytes, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def compute_digest(
    name: str,
    components: dict[str, str],
    files: dict[str, str],
    env: dict[str, str],
    bins: list[str],
) -> str:
    """The digest of an environment: its name, component versions, install files, env, programs."""
    body = {"name": name, "components": components, "files": files, "env": env, "bin": bins}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def component_changes(pinned: dict[str, str], live: dict[str, str]) -> list[str]:
    """Each component that differs, as ``"ruff 0.6.9 → 0.7.0"`` (pinned → live), sorted."""
    changes = []
    for key in sorted(pinned.keys() | live.keys()):
        old, new = pinned.get(key, "(none)"), live.get(key, "(none)")
        if old != new:
            changes.append(f"{key} {old} → {new}")
    return changes


class EnvLock(BaseModel):
    """The contents of an ``env.lock.json``: what to install, what it must be, its digest."""

    model_config = ConfigDict(extra="forbid")

    format: Literal[1] = Field(1, description="Version of this file's format.")
    name: str = Field(
        pattern=r"^[a-z0-9][a-z0-9_-]*$", description="Name of the environment, e.g. 'python'."
    )
    runtimes: dict[str, str] = Field(
        default_factory=dict,
        description="Host programs the commands use, with a version prefix: {'node': '20'}.",
    )
    pip: dict[str, str] = Field(
        default_factory=dict,
        description="PyPI packages and exact versions, installed with pip --no-deps --target.",
    )
    npm: dict[str, str] = Field(
        default_factory=dict,
        description="npm packages and exact versions: package.json's devDependencies beside "
        "this file, installed by npm ci from its package-lock.json.",
    )
    files: dict[str, str] = Field(
        default_factory=dict, description="sha256 of each install file beside this file."
    )
    env: dict[str, str] = Field(
        default_factory=dict, description="Environment variables commands get (besides PATH)."
    )
    bin: list[str] = Field(
        min_length=1, description="Programs put on PATH (from the pip or npm packages)."
    )
    digest: str = Field(description="sha256 of name, components, files, env and bin.")
    baseline: dict[str, int] = Field(
        default_factory=dict,
        description="Task id to the number of lint errors the task starts with.",
    )

    @model_validator(mode="after")
    def _distinct(self) -> EnvLock:
        names = [*self.runtimes, *self.pip, *self.npm]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"components named twice (runtimes, pip, npm): {twice}")
        if self.npm and set(self.files) != set(INSTALL_FILES):
            raise ValueError(f"npm packages need files with the hashes of {list(INSTALL_FILES)}")
        return self

    @property
    def components(self) -> dict[str, str]:
        """Every component and its pinned version (runtimes by prefix)."""
        return {**self.runtimes, **self.pip, **self.npm}

    def expected_digest(self) -> str:
        """The digest this file's contents give (equals ``digest`` unless it was hand-edited)."""
        return compute_digest(self.name, self.components, self.files, self.env, self.bin)

    @property
    def key(self) -> str:
        """The cache directory name of this environment: ``NAME-<16 hex of the digest>``."""
        return f"{self.name}-{self.digest.removeprefix('sha256:')[:16]}"

    @classmethod
    def load(cls, path: Path) -> EnvLock:
        """Read and validate a version file.

        Raises:
            SpecError: the file is missing, not JSON, or not a valid lock (naming the field).
        """
        try:
            data: Any = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SpecError([Problem(path, None, "toolenv", "no such version file")]) from None
        except (OSError, ValueError) as exc:
            raise SpecError([Problem(path, None, "toolenv", f"unreadable: {exc}")]) from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            problems = [
                Problem(path, None, ".".join(map(str, e["loc"])) or "lock", e["msg"])
                for e in exc.errors()
            ]
            raise SpecError(problems) from None

    def save(self, path: Path) -> None:
        """Write the version file (sorted keys, two-space indent, trailing newline)."""
        text = json.dumps(self.model_dump(mode="json"), indent=2, sort_keys=True)
        path.write_text(text + "\n", encoding="utf-8")
