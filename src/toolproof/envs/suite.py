"""The pinned environments of a suite, and the check a run makes before it starts."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from toolproof.spec import Suite, builtin_suites_dir, effective_sandbox

from .cache import EnvStatus, inspect_env
from .errors import EnvDrift, EnvError

__all__ = ["check_suite", "setup_hint", "suite_locks"]


def suite_locks(suite: Suite, task_ids: Iterable[str] | None = None) -> dict[Path, list[str]]:
    """Each version file the suite's tasks name (``sandbox.toolenv``), with those tasks' ids.

    A ``toolenv`` is relative to the task file's directory, wherever it was written.
    """
    wanted = set(task_ids) if task_ids is not None else None
    locks: dict[Path, list[str]] = {}
    for task in suite.tasks:
        if wanted is not None and task.id not in wanted:
            continue
        toolenv = effective_sandbox(None, suite.config.sandbox, task.sandbox).toolenv
        if toolenv is not None:
            path = (suite.task_file(task.id).parent / toolenv).resolve()
            locks.setdefault(path, []).append(task.id)
    return locks


def setup_hint(suite: Suite) -> str:
    """The command that sets a suite's environments up: by name when it is built in."""
    builtin = suite.root.resolve().parent == builtin_suites_dir().resolve()
    return f"toolproof env setup {suite.name if builtin else suite.root}"


def check_suite(
    suite: Suite,
    task_ids: Iterable[str] | None = None,
    *,
    cache_root: Path | None = None,
    allow_drift: bool = False,
    warn: Callable[[str], None] | None = None,
) -> list[EnvStatus]:
    """Refuse to start a run whose tasks' environments are missing or drifted.

    Args:
        suite: The suite to run.
        task_ids: The tasks the run covers (default: all).
        cache_root: The environment cache.
        allow_drift: Go on with drifted environments (``warn`` is told which).
        warn: Where to say that a drifted environment is used anyway.

    Raises:
        EnvError: one environment is not set up, or drifted without ``allow_drift``
            (all problems in one message).
    """
    hint = setup_hint(suite)
    statuses: list[EnvStatus] = []
    problems: list[str] = []
    for lock_path, _ in sorted(suite_locks(suite, task_ids).items()):
        status = inspect_env(lock_path, cache_root)
        statuses.append(status)
        try:
            status.require(hint, allow_drift=allow_drift)
        except EnvError as exc:
            problems.append(str(exc))
            continue
        if status.changes and warn is not None:
            warn(
                f"--allow-drift: running on the tool environment {status.lock.name!r} although "
                f"it differs from {lock_path} (pinned → live): {'; '.join(status.changes)}"
            )
    if problems:
        changes = [c for s in statuses for c in s.changes]
        raise EnvDrift("\n".join(problems), changes) if changes else EnvError("\n".join(problems))
    return statuses
