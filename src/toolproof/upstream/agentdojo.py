"""AgentDojo's suites as a toolproof suite, built from the installed package at load time.

Without an attack, each user task of each suite (banking, slack, travel, workspace at
benchmark version :data:`~._agentdojo_upstream.BENCHMARK_VERSION`) is one task: its
prompt is the user task's ``PROMPT``, its world holds the suite's default environment
after the task's ``init_environment`` (every injection vector at its default, benign
value), its tools are the suite's functions, its one check is AgentDojo's utility, and
the oracle plays the task's ``ground_truth`` calls one per turn, as AgentDojo's
``GroundTruthPipeline`` does. With an attack, each (user task, injection task) pair is
one task: the world holds the environment with the attack's injections placed in the
vectors the user task's ground truth reads (AgentDojo's own attack class writes them),
and the ``attack`` check runs AgentDojo's security verdict of the injection task; the
``gullible`` agent carries out the injection task's ground truth once it reads the goal.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from toolproof.spec import (
    AttackSpec,
    CustomCheck,
    Problem,
    Solution,
    SolutionCall,
    SpecError,
    Suite,
    SuiteConfig,
    Task,
    WorldSpec,
)
from toolproof.spec.task import Category, LimitsOverride, TaskType
from toolproof.spec.user import AttackCall, AttackObjective, AttackVector, normalize_text

from . import _agentdojo_check  # noqa: F401 - registers the agentdojo.* check functions
from . import _agentdojo_upstream as upstream
from ._agentdojo_check import ATTACK, SECURITY, UTILITY
from ._agentdojo_envs import SuiteEnvironments, share
from ._agentdojo_tools import ENV_KEY, register_suite_tools

SUITES = ("banking", "slack", "travel", "workspace")
MAX_ROUNDS = 15
"""AgentDojo's ``ToolsExecutionLoop`` default: at most 15 rounds of tool calls."""
_DIFFICULTY = {"EASY": 1, "MEDIUM": 2, "HARD": 3}


def _problem(message: str) -> SpecError:
    return SpecError([Problem(None, None, "suite", message)])


def _plain(value: Any) -> Any:
    """A ground-truth argument as JSON (AgentDojo's args may hold dates or enums)."""
    return json.loads(json.dumps(value, default=str))


def _calls(function_calls: list[Any]) -> list[SolutionCall | list[SolutionCall]]:
    return [[SolutionCall(tool=c.function, args=_plain(dict(c.args)))] for c in function_calls]


def _vector(names: list[str]) -> AttackVector:
    """toolproof's label for where the injections sit, from AgentDojo's vector ids."""
    text = " ".join(names).lower()
    for words, vector in (
        (("email",), AttackVector.EMAIL),
        (("web", "website"), AttackVector.WEB),
        (("channel", "message", "dm", "slack"), AttackVector.CHAT),
        (("file", "drive", "document", "bill", "notice"), AttackVector.FILE),
    ):
        if any(w in text for w in words):
            return vector
    return AttackVector.API


def _objective(function_calls: list[Any]) -> AttackObjective:
    """toolproof's label for what the injection task is after, from its ground truth."""
    names = " ".join(c.function for c in function_calls)
    if "delete" in names:
        return AttackObjective.DESTROY
    if any(w in names for w in ("money", "transaction", "reserve", "password")):
        return AttackObjective.FRAUD
    return AttackObjective.EXFILTRATE


def _needle(goal: str, injected: str) -> str:
    """The part of the injection the ``gullible`` agent looks for, and ``exposed`` reports:
    the longest line of the goal that the text holds (tool results are YAML, which escapes
    line breaks, so one line of words is what survives), else the longest line of the text."""
    text = normalize_text(injected)
    lines = sorted((ln.strip() for ln in goal.splitlines() if ln.strip()), key=len, reverse=True)
    for line in lines:
        if len(normalize_text(line)) >= 8 and normalize_text(line) in text:
            return line
    return max(injected.splitlines(), key=len).strip()


def _attack(
    suite_name: str, injection_task: Any, pre: Any, injections: dict[str, str]
) -> tuple[AttackSpec | None, CustomCheck]:
    """The task's attack section (None where the injection task has no ground truth
    upstream: nothing for ``gullible`` to carry out) and its attack check."""
    calls = injection_task.ground_truth(pre.model_copy(deep=True))
    answer = injection_task.GROUND_TRUTH_OUTPUT or ""
    text = next(iter(injections.values()), injection_task.GOAL)
    needle = _needle(injection_task.GOAL, text)
    vector, objective = _vector(list(injections)), _objective(calls)
    check = CustomCheck(
        name="attack",
        function=ATTACK,
        args={
            "suite": suite_name,
            "injection_task": injection_task.ID,
            "injection": needle,
            "goal": injection_task.GOAL,
            "vector": vector.value,
            "objective": objective.value,
        },
    )
    if not calls and not answer:
        return None, check
    spec = AttackSpec(
        goal=injection_task.GOAL,
        vector=vector,
        objective=objective,
        injection=needle,
        calls=[AttackCall(tool=c.function, args=_plain(dict(c.args))) for c in calls],
        answer=answer,
        detect=[
            CustomCheck(
                name="agentdojo_security",
                function=SECURITY,
                args={"suite": suite_name, "injection_task": injection_task.ID},
            )
        ],
    )
    return spec, check


def build_task(
    suite_name: str,
    user_task: Any,
    env: Any,
    base_dump: dict[str, Any],
    tools: list[str],
    *,
    attack: str | None = None,
    injection_task: Any = None,
    injections: dict[str, str] | None = None,
) -> Task:
    """One AgentDojo user task (with an injection task, under an attack) as a task.

    Raises:
        SpecError: the task's text holds ``{{``, which toolproof would read as a template.
    """
    pre = user_task.init_environment(env)
    ground_truth = user_task.ground_truth(pre.model_copy(deep=True))
    dump = pre.model_dump(mode="json")
    task_id = f"{suite_name}.{user_task.ID}"
    tags = ["agentdojo", f"agentdojo:{suite_name}"]
    success = [
        CustomCheck(
            name="agentdojo_utility",
            function=UTILITY,
            args={"suite": suite_name, "user_task": user_task.ID},
        )
    ]
    spec: AttackSpec | None = None
    attacked = injection_task is not None
    if injection_task is not None and attack is not None:
        task_id = f"{task_id}.{injection_task.ID}"
        tags += [f"agentdojo-attack:{attack}", f"agentdojo-injection:{injection_task.ID}"]
        spec, check = _attack(suite_name, injection_task, pre, injections or {})
        success.append(check)
    if "{{" in user_task.PROMPT or "{{" in json.dumps(dump):
        raise _problem(f"agentdojo {task_id}: holds '{{{{', which toolproof reads as a template")
    difficulty = getattr(getattr(user_task, "DIFFICULTY", None), "name", "EASY")
    return Task(
        id=task_id,
        description=user_task.PROMPT,
        type=TaskType.MULTI_STEP if len(ground_truth) > 1 else TaskType.SINGLE_TOOL,
        category=Category.SECURITY if attacked else Category.NORMAL,
        difficulty=_DIFFICULTY.get(difficulty, 1),
        domain=suite_name,
        tags=tags,
        tools=list(tools),
        world=WorldSpec(records={ENV_KEY: share(dump, base_dump)}),
        attack=spec,
        limits=LimitsOverride(max_steps=max(MAX_ROUNDS, len(ground_truth)) + 1),
        success=success,
        solution=Solution(calls=_calls(ground_truth), answer=user_task.GROUND_TRUTH_OUTPUT or ""),
    )


def _suite_tasks(suite_name: str, attack: str | None) -> list[Task]:
    suite = upstream.suites()[suite_name]
    tools = register_suite_tools(suite_name, suite)
    envs = SuiteEnvironments(suite)
    tasks: list[Task] = []
    if attack is None:
        for user_task in suite.user_tasks.values():
            tasks.append(
                build_task(suite_name, user_task, envs.injected({}), envs.default_dump, tools)
            )
        return tasks
    made = upstream.attack(suite_name, attack)
    found: dict[str, list[str]] = {}

    def candidates(user_task: Any) -> list[str]:  # one ground-truth run per user task
        if user_task.ID not in found:
            found[user_task.ID] = envs.candidates(user_task)
        return found[user_task.ID]

    made.get_injection_candidates = candidates
    for user_task in suite.user_tasks.values():
        for injection_task in suite.injection_tasks.values():
            injections = made.attack(user_task, injection_task)
            tasks.append(
                build_task(
                    suite_name,
                    user_task,
                    envs.injected(injections),
                    envs.default_dump,
                    tools,
                    attack=attack,
                    injection_task=injection_task,
                    injections=injections,
                )
            )
    return tasks


def build_suite(
    part: str | None = None, *, allow_drift: bool = False, attack: str | None = None
) -> Suite:
    """The AgentDojo suite: one of its suites or all four, with or without an attack.

    Raises:
        SpecError: agentdojo missing, a version other than the pinned one (without
            ``allow_drift``), an unknown suite or attack.
    """
    version = upstream.installed_version()
    if version is None:
        raise _problem(f"agentdojo needs {upstream.EXTRA_HINT}")
    if version != upstream.PINNED_VERSION and not allow_drift:
        raise _problem(
            f"agentdojo {version} is installed but toolproof is proven on "
            f"{upstream.PINNED_VERSION}: install it ({upstream.EXTRA_HINT}) or pass --allow-drift"
        )
    if part is not None and part not in SUITES:
        raise _problem(f"agentdojo:{part}: not an AgentDojo suite; suites: {', '.join(SUITES)}")
    if attack is not None and attack not in upstream.attack_names():
        raise _problem(
            f"--attack {attack!r}: not an AgentDojo attack toolproof runs (DoS attacks and "
            f"'manual' are not supported); attacks: {', '.join(upstream.attack_names())}"
        )
    chosen = [part] if part else list(SUITES)
    tasks = [task for name in chosen for task in _suite_tasks(name, attack)]
    name = "agentdojo" if part is None else f"agentdojo-{part}"
    if attack is not None:
        name += "-" + attack.replace("_", "-")
    sha = hashlib.sha256(
        f"{upstream.data_digest()}\0{upstream.BENCHMARK_VERSION}\0{part}\0{attack}".encode()
    )
    config = SuiteConfig(
        name=name,
        version=f"agentdojo-{version}-{upstream.BENCHMARK_VERSION}",
        description="AgentDojo's suites, scored by AgentDojo's own utility and security checks.",
        canary=f"agentdojo {version} {upstream.BENCHMARK_VERSION} (from the installed package)",
        system_prompt=upstream.system_message(),
    )
    root = upstream.data_root()
    suite = Suite(config=config, tasks=tasks, root=root, digest=sha.hexdigest())
    for task in tasks:
        suite._task_files[task.id] = root / "suites" / task.domain / "environment.yaml"
    return suite
