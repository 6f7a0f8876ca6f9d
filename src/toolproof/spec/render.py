"""Seeded parameters and ``{{ ... }}`` templates: from a Task to a TaskInstance.

Every random choice comes from ``(suite seed, task id, epoch)``, so the same
suite and seed always render the same instance, on any machine.
"""

from __future__ import annotations

import hashlib
import marshal
import random
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import arith
from .errors import Problem, SpecError
from .task import Limits, ParamSpec, Task

_PLACEHOLDER = re.compile(r"\{\{\s*(.+?)\s*\}\}")
_WHOLE = re.compile(r"^\{\{\s*(.+?)\s*\}\}$")


def instance_seed(suite_seed: int, task_id: str, epoch: int) -> int:
    """A stable 63-bit seed for one (suite seed, task, epoch)."""
    digest = hashlib.sha256(f"{suite_seed}:{task_id}:{epoch}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


class TaskInstance(BaseModel):
    """A task with its parameters drawn and substituted: what one episode runs."""

    model_config = ConfigDict(frozen=True)

    task: Task = Field(description="The task with every template rendered.")
    suite: str = Field(description="Suite name.")
    epoch: int = Field(description="Which repetition, from 0.")
    seed: int = Field(description="The instance seed.")
    params: dict[str, Any] = Field(description="The drawn parameter values.")
    limits: Limits = Field(description="Effective limits (suite defaults plus task overrides).")
    system_prompt: str = Field(description="The system prompt for this track.")

    @property
    def key(self) -> str:
        """Unique key of the instance within a run: ``task_id#epoch``."""
        return f"{self.task.id}#{self.epoch}"


def draw_params(specs: dict[str, ParamSpec], rng: random.Random) -> dict[str, Any]:
    """Draw every parameter in declaration order; ``expr`` sees the earlier ones."""
    values: dict[str, Any] = {}
    for name, spec in specs.items():
        if spec.int_range is not None:
            values[name] = rng.randint(*spec.int_range)
        elif spec.float_range is not None:
            values[name] = round(rng.uniform(*spec.float_range), spec.decimals)
        elif spec.choice is not None:
            values[name] = rng.choice(spec.choice)
        elif spec.sample is not None:
            values[name] = rng.sample(spec.sample, spec.k or 1)
        elif spec.shuffle is not None:
            values[name] = rng.sample(spec.shuffle, len(spec.shuffle))
        elif spec.expr is not None:
            values[name] = arith.evaluate(spec.expr, values)
        else:
            values[name] = spec.value
    return values


MAX_COMPUTED = 1_000_000
"""Most characters (and list items) all the placeholders of one rendering may produce."""


class _Budget:
    """What is left of :data:`MAX_COMPUTED` for one rendering: many placeholders that each
    build a large value (``{{ 'x' * 9999 }}`` a hundred thousand times) are refused early."""

    def __init__(self) -> None:
        self.left = MAX_COMPUTED

    def spend(self, value: Any) -> None:
        stack = [value]
        while stack:
            item = stack.pop()
            self.left -= 1 + (len(item) if isinstance(item, str) else 0)
            if self.left < 0:
                raise arith.ExpressionError(
                    f"the placeholders compute more than {MAX_COMPUTED:,} characters in all; "
                    "compute smaller values"
                )
            if isinstance(item, list | tuple):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.values())


def render_value(value: Any, params: dict[str, Any], budget: _Budget | None = None) -> Any:
    """Substitute ``{{ expr }}`` in every string of ``value`` (keys included).

    A string that is exactly one placeholder becomes the typed value (an int
    stays an int); placeholders inside longer text are formatted with ``str``.
    What the placeholders compute is bounded in all (:data:`MAX_COMPUTED`).

    Raises:
        arith.ExpressionError: an expression cannot be computed, or the values
            computed pass the bound.
    """
    budget = budget if budget is not None else _Budget()
    if isinstance(value, str):
        if "{{" not in value:  # most strings: no regex, and a str is immutable
            return value
        whole = _WHOLE.match(value)
        if whole and "{{" not in whole.group(1):
            result = arith.evaluate(whole.group(1), params)
            budget.spend(result)
            return result

        def substitute(match: re.Match[str]) -> str:
            result = arith.evaluate(match.group(1), params)
            budget.spend(result)  # before it is formatted: the text is as large as the value
            return _text(result)

        return _PLACEHOLDER.sub(substitute, value)
    if isinstance(value, dict):
        return {
            render_value(k, params, budget): render_value(v, params, budget)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [render_value(v, params, budget) for v in value]
    return value


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    return str(value)


class _Static:
    """A compiled subtree without placeholders: a marshal dump, loaded afresh each time.

    A class, not a sentinel object, so that a plan still reads right after a task is
    pickled to a worker process or a Ray node.
    """

    __slots__ = ("dump",)

    def __init__(self, dump: bytes) -> None:
        self.dump = dump

    def __getstate__(self) -> bytes:
        return self.dump

    def __setstate__(self, dump: bytes) -> None:
        self.dump = dump


def _no_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return "{{" not in value
    if isinstance(value, dict):
        return all(_no_placeholder(k) and _no_placeholder(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_no_placeholder(v) for v in value)
    return True


def _compile(value: Any) -> Any:
    """A plan for :func:`_run`: subtrees without placeholders become marshal dumps.

    Loading a dump (in C) makes a fresh copy of plain data far faster than walking it;
    a subtree marshal cannot hold (a YAML date) is walked by :func:`render_value` as before.
    """
    if isinstance(value, dict | list) and _no_placeholder(value):
        try:
            return _Static(marshal.dumps(value))
        except ValueError:  # not plain data: rendered the long way
            pass
    if isinstance(value, dict):
        return {k: _compile(v) for k, v in value.items()}
    return value


def _run(plan: Any, params: dict[str, Any], budget: _Budget) -> Any:
    if isinstance(plan, _Static):
        return marshal.loads(plan.dump)
    if isinstance(plan, dict):
        return {render_value(k, params, budget): _run(v, params, budget) for k, v in plan.items()}
    return render_value(plan, params, budget)


def _plan(task: Task) -> Any:
    """The compiled body of a loaded task's template, made once and kept on the task.

    Kept on the task, not in a module-level cache: module state is reachable from an
    in-process agent's code, and a template holds the solution.
    """
    plan = task._render_plan
    if plan is None:
        assert task._template is not None
        plan = _compile({k: v for k, v in task._template.items() if k != "params"})
        task._render_plan = plan
    return plan


def render_template(
    template: dict[str, Any], params: dict[str, Any], *, task: Task | None = None
) -> dict[str, Any]:
    """Substitute the parameters into a task document (its ``params`` stay as written).

    Given the loaded ``task`` whose template this is, the template is compiled once
    (:func:`_plan`): what holds no placeholder is copied from a marshal dump, the rest
    rendered by :func:`render_value`; the result is the same.
    """
    if task is not None:
        rendered: dict[str, Any] = _run(_plan(task), params, _Budget())
    else:
        body = {k: v for k, v in template.items() if k != "params"}
        rendered = render_value(body, params, _Budget())
    solution = rendered.get("solution")
    if isinstance(solution, dict) and isinstance(solution.get("calls"), list):
        solution["calls"] = _keep_calls(solution["calls"], params)
    if "params" in template:
        rendered["params"] = template["params"]
    return rendered


def render(
    task: Task,
    *,
    suite: str,
    suite_seed: int,
    epoch: int,
    limits: Limits,
    system_prompt: str,
) -> TaskInstance:
    """Draw the parameters for ``epoch`` and render every template of ``task``.

    Raises:
        SpecError: a template or expression cannot be computed, or the rendered
            task is invalid.
    """
    seed = instance_seed(suite_seed, task.id, epoch)
    try:
        params = draw_params(task.params, random.Random(seed))
        # a loaded task keeps its template: compiled once, reused every epoch
        loaded = task if task._template is not None else None
        new_task = Task.model_validate(render_template(task.template, params, task=loaded))
    except arith.ExpressionError as exc:
        raise SpecError([Problem(None, None, f"task {task.id}", str(exc))]) from exc
    except ValidationError as exc:
        raise SpecError(
            [
                Problem(None, None, f"task {task.id} (epoch {epoch})", f"{e['loc']}: {e['msg']}")
                for e in exc.errors()
            ]
        ) from exc
    return TaskInstance(
        task=new_task,
        suite=suite,
        epoch=epoch,
        seed=seed,
        params=params,
        limits=task.limits.apply(limits),
        system_prompt=system_prompt,
    )


def _keep_calls(calls: list[Any], params: dict[str, Any]) -> list[Any]:
    kept: list[Any] = []
    for item in calls:
        if isinstance(item, list):
            group = _keep_calls(item, params)
            if group:
                kept.append(group)
            continue
        when = item.get("when") if isinstance(item, dict) else None
        if when is None or arith.evaluate(str(when), params):
            kept.append(
                {k: v for k, v in item.items() if k != "when"} if isinstance(item, dict) else item
            )
    return kept
