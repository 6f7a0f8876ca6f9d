"""Task format: pydantic models, loading with ``file:line`` errors, seeded rendering.

Map::

    suite.yaml + tasks/*.yaml --loader--> Suite[Task] --render(seed, epoch)--> TaskInstance
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toolproof._lazy import load_name

if TYPE_CHECKING:
    from ._semantic import all_checks, solution_calls, suite_root_of
    from ._yamlsrc import field_text
    from .answer import ANSWER_TOOL, AnswerCheck
    from .checks import (
        CallMatch,
        Check,
        CustomCheck,
        EvidenceCheck,
        FileExpectation,
        OutputCheck,
        ProcessCheck,
        StateCheck,
    )
    from .errors import Problem, SpecError, ToolproofError
    from .loader import (
        builtin_suite_names,
        builtin_suites_dir,
        load_suite,
        load_task,
        load_task_file,
        resolve_suite_path,
        suite_digest,
        validate_paths,
        validate_target,
    )
    from .render import TaskInstance, instance_seed, render, render_value
    from .sandbox import SANDBOX_DEFAULTS, PolicyRule, PolicySpec, SandboxSpec, effective_sandbox
    from .schema import suite_schema, task_schema
    from .suite import DEFAULT_SYSTEM_PROMPT, Suite, SuiteConfig
    from .task import (
        Category,
        Fault,
        InlineResponse,
        InlineTool,
        LevelRule,
        Levels,
        Limits,
        LimitsOverride,
        ParamSpec,
        Solution,
        SolutionCall,
        SolutionTurn,
        Task,
        TaskType,
        UserTurn,
        WorldSpec,
    )
    from .user import (
        AttackCall,
        AttackObjective,
        AttackSpec,
        AttackVector,
        UserFact,
        UserSpec,
        UserTopic,
    )

_HOMES: dict[str, tuple[str, ...]] = {
    "_semantic": (
        "all_checks",
        "solution_calls",
        "suite_root_of",
    ),
    "_yamlsrc": ("field_text",),
    "answer": ("ANSWER_TOOL", "AnswerCheck"),
    "checks": (
        "CallMatch",
        "Check",
        "CustomCheck",
        "EvidenceCheck",
        "FileExpectation",
        "OutputCheck",
        "ProcessCheck",
        "StateCheck",
    ),
    "errors": (
        "Problem",
        "SpecError",
        "ToolproofError",
    ),
    "_find": ("builtin_suite_names", "builtin_suites_dir", "resolve_suite_path"),
    "loader": (
        "load_suite",
        "load_task",
        "load_task_file",
        "suite_digest",
        "validate_paths",
        "validate_target",
    ),
    "render": (
        "TaskInstance",
        "instance_seed",
        "render",
        "render_value",
    ),
    "sandbox": (
        "SANDBOX_DEFAULTS",
        "PolicyRule",
        "PolicySpec",
        "SandboxSpec",
        "effective_sandbox",
    ),
    "schema": (
        "suite_schema",
        "task_schema",
    ),
    "suite": (
        "DEFAULT_SYSTEM_PROMPT",
        "Suite",
        "SuiteConfig",
    ),
    "task": (
        "Category",
        "Fault",
        "InlineResponse",
        "InlineTool",
        "LevelRule",
        "Levels",
        "Limits",
        "LimitsOverride",
        "ParamSpec",
        "Solution",
        "SolutionCall",
        "SolutionTurn",
        "Task",
        "TaskType",
        "UserTurn",
        "WorldSpec",
    ),
    "user": (
        "AttackCall",
        "AttackObjective",
        "AttackSpec",
        "AttackVector",
        "UserFact",
        "UserSpec",
        "UserTopic",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "ANSWER_TOOL",
    "DEFAULT_SYSTEM_PROMPT",
    "SANDBOX_DEFAULTS",
    "AnswerCheck",
    "AttackCall",
    "AttackObjective",
    "AttackSpec",
    "AttackVector",
    "CallMatch",
    "Category",
    "Check",
    "CustomCheck",
    "EvidenceCheck",
    "Fault",
    "FileExpectation",
    "InlineResponse",
    "InlineTool",
    "LevelRule",
    "Levels",
    "Limits",
    "LimitsOverride",
    "OutputCheck",
    "ParamSpec",
    "PolicyRule",
    "PolicySpec",
    "Problem",
    "ProcessCheck",
    "SandboxSpec",
    "Solution",
    "SolutionCall",
    "SolutionTurn",
    "SpecError",
    "StateCheck",
    "Suite",
    "SuiteConfig",
    "Task",
    "TaskInstance",
    "TaskType",
    "ToolproofError",
    "UserFact",
    "UserSpec",
    "UserTopic",
    "UserTurn",
    "WorldSpec",
    "all_checks",
    "builtin_suite_names",
    "builtin_suites_dir",
    "effective_sandbox",
    "field_text",
    "instance_seed",
    "load_suite",
    "load_task",
    "load_task_file",
    "render",
    "render_value",
    "resolve_suite_path",
    "solution_calls",
    "suite_digest",
    "suite_root_of",
    "suite_schema",
    "task_schema",
    "validate_paths",
    "validate_target",
]


def __getattr__(name: str) -> Any:
    """Import a name from its module on first use, then keep it here.

    The package imports nothing at first, so that ``toolproof.spec.errors`` (which the
    CLI needs for every command) does not pull in pydantic and every model.
    """
    return load_name(__name__, _HOME_OF, name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Package(ModuleType):
    """This package, keeping a public function over the submodule of the same name.

    Importing ``toolproof.spec.render`` sets the attribute ``render`` of the package
    to the submodule; an eager ``from .render import render`` used to put the function
    back. Here the function takes the submodule's place as it is set.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and _HOME_OF.get(name) == name:
            value = getattr(value, name)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
