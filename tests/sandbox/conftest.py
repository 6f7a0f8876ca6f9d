"""Fixtures shared by the sandbox tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import Sandbox, get_backend


def processes_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``token``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry))
    return found


@pytest.fixture
def leftovers() -> Callable[[str], list[int]]:
    """``processes_with``: pids of live processes whose command line has a token."""
    return processes_with


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace directory."""
    path = tmp_path / "workspace"
    path.mkdir()
    return path


def _box(name: str, workspace: Path) -> Iterator[Sandbox]:
    cls = get_backend(name)
    reason = cls.unavailable_reason()
    if reason is not None:
        pytest.skip(f"{name} backend unusable here: {reason}")
    with cls(workspace) as box:
        yield box


@pytest.fixture
def bwrap_box(workspace: Path) -> Iterator[Sandbox]:
    """A bwrap sandbox on ``workspace`` (skips when bubblewrap cannot run here)."""
    yield from _box("bwrap", workspace)


@pytest.fixture
def process_box(workspace: Path) -> Iterator[Sandbox]:
    """A process sandbox on ``workspace``."""
    yield from _box("process", workspace)
