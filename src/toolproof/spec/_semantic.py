"""Checks of a validated task that one field alone cannot make: ids, names, paths.

The checks that need the tool registry (tool names, solution arguments against
the tools' schemas) and the scoring registry (custom check functions) live above
this layer, in :mod:`toolproof.engine.preflight`; these need only the task, its
file and its suite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ._answer_keys import answer_key_problem
from ._yamlsrc import Loc, SourceMap, field_text
from .checks import Check, StateCheck
from .errors import Problem
from .lint_checks import LintCheck
from .paths import ro_bind_problem, suite_path_problem, workspace_path_problem
from .sandbox import SandboxSpec
from .suite import SuiteConfig
from .task import Task


def suite_root_of(path: Path) -> Path:
    """The suite directory of a task file: the nearest folder above it with a suite.yaml.

    A task file outside any suite is its own root: it may name only paths beside it.
    """
    for folder in path.resolve().parents:
        if (folder / "suite.yaml").is_file():
            return folder
    return path.resolve().parent


class _Report:
    def __init__(self, path: Path, source: SourceMap) -> None:
        self.path, self.source, self.problems = path, source, list[Problem]()

    def add(self, loc: Loc, message: str) -> None:
        self.problems.append(Problem(self.path, self.source.line_of(loc), field_text(loc), message))


def task_problems(
    task: Task, path: Path, source: SourceMap, root: Path, config: SuiteConfig
) -> list[Problem]:
    """Everything wrong with ``task`` (loaded from ``path`` of the suite at ``root``)."""
    report = _Report(path, source)
    if path.stem != task.id:
        report.add(("id",), f"{task.id!r} must match the file name {path.stem!r}")
    _name_problems(task, report)
    _path_problems(task, path.parent, root, config, report)
    return sorted(report.problems, key=lambda p: p.line or 0)


def _name_problems(task: Task, report: _Report) -> None:
    allowed = {t if isinstance(t, str) else t.name for t in task.tools}
    has_toolkit = any(isinstance(t, str) and t.endswith(".*") for t in task.tools)
    for loc, call in solution_calls(task.template):
        tool = call.get("tool")
        if tool not in allowed and not has_toolkit:
            report.add((*loc, "tool"), f"{tool!r} is not in this task's tools; add it to tools")
    for number, turn in enumerate(task.user_turns):
        for index, name in enumerate(turn.tools):
            if name not in allowed and not has_toolkit:
                report.add(
                    ("user_turns", number, "tools", index),
                    f"{name!r} is not in this task's tools; add it to tools",
                )
    for index, fault in enumerate(task.faults):
        if fault.tool not in allowed and not has_toolkit:
            report.add(("faults", index, "tool"), f"{fault.tool!r} is not in this task's tools")
    names = [c.name for c in task.success if c.name]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        report.add(("success",), f"two checks named {dup!r}")


def solution_calls(template: dict[str, Any]) -> Iterator[tuple[Loc, dict[str, Any]]]:
    """Each call of the reference solution as written, with its location in the file."""
    solution = template.get("solution")
    if not isinstance(solution, dict):
        return
    turns = solution.get("turns")
    places: list[tuple[Loc, Any]] = [(("solution",), solution)]
    for number, turn in enumerate(turns if isinstance(turns, list) else []):
        places.append((("solution", "turns", number), turn))
    for where, part in places:
        calls = part.get("calls") if isinstance(part, dict) else None
        for index, item in enumerate(calls if isinstance(calls, list) else []):
            if isinstance(item, list):
                for inner, call in enumerate(item):
                    if isinstance(call, dict):
                        yield (*where, "calls", index, inner), call
            elif isinstance(item, dict):
                yield (*where, "calls", index), item


def all_checks(task: Task) -> Iterator[tuple[Loc, Check]]:
    """The task's checks (``success``, then the attack's ``detect``) with their locations."""
    for index, check in enumerate(task.success):
        yield ("success", index), check
    if task.attack is not None:
        for index, check in enumerate(task.attack.detect):
            yield ("attack", "detect", index), check


def _path_problems(
    task: Task, base: Path, root: Path, config: SuiteConfig, report: _Report
) -> None:
    for key in task.world.files:
        problem = workspace_path_problem(key)
        if problem is not None:
            report.add(("world", "files", key), problem)
    if task.world.fixtures is not None:
        problem = suite_path_problem(task.world.fixtures, base, root, directory=True)
        if problem is not None:
            report.add(("world", "fixtures"), problem)
    for loc, check in all_checks(task):
        if isinstance(check, StateCheck):
            for key in check.files:
                problem = workspace_path_problem(key, virtual_root=True)
                if problem is not None:
                    report.add((*loc, "files", key), problem)
        if isinstance(check, LintCheck):
            named: list[tuple[Loc, str]] = (
                [(("config",), check.config)] if check.config is not None else []
            )
            named += [(("paths", index), value) for index, value in enumerate(check.paths)]
            for sub, value in named:
                problem = workspace_path_problem(value, virtual_root=True, dot=True)
                if problem is not None:
                    report.add((*loc, *sub), problem)
    _sandbox_problems(task.sandbox, ("sandbox",), base, root, report)
    if config.sandbox is not None and (task.sandbox is None or task.sandbox.toolenv is None):
        toolenv = config.sandbox.toolenv  # the suite's, read relative to each task file
        if toolenv is not None:
            problem = suite_path_problem(toolenv, base, root, directory=False)
            if problem is not None:
                report.add(("sandbox",), f"the suite's sandbox.toolenv: {problem}")


def _sandbox_problems(
    spec: SandboxSpec | None, loc: Loc, base: Path, root: Path, report: _Report
) -> None:
    if spec is None:
        return
    if spec.toolenv is not None:
        problem = suite_path_problem(spec.toolenv, base, root, directory=False)
        if problem is not None:
            report.add((*loc, "toolenv"), problem)
    for host, inside in (spec.ro_binds or {}).items():
        problem = ro_bind_problem(host, inside) or answer_key_problem(host, root)
        if problem is not None:
            report.add((*loc, "ro_binds", host), problem)


def suite_problems(config: SuiteConfig, path: Path, source: SourceMap) -> list[Problem]:
    """Problems of ``suite.yaml`` itself: its ``tasks`` folder and sandbox binds."""
    report = _Report(path, source)
    problem = suite_path_problem(config.tasks, path.parent, path.parent, directory=True, tree=False)
    if problem is not None:
        report.add(("tasks",), problem)
    if config.sandbox is not None:
        for host, inside in (config.sandbox.ro_binds or {}).items():
            problem = ro_bind_problem(host, inside) or answer_key_problem(host, path.parent)
            if problem is not None:
                report.add(("sandbox", "ro_binds", host), problem)
    return report.problems
