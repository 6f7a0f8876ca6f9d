"""Task format: pydantic models, loading with ``file:line`` errors, seeded rendering.

Map::

    suite.yaml + tasks/*.yaml --loader--> Suite[Task] --render(seed, epoch)--> TaskInstance
"""

from ._semantic import all_checks, solution_calls, suite_root_of
from ._yamlsrc import field_text
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

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "SANDBOX_DEFAULTS",
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
