"""What ``toolproof run TARGET`` accepts beyond a suite: a single task file, as
``validate`` does (run as its suite with that task selected)."""

from __future__ import annotations

from pathlib import Path

import click


def task_file_target(target: str) -> tuple[str, str] | None:
    """``(suite folder, task id)`` when ``target`` is a task file inside a suite, None when
    it is not a task file (a suite name or folder, ``suite.yaml``).

    Raises:
        click.BadParameter: a task file outside any suite (no ``suite.yaml`` above it).
    """
    from toolproof.spec._find import TASK_SUFFIXES
    from toolproof.spec._semantic import suite_root_of

    path = Path(target)
    if not path.is_file() or path.suffix not in TASK_SUFFIXES or path.name == "suite.yaml":
        return None
    root = suite_root_of(path)
    if not (root / "suite.yaml").is_file():
        raise click.BadParameter(
            f"{target}: a task file outside any suite (no suite.yaml in a folder above it); "
            "`toolproof validate` checks it alone, but a run needs its suite: move it into a "
            "suite's tasks/ folder",
            param_hint="SUITE",
        )
    return str(root), path.stem  # a task's id is its file name (validate checks it)
