"""The outcome of one command run in a sandbox."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ExecResult"]


@dataclass
class ExecResult:
    """What one command did.

    Attributes:
        exit_code: The exit status; ``128 + N`` when killed by signal ``N`` (as a shell
            reports it); ``None`` when the sandbox stopped the command itself (wall
            time, output, pids or memory limit).
        stdout: Captured standard output, decoded as UTF-8 with replacement,
            at most ``ResourceLimits.output_bytes`` together with stderr.
        stderr: Captured standard error, likewise.
        duration_s: Wall-clock seconds from start to the end of clean-up.
        limit_hit: ``None`` or the name of the limit the command ran into:
            ``"wall_time"``, ``"cpu"``, ``"memory"``, ``"pids"``, ``"file_size"``,
            ``"workspace_size"`` or ``"output"``.
    """

    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    limit_hit: str | None

    @property
    def ok(self) -> bool:
        """True when the command exited 0 and hit no limit."""
        return self.exit_code == 0 and self.limit_hit is None
