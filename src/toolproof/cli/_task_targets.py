"""What ``validate`` and ``check-task`` both read of a target (a suite, or one task file):
its suite and tasks, where a finding's fix goes, and the record collections no tool reads.
Below both commands' modules, so that neither imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from toolproof.spec import Suite, Task

if TYPE_CHECKING:
    from toolproof.engine.quality import Finding
    from toolproof.spec import Problem


def suite_and_tasks(target: str) -> tuple[Suite, list[Task]]:
    """The suite to run in and the tasks ``target`` names (a suite, or one task file: in
    its suite, or a draft suite of its own); the target already passed the checks."""
    from toolproof.spec import SuiteConfig, load_suite, suite_root_of

    path = Path(target)
    if not (path.is_file() and path.name != "suite.yaml"):
        suite = load_suite(target)
        return suite, list(suite.tasks)
    root = suite_root_of(path)
    if (root / "suite.yaml").is_file():
        suite = load_suite(root)
        chosen = [t for t in suite.tasks if suite.task_file(t.id).resolve() == path.resolve()]
        if chosen:
            return suite, chosen
    # a task file outside a suite (a draft): a suite of its own, with the default settings
    from toolproof.spec import load_task_file

    task = load_task_file(path)
    config = SuiteConfig(name="draft", version="0", canary="toolproof draft: not published")
    suite = Suite(config=config, tasks=[task], root=path.resolve().parent, digest="")
    suite._task_files[task.id] = path.resolve()
    return suite, [task]


def location(suite: Suite, task: Task, finding: Finding) -> str:
    """``FILE:LINE`` of where a finding's fix goes (the file alone when unknown)."""
    file = suite.task_file(task.id)
    try:
        shown = file.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        shown = file
    line = task.source.line_of(finding.loc) if task.source is not None and finding.loc else None
    return f"{shown}:{line}" if line else str(shown)


def collection_problems(target: str) -> list[Problem]:
    """Record collections of ``target``'s tasks that no tool of the task reads
    (:mod:`._records`)."""
    from ._records import record_problems

    suite, tasks = suite_and_tasks(target)
    return [p for task in tasks for p in record_problems(suite, task)]
