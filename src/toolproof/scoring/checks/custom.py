"""``custom``: a user's Python function ``module:attr``, or a registered check function.

The function receives the :class:`ScoringContext` and the check's ``args`` and
returns a bool, a float in [0, 1], a ``(passed, detail)`` pair or a CheckResult.

Where ``module`` is looked up (documented in ``docs/failure-modes.md``): first
in the task's suite directory, as ``<suite>/checks/<module>.py`` and then
``<suite>/<module>.py`` (dots in ``module`` are sub-directories), imported
under a name unique to the suite so two suites' ``checks.py`` never clash; then
on the Python path (``toolproof.tools.toolkits.mail:sent_email``). No
PYTHONPATH is needed for a suite's own checks.

A function that cannot be found or imported, raises, or returns something that
is not a score is a **task error**: a bug of the task, not of the agent. The
result is marked ``task_error`` and the episode is kept out of the agent's score.

A check that an agent which did nothing would also pass (evaluated once more on
the initial state with an empty trajectory) is a guard: it gives no credit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from toolproof.spec import CustomCheck, Suite, Task

from ..base import CheckResult, ScoringContext, check, result

CustomFunction = Callable[..., Any]
_FUNCTIONS: dict[str, CustomFunction] = {}
BUILTIN_FUNCTIONS: dict[str, str] = {"ask": "ask", "attack": "attack"}
"""toolproof's own registered check functions and the module of this package that
registers each, imported on first use (a test holds this to what they register)."""

CHECKS_DIR = "checks"
"""The folder of a suite where its custom check modules live (the suite root works too)."""


class CustomCheckError(Exception):
    """A custom check function cannot be loaded; the message says where it was looked for."""


def check_function(name: str) -> Callable[[CustomFunction], CustomFunction]:
    """Register a function usable as ``{kind: custom, function: NAME}``.

    Raises:
        ValueError: the name is taken.
    """

    def register(fn: CustomFunction) -> CustomFunction:
        home = BUILTIN_FUNCTIONS.get(name)
        if name in _FUNCTIONS or (home is not None and fn.__module__ != _module_of(home)):
            raise ValueError(f"check function {name!r} is already registered")
        _FUNCTIONS[name] = fn
        return fn

    return register


def _module_of(home: str) -> str:
    return f"{__name__.rpartition('.')[0]}.{home}"


def _registered(ref: str) -> CustomFunction | None:
    """The function registered under ``ref``, importing a built-in one's module first."""
    fn = _FUNCTIONS.get(ref)
    home = BUILTIN_FUNCTIONS.get(ref)
    if fn is None and home is not None:
        importlib.import_module(_module_of(home))
        fn = _FUNCTIONS.get(ref)
    return fn


def suite_root(task_dir: Path | None) -> Path | None:
    """The nearest directory at or above ``task_dir`` holding a ``suite.yaml``."""
    if task_dir is None:
        return None
    for folder in (task_dir, *task_dir.parents):
        if (folder / "suite.yaml").is_file():
            return folder
    return None


ON_LOOP = frozenset(
    {
        "toolproof.tools.toolkits.mail:sent_email",
        "toolproof.tools.toolkits.calendar:has_event",
        "toolproof.tools.toolkits.rest:comments_added",
        "attack",  # when its own detect checks may run there too (see needs_thread)
    }
)
"""toolproof's own check functions that only read the snapshots and the trajectory (no I/O, no
lock, nothing an agent can make wait): an episode scores them on the event loop, as it does
the built-in checks. Every other custom function (a suite's own code, a user's module, a
plug-in's registered name, ``live:answer_from_response``, which parses every response body
the agent got, of any size) runs on a world thread, so that one that blocks holds up its own
episode only."""

_on_loop: dict[tuple[str, Path | None], bool] = {}


def runs_on_loop(ref: str, task_dir: Path | None) -> bool:
    """Whether a ``custom`` check naming ``ref`` may run on the event loop: one of
    :data:`ON_LOOP` that resolves to toolproof's own function, looked up as
    :func:`load_function` does (a registered name first, then the task's suite, whose module
    of the same name would shadow toolproof's)."""
    key = (ref, task_dir)
    known = _on_loop.get(key)
    if known is None:
        registered = _registered(ref) if ref in ON_LOOP else None
        if ref not in ON_LOOP:
            known = False
        elif registered is not None:
            known = registered.__module__.startswith("toolproof.")
        elif ":" in ref:
            root = suite_root(task_dir)
            known = root is None or not in_suite(root, ref.partition(":")[0])
        else:
            known = False
        _on_loop[key] = known
    return known


def needs_thread(task: Task, task_dir: Path | None) -> bool:
    """Whether scoring ``task`` must run off the event loop: a judge (a synchronous model
    call) or a custom function not known to run on the loop, among its success checks or,
    for its attack check, the attack's detect checks."""

    def off(spec: Any, nested: bool = False) -> bool:
        if spec.kind == "judge":
            return True
        if spec.kind != "custom":
            return False
        if not runs_on_loop(spec.function, task_dir):
            return True
        if spec.function != "attack" or task.attack is None:
            return False
        if nested:  # an attack check among the detect checks runs them again: a thread
            return True
        return any(off(d, nested=True) for d in task.attack.detect)

    return any(off(spec) for spec in task.success)


def registered_functions() -> list[str]:
    """The names of the registered check functions (toolproof's own included, whether
    or not their modules are imported yet)."""
    return sorted({*_FUNCTIONS, *BUILTIN_FUNCTIONS})


def in_suite(root: Path, module_name: str) -> bool:
    """Whether ``module_name`` is found in the suite directory (as scoring looks first)."""
    return _suite_module_path(root, module_name) is not None


def _suite_module_path(root: Path, module_name: str) -> Path | None:
    parts = module_name.split(".")
    for base in (root / CHECKS_DIR, root):
        for path in (
            base.joinpath(*parts).with_suffix(".py"),
            base.joinpath(*parts, "__init__.py"),
        ):
            if path.is_file():
                return path
    return None


def _suite_module(root: Path, module_name: str) -> ModuleType | None:
    path = _suite_module_path(root, module_name)
    if path is None:
        return None
    tag = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    unique = f"toolproof_suite_checks_{tag}.{module_name}"
    if unique in sys.modules:
        return sys.modules[unique]
    spec = importlib.util.spec_from_file_location(unique, path)
    if spec is None or spec.loader is None:
        raise CustomCheckError(f"{path} cannot be imported as a module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[unique] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[unique]
        raise
    return module


def load_function(ref: str, root: Path | None = None) -> CustomFunction:
    """The function a ``custom`` check names.

    Args:
        ref: A registered name or ``module:attr`` (``attr`` may be dotted).
        root: The suite directory searched first (see the module docstring).

    Raises:
        CustomCheckError: the name is unknown, the module cannot be imported or
            the attribute is missing or not callable; the message names the fix.
    """
    registered = _registered(ref)
    if registered is not None:
        return registered
    module_name, _, attr = ref.partition(":")
    if not attr or not module_name:
        known = ", ".join(registered_functions()) or "none"
        raise CustomCheckError(f"no check function {ref!r}; use 'module:attr' or one of: {known}")
    try:
        module = _suite_module(root, module_name) if root is not None else None
        if module is None:
            module = importlib.import_module(module_name)
    except CustomCheckError:
        raise
    except Exception as exc:
        where = f"{root / CHECKS_DIR}/, {root}/ or the Python path" if root else "the Python path"
        raise CustomCheckError(
            f"cannot import {module_name!r} (looked in {where}): {type(exc).__name__}: {exc}"
        ) from exc
    fn: Any = module
    for part in attr.split("."):
        if not hasattr(fn, part):
            raise CustomCheckError(f"module {module_name!r} has no attribute {attr!r}")
        fn = getattr(fn, part)
    if not callable(fn):
        raise CustomCheckError(f"{ref} is not callable")
    return fn  # type: ignore[no-any-return]


def _task_error(spec: CustomCheck, index: int, detail: str) -> CheckResult:
    return result(
        spec, index, False, f"task error: {detail}", task_error=True, data={"task_error": detail}
    )


def _outcome(fn: CustomFunction, spec: CustomCheck, ctx: ScoringContext, index: int) -> CheckResult:
    """Call the function and read its return value as a result.

    Raises:
        CustomCheckError: the function returned something that is not a score.
    """
    outcome = fn(ctx, **spec.args)
    if isinstance(outcome, CheckResult):
        return outcome
    if isinstance(outcome, tuple) and len(outcome) == 2:
        passed, detail = bool(outcome[0]), str(outcome[1])
        return result(spec, index, passed, detail)
    if isinstance(outcome, bool):
        return result(spec, index, outcome, f"{spec.function} returned {outcome}")
    if isinstance(outcome, int | float):
        value = max(0.0, min(1.0, float(outcome)))
        return result(spec, index, value >= 1.0, f"{spec.function} scored {value:g}", score=value)
    raise CustomCheckError(
        f"{spec.function} returned {type(outcome).__name__}, not a score "
        "(return a bool, a float in [0, 1], (passed, detail) or a CheckResult)"
    )


UPSTREAM_VERDICT = "toolproof_upstream_verdict"
"""A check function's attribute that marks it as an established benchmark's own checker
(BFCL's): its verdict is taken as the benchmark scores it, so a check that doing nothing
passes (BFCL's irrelevance tasks, where making no call is the right answer) is not made a
guard. Only harness-side benchmark integrations set it."""


def _passes_for_nothing(
    fn: CustomFunction, spec: CustomCheck, ctx: ScoringContext, index: int
) -> bool:
    """Whether the check also passes had the agent done nothing (initial state, no steps)."""
    idle = ctx.trajectory.model_copy(update={"steps": [], "final_answer": None})
    counterfactual = dataclasses.replace(ctx, trajectory=idle, final=ctx.initial)
    try:
        return _outcome(fn, spec, counterfactual, index).passed
    except Exception:
        return False


@check("custom")
def evaluate(spec: CustomCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Run the function; a broken function is a task error, not a failure of the agent."""
    try:
        fn = load_function(spec.function, suite_root(ctx.task_dir))
    except CustomCheckError as exc:
        return _task_error(spec, index, str(exc))
    try:
        outcome = _outcome(fn, spec, ctx, index)
    except CustomCheckError as exc:
        return _task_error(spec, index, str(exc))
    except Exception as exc:
        return _task_error(spec, index, f"{spec.function} raised {type(exc).__name__}: {exc}")
    upstream = getattr(fn, UPSTREAM_VERDICT, False)  # the benchmark's own checker decides
    if (
        not upstream
        and not outcome.guard
        and not outcome.veto
        and _passes_for_nothing(fn, spec, ctx, index)
    ):
        outcome = outcome.model_copy(update={"guard": True})
    return outcome


def check_custom_imports(suite: Suite) -> list[str]:
    """Load every custom check function a suite's tasks name, for ``toolproof validate``.

    Functions are looked up as at scoring time (the suite directory first, see
    the module docstring). Names still holding a template (``{{ }}``) are skipped.

    Args:
        suite: The loaded suite.

    Returns:
        ``FILE: success[i].function: MESSAGE`` for each function that cannot be
        loaded; empty when all can.
    """
    problems: list[str] = []
    for task in suite.tasks:
        specs = [(f"success[{i}]", c) for i, c in enumerate(task.success)]
        if task.attack is not None:
            specs += [(f"attack.detect[{i}]", c) for i, c in enumerate(task.attack.detect)]
        for where, spec in specs:
            if not isinstance(spec, CustomCheck) or "{{" in spec.function:
                continue
            try:
                load_function(spec.function, suite.root)
            except CustomCheckError as exc:
                problems.append(f"{suite.task_file(task.id)}: {where}.function: {exc}")
    return problems
