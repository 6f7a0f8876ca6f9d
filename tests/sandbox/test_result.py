"""ExecResult.ok."""

from __future__ import annotations

from toolproof.sandbox import ExecResult


def test_ok_needs_exit_zero_and_no_limit() -> None:
    assert ExecResult(0, "", "", 0.1, None).ok
    assert not ExecResult(1, "", "", 0.1, None).ok
    assert not ExecResult(0, "", "", 0.1, "workspace_size").ok
    assert not ExecResult(None, "", "", 0.1, "wall_time").ok
