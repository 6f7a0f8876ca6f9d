"""Fixtures shared by the sandbox tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import SANDBOX_UID, Sandbox, get_backend


def _started_here(pid: int) -> bool:
    """Whether this test process started ``pid``: a descendant of it, in a cgroup it made
    (``toolproof-PID-...``), or (a root harness) running as the sandbox user, which no
    program but a sandbox runs as. Escaped daemons are found by the last two."""
    here = os.getpid()
    try:
        if f"/toolproof-{here}-" in Path(f"/proc/{pid}/cgroup").read_text():
            return True
        if os.geteuid() == 0 and os.stat(f"/proc/{pid}").st_uid == SANDBOX_UID:
            return True
        current = pid
        for _ in range(64):  # up the parent chain
            stat = Path(f"/proc/{current}/stat").read_text()
            current = int(stat.rsplit(")", 1)[1].split()[1])
            if current == here:
                return True
            if current <= 1:
                return False
    except (OSError, IndexError, ValueError):
        return False
    return False


def processes_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``token`` and that
    this test process started (never another program on a busy machine)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token.encode() in cmdline and state != "Z" and _started_here(int(entry)):
            found.append(int(entry))
    return found


@pytest.fixture
def leftovers() -> Callable[[str], list[int]]:
    """``processes_with``: pids of live processes this test started whose command line
    has a token."""
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
