"""The harness's own linter run on a workspace, in a fresh sandbox with the pinned tools.

Used by the ``lint`` check on an episode's final state and by ``toolproof env
setup`` on each task's initial state (to check the recorded starting counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolproof.sandbox import ExecResult, ResourceLimits, get_backend
from toolproof.spec import SandboxSpec

from .linters import DEFAULT_CONFIG, Linter, LintReport, harness_argv, parse_report

__all__ = ["HarnessRun", "run_harness"]

_OUTPUT_BYTES = 20_000_000  # ESLint's JSON report repeats the source of every file with problems


@dataclass
class HarnessRun:
    """What the harness found.

    Attributes:
        report: The linter's findings (``errors`` None when it failed to run).
        verify: Failed verification commands: command, exit code, output tail.
    """

    report: LintReport
    verify: list[dict[str, Any]] = field(default_factory=list)


def _exec(
    root: Path, settings: SandboxSpec, backend: str, command: list[str] | str, wall_s: float
) -> ExecResult:
    cls = get_backend(backend)
    image = settings.image if cls.uses_image else None
    limits = ResourceLimits(
        wall_s=wall_s,
        cpu_s=wall_s,
        memory_mb=settings.limit("memory_mb"),
        pids=settings.limit("pids"),
        file_size_mb=settings.limit("file_size_mb"),
        workspace_mb=None,
        output_bytes=_OUTPUT_BYTES,
    )
    with cls(root, image=image, ro_binds=settings.ro_binds) as box:
        return box.exec(command, limits=limits, env=settings.env)


def run_harness(
    root: Path,
    settings: SandboxSpec,
    *,
    backend: str,
    linter: Linter,
    config: str | None = None,
    paths: list[str] | None = None,
    verify: list[str] | None = None,
    timeout_s: float = 120.0,
) -> HarnessRun:
    """Lint ``root`` (seen as /workspace) and run the ``verify`` commands, each in a sandbox.

    Args:
        root: The workspace directory.
        settings: Sandbox settings with the environment mounted (see ``sandbox_settings``).
        backend: The sandbox backend to use.
        linter: ruff or eslint.
        config: The linter configuration file (default: the linter's usual one).
        paths: What to lint (default ``.``).
        verify: Commands that must succeed (the project's tests).
        timeout_s: Wall time of each command.

    Raises:
        SandboxError: the sandbox cannot run here.
    """
    argv = harness_argv(linter, config or DEFAULT_CONFIG[linter], paths or ["."])
    run = _exec(root, settings, backend, argv, timeout_s)
    found = HarnessRun(parse_report(linter, run.exit_code, run.stdout, run.stderr))
    for command in verify or []:
        done = _exec(root, settings, backend, command, timeout_s)
        if not done.ok:
            tail = (done.stdout + done.stderr).strip()[-600:]
            found.verify.append({"command": command, "exit_code": done.exit_code, "output": tail})
    return found
