"""The checks of a suite that need the tools and the check functions: one loader for all.

``toolproof validate`` and ``toolproof run`` both load suites through
:func:`load_checked_suite` (and ``validate`` single task files through
:func:`check_target`), so what one accepts the other accepts. Beyond what the spec
layer checks (fields, templates, numbers, paths), this checks that:

* every tool a task names exists (a registered tool, a toolkit, or inline), and
  every inline tool's ``parameters`` is a valid JSON Schema;
* every reference solution call (and every attack call, which the gullible test
  agent makes) names an offered tool, and its arguments, as rendered for each
  epoch the loader checked, pass that tool's schema, the same validation the tool
  gateway applies during a run;
* every fault and every later user turn's ``tools`` names an offered tool, every inline
  tool's ``handler`` is registered, and a simulated user names a registered simulator;
* every ``custom`` check's function is registered or imports (``module:attr``,
  found in the suite directory or on the path, as scoring finds it);
* the task's checks and level rules cannot credit doing nothing
  (``scoring.check_levels``).

It lives in the engine because it needs both ``tools`` and ``scoring``.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, SchemaError

from toolproof._version import __version__
from toolproof.scoring import check_levels, kind_names
from toolproof.scoring.checks import custom as custom_checks
from toolproof.spec import (
    CustomCheck,
    InlineTool,
    Problem,
    SpecError,
    Suite,
    Task,
    all_checks,
    arith,
    field_text,
    load_suite,
    render_value,
    resolve_suite_path,
    solution_calls,
    suite_root_of,
    validate_target,
)
from toolproof.spec._suggest import did_you_mean
from toolproof.spec.index import (
    checked_fingerprint,
    has_checked,
    load_recorded_tasks,
    record_checked,
    recorded_tasks,
)
from toolproof.spec.providers import is_provided
from toolproof.spec.sandbox import unisolated_problem
from toolproof.tools import (
    ToolImpl,
    load_builtin,
    registry,
    resolve_tools,
    tool_handlers,
    toolkits,
)
from toolproof.tools.base import BUILTIN_MODULES
from toolproof.tools.resolve import toolkit_tools
from toolproof.tools.toolkits import load_tool
from toolproof.users import user_simulators

__all__ = [
    "check_suite_tasks",
    "check_target",
    "load_checked_suite",
    "registries_digest",
    "task_problems",
]


def load_checked_suite(
    name_or_path: str | Path,
    *,
    allow_drift: bool = False,
    tasks: Sequence[str] = (),
    index_file: Path | None = None,
    commands_on_host: bool = False,
) -> Suite:
    """Load a suite (name, folder, or a provided one such as ``bfcl:simple_python``) and run
    every check; what ``run`` uses.

    With an ``index_file`` (:mod:`toolproof.spec.index`), a suite that passed every check
    is recorded there under a fingerprint of its files, the package and the live
    registries; while that fingerprint holds, a run of some ``tasks`` loads and checks
    only the files of the tasks they match (the returned suite holds only those), since
    every other file is the one that passed. Without such a record, a run of some
    ``tasks`` loads and checks the files that may hold them (``load_suite(tasks=...)``),
    and records nothing; a run of every task loads and checks it all.

    Args:
        name_or_path: The suite.
        allow_drift: Accept a provided suite whose package version differs from the pinned one.
        tasks: Globs of the task ids the caller will run (empty: every task).
        index_file: Where checked suites are recorded (None: load everything, record nothing).
        commands_on_host: The run was given ``--run-commands-on-host``: a task's or suite's
            ``sandbox.backend: process`` is allowed (else it is a problem).

    Raises:
        SpecError: every problem of every file, each with file, line and field.
    """
    provided = is_provided(name_or_path)
    fingerprint: tuple[Path, str, bool] | None = None
    root = None if index_file is None or provided else resolve_suite_path(name_or_path)
    # The fingerprint finds a record (some tasks) or makes one (every task): with some
    # tasks and no record of the suite at all, it has nothing to do.
    if root is not None and (not tasks or has_checked(index_file, root)):
        fingerprint = (root, *checked_fingerprint(root, registries_digest()))
        recorded = recorded_tasks(index_file, root, fingerprint[1]) if tasks else None
        chosen = [t for t in recorded or [] if any(fnmatch.fnmatch(t[0], p) for p in tasks)]
        selected = load_recorded_tasks(root, chosen) if chosen else None
        if selected is not None:
            problems = check_suite_tasks(selected, commands_on_host=commands_on_host)
            if problems:
                raise SpecError(problems)
            return selected
    # Some tasks: only their files are loaded and checked (another's broken file does not
    # stop the run; `validate` loads every one), and the suite is not recorded as checked.
    suite = load_suite(name_or_path, allow_drift=allow_drift, tasks=tasks)
    # A provided suite's reference calls are the upstream benchmark's own ground truth, which
    # its own checker scores (some fail their own schemas, as upstream ships them: see
    # docs/bfcl.md); they are not toolproof's to refuse.
    problems = check_suite_tasks(suite, solutions=not provided, commands_on_host=commands_on_host)
    if problems:
        raise SpecError(problems)
    if fingerprint is not None and fingerprint[2] and not tasks and _self_contained(suite):
        root = fingerprint[0]
        entries = [(t.id, suite.task_file(t.id).relative_to(root).as_posix()) for t in suite.tasks]
        # Recorded under the fingerprint taken *before* loading: a file changed meanwhile
        # makes the entry miss next time instead of hiding the change.
        record_checked(index_file, root, fingerprint[1], entries)
    return suite


def registries_digest() -> str:
    """A digest of everything the checks look up by name: every registered tool with its
    schema and toolkit, the toolkits, tool handlers, user simulators, check kinds and
    registered check functions (plug-ins' included).

    A built-in toolkit's tool counts by its name, toolkit and function, not its schema: the
    schema is made from the package's own source (every file of which the checked
    fingerprint stamps) by this Python and pydantic (whose versions count here), so
    building the schemas of every built-in tool, most of which a run never offers,
    would add nothing the fingerprint lacks. Every other tool (a plug-in's) counts by
    its schema.
    """
    import platform

    import pydantic

    load_builtin()
    tools = sorted(
        (
            name,
            tool.toolkit,
            f"built-in {tool.fn.__module__}:{tool.fn.__qualname__}"
            if tool.fn.__module__.startswith(BUILTIN_MODULES)
            else tool.schema.model_dump(mode="json"),
        )
        for name, tool in registry().items()
    )
    data = {
        "version": __version__,
        "python": platform.python_version(),
        "pydantic": pydantic.VERSION,
        "tools": tools,
        "toolkits": toolkits(),
        "handlers": sorted(tool_handlers()),
        "simulators": user_simulators(),
        "kinds": kind_names(),
        "functions": sorted(custom_checks.registered_functions()),
    }
    text = json.dumps(data, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _self_contained(suite: Suite) -> bool:
    """Whether every ``custom`` check function of the suite is registered, in the suite's
    folder or in this package: what the checked fingerprint covers."""
    for task in suite.tasks:
        for _, check in all_checks(task):
            if not isinstance(check, CustomCheck) or "{{" in check.function:
                continue
            if check.function in custom_checks.registered_functions():
                continue
            module = check.function.partition(":")[0]
            if module.split(".")[0] == "toolproof" or custom_checks.in_suite(suite.root, module):
                continue
            return False
    return True


def check_suite_tasks(
    suite: Suite, *, solutions: bool = True, commands_on_host: bool = False
) -> list[Problem]:
    """The tool and check-function problems of every task of a loaded suite.

    Args:
        suite: The loaded suite.
        solutions: Also check each reference solution call against its tool's schema.
        commands_on_host: Allow ``sandbox.backend: process`` (``--run-commands-on-host``).
    """
    problems: list[Problem] = []
    unisolated = unisolated_problem(suite.config.sandbox, commands_on_host=commands_on_host)
    if unisolated is not None:
        problems.append(Problem(suite.root / "suite.yaml", None, "sandbox.backend", unisolated))
    return problems + [
        problem
        for task in suite.tasks
        for problem in task_problems(
            task,
            suite.task_file(task.id),
            suite.root,
            solutions=solutions,
            commands_on_host=commands_on_host,
        )
    ]


def check_target(
    target: str | Path, *, commands_on_host: bool = False
) -> tuple[int, list[Problem]]:
    """Validate what ``toolproof validate TARGET`` names: a suite name, folder or task file.

    Args:
        target: The suite name, folder or task file.
        commands_on_host: Allow ``sandbox.backend: process`` (``--run-commands-on-host``).

    Returns:
        How many tasks were checked, and every problem found.
    """
    suite, tasks, problems = validate_target(target)
    if problems:
        return 0, problems
    if suite is not None:
        return len(tasks), check_suite_tasks(suite, commands_on_host=commands_on_host)
    path = Path(target)
    root = suite_root_of(path)
    return len(tasks), [
        p for t in tasks for p in task_problems(t, path, root, commands_on_host=commands_on_host)
    ]


class _Report:
    def __init__(self, task: Task, file: Path) -> None:
        self.task, self.file, self.problems = task, file, list[Problem]()

    def add(self, loc: tuple[str | int, ...], message: str) -> None:
        source = self.task.source
        line = source.line_of(loc) if source is not None else None
        self.problems.append(Problem(self.file, line, field_text(loc), message))


def task_problems(
    task: Task, file: Path, root: Path, *, solutions: bool = True, commands_on_host: bool = False
) -> list[Problem]:
    """Problems of one loaded task that need the tool registry or the check functions,
    and a ``sandbox.backend`` weaker than the run allows (invariant 9)."""
    report = _Report(task, file)
    unisolated = unisolated_problem(task.sandbox, commands_on_host=commands_on_host)
    if unisolated is not None:
        report.add(("sandbox", "backend"), unisolated)
    offered = _offered_tools(task, report)
    if offered is not None:
        if solutions:
            _solution_problems(task, offered, report)
        for number, turn in enumerate(task.user_turns):
            for index, name in enumerate(turn.tools):
                if name not in offered:
                    report.add(
                        ("user_turns", number, "tools", index),
                        f"{name!r} is not one of this task's tools ({_names(offered)})",
                    )
        for index, fault in enumerate(task.faults):
            if fault.tool not in offered:
                report.add(
                    ("faults", index, "tool"),
                    f"{fault.tool!r} is not one of this task's tools ({_names(offered)})",
                )
    if task.user is not None and task.user.simulator not in user_simulators():
        report.add(
            ("user", "simulator"),
            f"no user simulator {task.user.simulator!r}; registered: "
            f"{', '.join(user_simulators()) or 'none'}",
        )
    for loc, check in all_checks(task):
        if isinstance(check, CustomCheck) and "{{" not in check.function:
            problem = _custom_problem(check.function, root)
            if problem is not None:
                report.add((*loc, "function"), problem)
    for message in check_levels(task):  # levels that could credit doing nothing
        field, _, text = message.partition(": ")
        report.add((field,) if text else (), text or message)
    return sorted(report.problems, key=lambda p: p.line or 0)


def _names(tools: dict[str, ToolImpl]) -> str:
    return ", ".join(sorted(tools)) or "none"


def _parameters_problem(schema: dict[str, Any]) -> str | None:
    """Why a tool's parameter schema is not valid JSON Schema, or None.

    Cached by its JSON text: a provided suite repeats the same tools over hundreds of
    tasks. A schema that is no JSON text (a YAML date in it) is checked as it is.
    """
    try:
        text = json.dumps(schema, sort_keys=True)
    except (TypeError, ValueError):
        return _check_schema(schema)
    return _cached_problem(text)


def _check_schema(schema: Any) -> str | None:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return str(exc.message)
    return None


@lru_cache(maxsize=4096)
def _cached_problem(text: str) -> str | None:
    return _check_schema(json.loads(text))


def _known_tool(name: str) -> bool:
    """Whether a tool ``name`` is registered, importing its built-in toolkit if it has one."""
    load_tool(name)
    return name in registry()


def _offered_tools(task: Task, report: _Report) -> dict[str, ToolImpl] | None:
    """The task's tools by name; None (after reporting why) when one does not exist."""
    known = registry()
    missing = False
    for index, entry in enumerate(task.tools):
        if isinstance(entry, InlineTool):
            invalid = _parameters_problem(entry.parameters)
            if invalid is not None:
                report.add(
                    ("tools", index, "parameters"),
                    f"not a valid JSON Schema: {invalid}; fix the schema",
                )
                missing = True
            if entry.handler is not None and entry.handler not in tool_handlers():
                report.add(
                    ("tools", index, "handler"),
                    f"no tool handler {entry.handler!r}; registered: "
                    f"{', '.join(sorted(tool_handlers())) or 'none'}",
                )
                missing = True
        elif entry.endswith(".*") and not toolkit_tools(entry[:-2]):
            kits = toolkits()
            report.add(("tools", index), f"no toolkit {entry[:-2]!r}; toolkits: {', '.join(kits)}")
            missing = True
        elif not entry.endswith(".*") and not _known_tool(entry):
            load_builtin()  # every name, for the suggestion
            report.add(
                ("tools", index),
                f"no tool {entry!r}; see `toolproof list` for the known tools, or define it "
                "inline (name, description, parameters)" + did_you_mean(entry, known),
            )
            missing = True
    if missing:
        return None
    try:
        return {impl.schema.name: impl for impl in resolve_tools(task)}
    except SpecError as exc:  # the checks above should have found it
        for problem in exc.problems:
            report.add(("tools",), problem.message)
        return None


def _planned_calls(template: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """The reference solution's calls and the attack's (what the gullible agent calls)."""
    yield from solution_calls(template)
    attack = template.get("attack")
    calls = attack.get("calls") if isinstance(attack, dict) else None
    for index, call in enumerate(calls if isinstance(calls, list) else []):
        if isinstance(call, dict):
            yield ("attack", "calls", index), call


def _solution_problems(task: Task, offered: dict[str, ToolImpl], report: _Report) -> None:
    epochs = task.checked_params or [{}]
    for loc, call in _planned_calls(task.template):
        name = call.get("tool")
        tool = offered.get(name) if isinstance(name, str) else None
        if tool is None:
            report.add(
                (*loc, "tool"), f"{name!r} is not one of this task's tools ({_names(offered)})"
            )
            continue
        for epoch, params in enumerate(epochs):
            problem = _arguments_problem(tool, call, params)
            if problem is not None:
                suffix = f" (as rendered for epoch {epoch})" if epoch else ""
                report.add((*loc, "args"), f"{problem}{suffix}")
                break


def _arguments_problem(tool: ToolImpl, call: dict[str, Any], params: dict[str, Any]) -> str | None:
    """Why the gateway would refuse this solution call's arguments, or None."""
    try:
        when = call.get("when")
        if when is not None and not arith.evaluate(str(when), params):
            return None
        arguments = render_value(call.get("args") or {}, params)
    except arith.ExpressionError:
        return None  # the loader reports templates that cannot be computed
    if not isinstance(arguments, dict):
        return f"arguments must be a mapping, got {type(arguments).__name__}"
    errors = sorted(tool.validator().iter_errors(arguments), key=lambda e: list(e.path))
    if not errors:
        return None
    details = "; ".join(
        f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors[:3]
    )
    return (
        f"{tool.schema.name} would refuse these arguments: {details}; fix them to match its schema"
    )


def _custom_problem(ref: str, root: Path) -> str | None:
    """Why a ``custom`` check's function cannot be found, or None.

    The function is looked up exactly as at scoring time (the suite directory first,
    see ``scoring.checks.custom``), so what validate accepts the run finds.
    """
    from toolproof.agents.builtin._user_import import pass_on_ctrl_c, sigint_witness

    module = ref.partition(":")[0]
    with sigint_witness() as received:
        try:
            custom_checks.load_function(ref, root)
        except custom_checks.CustomCheckError as exc:
            return str(exc)
        except BaseException as exc:  # a module that raises (or exits) as it imports
            pass_on_ctrl_c(exc, received)  # only a real Ctrl-C ends the run as one
            return f"importing {module!r} raised {type(exc).__name__}: {exc}"
    return None
