"""Which limit a command hit, from stop reasons, cgroup events, exit codes and text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolproof.sandbox import ResourceLimits
from toolproof.sandbox._detect import classify, workspace_bytes

LIMITS = ResourceLimits()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({"returncode": 0, "stopped": None}, None),
        ({"returncode": None, "stopped": "wall_time"}, "wall_time"),
        ({"returncode": None, "stopped": "output"}, "output"),
        ({"returncode": None, "stopped": "wall_time", "pids_event": True}, "pids"),
        ({"returncode": 137, "stopped": None, "oom_event": True}, "memory"),
        ({"returncode": 0, "stopped": None, "pids_event": True}, "pids"),
        ({"returncode": 152, "stopped": None}, "cpu"),
        ({"returncode": 153, "stopped": None}, "file_size"),
        ({"returncode": 0, "stopped": None, "truncated": True}, "output"),
        ({"returncode": 152, "stopped": None, "truncated": True}, "cpu"),
        ({"returncode": 1, "stopped": None, "stderr": b"OSError: [Errno 27] File too large"},
         "file_size"),
        ({"returncode": 1, "stopped": None, "stderr": b"MemoryError", "memory_by_text": True},
         "memory"),
        ({"returncode": 1, "stopped": None, "stderr": b"MemoryError"}, None),
        ({"returncode": 0, "stopped": None, "stderr": b"MemoryError", "memory_by_text": True},
         None),
        ({"returncode": 0, "stopped": None, "stderr": b"sh: Cannot fork", "pids_by_text": True},
         "pids"),
        ({"returncode": 0, "stopped": None, "stderr": b"sh: Cannot fork"}, None),
        ({"returncode": None, "stopped": "wall_time", "stderr": b"Cannot fork",
          "pids_by_text": True}, "pids"),
    ],
)  # fmt: skip
def test_classify(kwargs: dict[str, object], expected: str | None) -> None:
    kwargs.setdefault("stderr", b"")
    assert classify(LIMITS, **kwargs) == expected  # type: ignore[arg-type]


def test_limits_turned_off_are_never_reported() -> None:
    off = ResourceLimits(cpu_s=None, file_size_mb=None, pids=None, memory_mb=None)
    assert classify(off, returncode=152, stopped=None, stderr=b"") is None
    assert classify(off, returncode=153, stopped=None, stderr=b"File too large") is None
    text = b"Cannot fork MemoryError"
    assert classify(off, returncode=1, stopped=None, stderr=text, pids_by_text=True) is None


def test_workspace_bytes_counts_apparent_size_once(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"x" * 1000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"y" * 24)
    os.link(tmp_path / "a", tmp_path / "sub" / "hardlink")
    (tmp_path / "link").symlink_to("/usr/bin")
    with open(tmp_path / "sparse", "wb") as sparse:
        sparse.truncate(5000)
    assert workspace_bytes(tmp_path) == 1000 + 24 + 5000
