"""The gate's rules on a task's text and seeds, without running an agent: the answer is
not in the prompt, the facts change across seeds, no scaffold marker is left, and a
typed answer is valid and has rivals in the world for the loose rule to bite."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from toolproof.scoring.checks.answer import candidates
from toolproof.scoring.roles import check_name
from toolproof.spec import AnswerCheck, OutputCheck, Suite, Task, TaskInstance, render
from toolproof.spec.answer import answer_problems, part

from ._rules import FIXED_FACTS, MARKER, Finding

_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:\.\d+)?(?![\w])")


def _numbers(text: str) -> list[float]:
    out = []
    for match in _NUMBER.findall(text):
        try:
            out.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return out


def _answer_leak(check: AnswerCheck, prompt: str) -> str | None:
    """What of a typed answer the prompt already says (a number among its numbers, a
    value or every value of a list in its text), or None."""
    values = check.expected if isinstance(check.expected, list) else [check.expected]
    if check.answer_kind == "number" or all(isinstance(v, int | float) for v in values):
        tolerance = max(check.tolerance, 1e-9)
        found = _numbers(prompt)
        if values and all(any(abs(n - float(v)) <= tolerance for n in found) for v in values):
            return f"number {', '.join(f'{float(v):g}' for v in values)}"
        return None
    lowered = prompt.lower()
    if values and all(str(v).strip().lower() in lowered for v in values):
        return f"answer {check.expected!r}"
    return None


def _leaks(instance: TaskInstance) -> dict[int, str]:
    """The output and answer checks of one rendered instance whose answer its prompt
    already says: check index -> what leaked."""
    task = instance.task
    prompt = task.description
    lowered = prompt.lower()
    out: dict[int, str] = {}
    for index, check in enumerate(task.success):
        if isinstance(check, AnswerCheck):
            leak = _answer_leak(check, prompt)
            if leak is not None:
                out[index] = leak
            continue
        if not isinstance(check, OutputCheck):
            continue
        leaked: list[str] = []
        tolerance = max(check.tolerance, 1e-9)
        if check.number is not None and any(
            abs(n - check.number) <= tolerance for n in _numbers(prompt)
        ):
            leaked.append(f"number {check.number:g}")
        if check.equals is not None and check.equals.strip().lower() in lowered:
            leaked.append(f"equals {check.equals!r}")
        if (
            check.contains
            and check.number is None
            and all(c.lower() in lowered for c in check.contains)
        ):
            leaked.append(f"contains {check.contains!r}")
        if leaked:
            out[index] = ", ".join(leaked)
    return out


def _expected_text(instance: TaskInstance, index: int) -> tuple[str, ...]:
    check = instance.task.success[index]
    if isinstance(check, AnswerCheck):
        values = check.expected if isinstance(check.expected, list) else [check.expected]
        return tuple(str(v).strip().lower() for v in values)
    assert isinstance(check, OutputCheck)
    texts = [check.equals] if check.equals is not None else check.contains
    return tuple(t.strip().lower() for t in texts if t)


def _a_choice(instances: list[TaskInstance], pool: list[TaskInstance], index: int) -> bool:
    """Whether the expected text is one of options every prompt names ("which is warmer,
    A or B?"): the answer differs across seeds, and every prompt names, beside its own
    answer, the answer of another seed (of ``pool``, more seeds than are checked)."""
    options = {_expected_text(i, index) for i in [*instances, *pool]} - {()}
    if len(options) < 2:
        return False
    for instance in instances:
        own = _expected_text(instance, index)
        lowered = instance.task.description.lower()
        if not any(o != own and all(t in lowered for t in o) for o in options):
            return False
    return True


CHOICE_SEEDS = 20
"""Seeds rendered to find the options of a text answer the prompt names (a choice)."""


def judge_answer_in_prompt(
    instances: list[TaskInstance], more: Callable[[], list[TaskInstance]] | None = None
) -> list[Finding]:
    """The rendered prompts must not all contain the answer an output check expects.

    A ``number`` must not be among the prompt's numbers; an ``equals`` text, or every
    ``contains`` text of a check together, must not be in the prompt. A leak counts
    when it holds on every seed: a conditional task ("book 14:00, or the next free
    hour") may name its answer on the seeds where the condition holds, and a small
    number may be in a prompt by chance, but an answer templated into the prompt is
    there every time. A text answer that is one of options the prompt names ("which
    station was warmer, KIX-7 or OSL-2?") is a choice, not a leak, when the answer
    changes across seeds and every prompt also names the answer of another seed.

    Args:
        instances: The task rendered for the checked seeds.
        more: Renders more seeds (:data:`CHOICE_SEEDS`), called only when a text answer is
            in every prompt, to tell a choice from a leak; default: only ``instances``.
    """
    if not instances:
        return []
    leaks = [_leaks(i) for i in instances]
    always = sorted(set.intersection(*(set(found) for found in leaks)))
    task = instances[0].task
    findings = []
    pool: list[TaskInstance] | None = None
    for index in always:
        if not leaks[0][index].startswith("number"):
            if pool is None:
                pool = more() if more is not None else []
            if _a_choice(instances, pool, index):
                continue
        findings.append(
            Finding(
                task.id,
                "answer_in_prompt",
                loc=("description",),
                message=f"success.{index} ({check_name(task.success[index], index)}): the "
                f"prompt says the answer on all {len(instances)} seeds (epoch 0: "
                f"{leaks[0][index]}); ask for something the agent must find out",
            )
        )
    return findings


def judge_facts_vary(instances: list[TaskInstance]) -> list[Finding]:
    """What the checks compare, or the world they look at, must change across seeds.

    A task whose checks and initial world are the same on every seed can be memorised.
    (Checks may stay fixed when the world changes: "say the product is missing" over a
    drawn catalogue.) Two kinds of task are exempt: one built on a fixture folder (a
    real repository, whose hidden tests are the check), and one tagged
    :data:`FIXED_FACTS`, a waiver a human reviewer must accept
    (docs/contributing-tasks.md).
    """
    if len(instances) < 2:
        return []
    first = instances[0].task
    if first.world.fixtures is not None or FIXED_FACTS in first.tags:
        return []

    def facts(instance: TaskInstance) -> str:
        task = instance.task
        user = task.user.model_dump() if task.user is not None else None
        return repr(([c.model_dump() for c in task.success], task.world.model_dump(), user))

    if len({facts(i) for i in instances}) > 1:
        return []
    return [
        Finding(
            instances[0].task.id,
            "facts_vary",
            loc=("params",) if instances[0].task.params else ("id",),
            message=f"the checks and the world are the same on all {len(instances)} seeds: draw "
            "the facts from params ({{ ... }} templates) so that nothing can be memorised",
        )
    ]


def instances_of(suite: Suite, task_id: str, epochs: int) -> list[TaskInstance]:
    """A task rendered for ``epochs`` seeds, as a run renders it."""
    task = suite.task(task_id)
    return [
        render(
            task,
            suite=suite.name,
            suite_seed=suite.config.seed,
            epoch=epoch,
            limits=suite.config.limits,
            system_prompt=suite.config.system_prompt,
        )
        for epoch in range(epochs)
    ]


def judge_markers(task: Task, text: str) -> list[Finding]:
    """A scaffolded file (``toolproof new-task``) whose :data:`MARKER` lines are not rewritten."""
    lines = [n for n, line in enumerate(text.splitlines(), 1) if MARKER in line]
    if not lines:
        return []
    return [
        Finding(
            task.id,
            "scaffold",
            loc=(),
            message=f"line(s) {', '.join(map(str, lines))} still say {MARKER}: rewrite them "
            "(the prompt the agent sees, in your words)",
        )
    ]


def _world_text(instance: TaskInstance) -> str:
    """What the agent can come to read: the prompt, the records, the workspace files,
    what the simulated user knows and every declared result of the task's inline
    tools, as one text."""
    task = instance.task
    parts = [task.description, json.dumps(task.world.records, ensure_ascii=False, default=str)]
    if task.user is not None:  # what the simulated user can say
        parts.append(json.dumps(task.user.model_dump(mode="json"), ensure_ascii=False))
    parts += list(task.world.files.values())
    for tool in task.tools:
        if not isinstance(tool, str):
            parts += [json.dumps(r.result, ensure_ascii=False, default=str) for r in tool.responses]
    return "\n".join(parts)


def _has_rivals(check: AnswerCheck, world: str, others: tuple[object, ...] = ()) -> bool:
    """Whether ``world`` holds a value of the answer's type other than the expected one.

    A short-text or option answer always has rivals (the loose rule wants the whole message
    to be the value; the declared options are the rivals). An object answer has them when
    one of its properties does, not counting another property's expected value (the loose
    reading does not count it as a rival either: latitude beside longitude); a computed
    count beside a file name from a set has no rival in the world, and needs none.
    """
    kind = check.answer_kind
    if kind in ("text", "option"):
        return True
    if kind == "object":
        values = tuple(
            v
            for value in check.expected.values()
            for v in (value if isinstance(value, list) else [value])
        )
        return any(
            _has_rivals(part(check, name), world, values) for name in check.type["properties"]
        )
    expected = check.expected if isinstance(check.expected, list) else [check.expected]
    known = [*expected, *others]
    return any(
        all(str(c.value).lower() != str(e).lower() and c.value != e for e in known)
        for c in candidates(check, world)
    )


def judge_answer_type(instances: list[TaskInstance]) -> list[Finding]:
    """A typed answer must be valid, and rivals of it must exist for the loose rule.

    On every seed the reference (``solution.submit``) and the check's ``expected`` value
    must validate against the declared type (the loader checks this too; the gate says
    it again per seed). On at least one seed, what the agent reads (the prompt, records,
    files, the simulated user's facts, inline tool results) must hold a value of the
    answer's type other than the expected one: otherwise no free-text answer could name a
    rival, and ``pass@loose`` would only test that a value was named. Exempt: a
    short-text answer (the loose rule wants the whole message to be the value) and an
    option answer, whose declared options are the rivals; an object answer needs rivals
    for one of its properties (:func:`_has_rivals`).
    """
    if not instances:
        return []
    task = instances[0].task
    index = next((i for i, c in enumerate(task.success) if isinstance(c, AnswerCheck)), None)
    if index is None:
        return []
    findings: list[Finding] = []
    rivals = False
    for instance in instances:
        check = instance.task.success[index]
        assert isinstance(check, AnswerCheck)
        for what, value in (
            ("expected", check.expected),
            ("submit", instance.task.solution.submit),
        ):
            problems = answer_problems(check.type, value)
            if problems:
                findings.append(
                    Finding(
                        task.id,
                        "answer_type",
                        loc=("success", index, "expected")
                        if what == "expected"
                        else ("solution", "submit"),
                        message=f"epoch {instance.epoch}: {what} {value!r} does not fit the "
                        f"declared type: {'; '.join(problems)}",
                    )
                )
        if _has_rivals(check, _world_text(instance)):
            rivals = True
    if not rivals:
        findings.append(
            Finding(
                task.id,
                "answer_rivals",
                loc=("success", index),
                message=f"success.{index}: the world holds no value of the answer's type other "
                f"than the expected one on any of {len(instances)} seeds; put rival values in the "
                "records or tool results, so that a free-text answer that names them fails "
                "pass@loose",
            )
        )
    return findings
