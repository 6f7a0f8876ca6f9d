"""The quality gate of a task: what ``toolproof check-task`` and CI's proven tests enforce.

A task is fit to ship when (each rule is a :class:`Finding` when broken):

* ``valid``: it loads and passes every preflight check (:mod:`.preflight`): among them,
  every tool its reference solution calls is one it offers;
* ``oracle``: the reference solution is ``perfect`` on every one of :data:`ORACLE_EPOCHS`
  seeds, without a task error;
* ``noop``: doing nothing is ``fail`` with no credit, and no progress check passes on the
  initial world (a check that holds before the agent acts measures nothing);
* ``random``: seeded random calls never pass;
* ``flawed``: each flawed agent fails exactly the tasks of its weakness, as
  ``tests/suites/test_proven.py`` defines it (``gullible`` the attacked tasks,
  ``never-asks`` the ambiguous ones, ``never-retries`` the tool_error tasks whose
  reference run meets an error result) and passes every other;
* ``answer_in_prompt``: no rendered prompt contains the answer an output check expects;
* ``facts_vary``: the values the checks compare change across seeds (templates draw them).

The episodes run in process through :class:`~toolproof.engine.Worker`, the engine's own
runner, so a gate verdict is what ``toolproof run`` would score. The judging functions
take records, not runs, so the proven tests share them with one run per suite and agent.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from toolproof.agents.builtin.flawed import ASK_TOOL, is_error
from toolproof.results import EpisodeRecord
from toolproof.scoring import Level
from toolproof.scoring.roles import Role, check_name, static_role
from toolproof.spec import OutputCheck, Suite, Task, TaskInstance, render
from toolproof.trajectory import Message, Trajectory

from .config import RunConfig
from .executor import EpisodeJob, Worker

__all__ = [
    "CHOICE_SEEDS",
    "FIXED_FACTS",
    "FLAWED",
    "MARKER",
    "ORACLE_EPOCHS",
    "OTHER_EPOCHS",
    "RANDOM_PASSABLE",
    "Finding",
    "GateRecords",
    "asks",
    "gate_records",
    "instances_of",
    "judge_answer_in_prompt",
    "judge_facts_vary",
    "judge_flawed",
    "judge_markers",
    "judge_noop",
    "judge_oracle",
    "judge_random",
    "judge_task",
    "meets_error_to_recover",
    "run_agent",
    "why",
]

ORACLE_EPOCHS = 5
"""Seeds on which the oracle must be perfect."""
OTHER_EPOCHS = 2
"""Seeds on which noop, random and the flawed agents are run."""
FIXED_FACTS = "fixed-facts"
"""The tag that waives ``facts_vary`` for a task whose facts are fixed by design."""
MARKER = "FILL IN"
"""What ``toolproof new-task`` writes on the lines an author must rewrite."""
RANDOM_PASSABLE = "random-passable"
"""The tag that waives ``random`` for a task a random agent may pass (keep to ~0)."""
FLAWED = ("never-asks", "never-retries", "gullible")
"""The flawed test agents, each of which must fail exactly its weakness."""


@dataclass(frozen=True)
class Finding:
    """One broken rule of one task."""

    task_id: str
    rule: str
    message: str
    loc: tuple[str | int, ...] = ()
    """Where in the task file the fix goes (a field path), for ``file:line`` messages."""


@dataclass
class GateRecords:
    """Every record the gate judges, by agent then task id."""

    by_agent: dict[str, dict[str, list[EpisodeRecord]]] = field(default_factory=dict)

    def of(self, agent: str, task_id: str) -> list[EpisodeRecord]:
        """The records of one agent on one task (empty when it was not run)."""
        return self.by_agent.get(agent, {}).get(task_id, [])


def run_agent(
    suite: Suite,
    agent: str,
    epochs: int,
    task_ids: Iterable[str] | None = None,
    *,
    parallel: int = 8,
) -> dict[str, list[EpisodeRecord]]:
    """Run one agent over tasks of a suite for ``epochs`` seeds, in process; records by task.

    Args:
        suite: The loaded suite.
        agent: The agent spec (``oracle``, ``noop``, ``random``, a flawed agent).
        epochs: How many epochs (seeds) per task.
        task_ids: The tasks (default: every task of the suite).
        parallel: Episodes at once.
    """
    ids = list(task_ids) if task_ids is not None else [t.id for t in suite.tasks]
    config = RunConfig(
        suite=str(suite.root), agent=agent, epochs=epochs, snapshots=False, retries=0
    )
    worker = Worker(config, None, suite)
    jobs = [EpisodeJob(t, e) for t in ids for e in range(epochs)]

    async def all_jobs() -> list[EpisodeRecord]:
        slots = asyncio.Semaphore(parallel)

        async def one(job: EpisodeJob) -> EpisodeRecord:
            async with slots:
                return await worker.run(job)

        return list(await asyncio.gather(*(one(job) for job in jobs)))

    out: dict[str, list[EpisodeRecord]] = {t: [] for t in ids}
    for record in asyncio.run(all_jobs()):
        out[record.task.id].append(record)
    return out


def gate_records(suite: Suite, task_ids: list[str]) -> GateRecords:
    """Run every agent the gate needs over the given tasks."""
    records = GateRecords()
    records.by_agent["oracle"] = run_agent(suite, "oracle", ORACLE_EPOCHS, task_ids)
    for agent in ("noop", "random", *FLAWED):
        records.by_agent[agent] = run_agent(suite, agent, OTHER_EPOCHS, task_ids)
    return records


def why(records: list[EpisodeRecord]) -> str:
    """What each record's failed checks and errors say, for messages."""
    parts = []
    for r in records:
        failed = [f"{c.name}: {c.detail}" for c in r.score.checks if not c.passed]
        parts.append(
            f"epoch {r.epoch} {r.score.level.value}"
            + (f" ({'; '.join(failed)})" if failed else "")
            + (f" {r.trajectory.error}" if r.trajectory.error else "")
        )
    return ", ".join(parts)


def meets_error_to_recover(trajectory: Trajectory) -> bool:
    """Whether an error result came while the agent still had calls to make."""
    steps = [s for s in trajectory.steps if s.message.tool_calls]
    return any(
        any(is_error(Message(role="tool", content=r.content)) for r in s.results)
        for s in steps[:-1]
    )


def asks(trajectory: Trajectory) -> bool:
    """Whether the agent questioned the user (an ask_user call or a question in its answer)."""
    called = any(c.name == ASK_TOOL for c, _ in trajectory.tool_calls())
    return called or "?" in (trajectory.final_answer or "")


def judge_oracle(
    task: Task, records: list[EpisodeRecord], epochs: int = ORACLE_EPOCHS
) -> list[Finding]:
    """The reference solution must be perfect on every one of ``epochs`` seeds, without a
    task error."""
    if len(records) < epochs:
        return [
            Finding(
                task.id,
                "oracle",
                loc=("solution",),
                message=f"ran on {len(records)} seed(s), {epochs} needed",
            )
        ]
    bad = [r for r in records if r.score.level is not Level.PERFECT or r.score.task_error]
    if not bad:
        return []
    return [
        Finding(
            task.id,
            "oracle",
            loc=("solution",),
            message=f"the reference solution is not perfect: {why(bad)}; "
            "fix the solution or the checks",
        )
    ]


def judge_noop(task: Task, records: list[EpisodeRecord]) -> list[Finding]:
    """Doing nothing earns nothing, and no progress check holds on the initial world."""
    findings: list[Finding] = []
    bad = [r for r in records if r.score.level is not Level.FAIL or r.score.fraction > 0]
    if bad:
        findings.append(
            Finding(
                task.id,
                "noop",
                loc=("success",),
                message=f"an agent that does nothing gets credit: {why(bad)}",
            )
        )
    progress = {
        check_name(c, i) for i, c in enumerate(task.success) if static_role(c) is Role.PROGRESS
    }
    held = sorted(
        {
            c.name
            for r in records
            for c in r.score.checks
            if c.name in progress and c.passed and not c.guard  # not demoted at scoring
        }
    )
    if held:
        findings.append(
            Finding(
                task.id,
                "noop",
                loc=("success",),
                message=f"progress check(s) {held} pass on the initial world (an agent that does "
                "nothing passes them): make them expect the change the task asks for",
            )
        )
    if any(r.score.task_error or r.infra_error for r in records):
        findings.append(Finding(task.id, "noop", f"task or infra error: {why(records)}"))
    return findings


def judge_random(task: Task, records: list[EpisodeRecord]) -> list[Finding]:
    """Seeded random calls and a random answer must never pass (unless waived by the
    :data:`RANDOM_PASSABLE` tag, which a human reviewer must accept)."""
    if RANDOM_PASSABLE in task.tags:
        return []
    bad = [r for r in records if r.score.passed]
    if not bad:
        return []
    return [
        Finding(
            task.id,
            "random",
            loc=("success",),
            message=f"the random agent passes: {why(bad)}; pair a guessable answer with a state, "
            "evidence or process check",
        )
    ]


def judge_flawed(
    task: Task, agent: str, records: list[EpisodeRecord], oracle: list[EpisodeRecord]
) -> list[Finding]:
    """A flawed agent fails exactly the tasks of its weakness and passes every other."""
    category = str(task.category)
    failing = [r for r in records if not r.score.passed]
    passing = [r for r in records if r.score.passed]
    if agent == "gullible":
        if task.attack is None:
            return _expect_pass(task, agent, failing, "it has no attack")
        bad = [
            r
            for r in records
            if r.score.level is not Level.FAIL
            or not any(
                c.data.get("role") == "attack" and c.data.get("attack_succeeded") and c.veto
                for c in r.score.checks
            )
        ]
        return _expect_fail(task, agent, bad, "its attack must succeed on it and veto the score")
    if agent == "never-asks":
        if category == "ambiguous":
            return _expect_fail(task, agent, passing, "an ambiguous task needs the user's answer")
        return _expect_pass(task, agent, failing, "it is not ambiguous")
    if agent == "never-retries":
        by_epoch = {r.epoch: r for r in oracle}
        findings: list[Finding] = []
        for record in records:
            reference = by_epoch.get(record.epoch)
            needs = reference is not None and meets_error_to_recover(reference.trajectory)
            if category == "tool_error" and needs:
                findings += _expect_fail(task, agent, [record] if record.score.passed else [], "")
            elif needs:
                findings.append(
                    Finding(
                        task.id,
                        agent,
                        loc=("category",),
                        message=f"the reference run meets an error to recover from on epoch "
                        f"{record.epoch}, but the category is {category!r}: make it tool_error",
                    )
                )
            elif not record.score.passed:
                findings += _expect_pass(task, agent, [record], "no error needs a retry")
        return findings
    raise ValueError(f"no flawed agent {agent!r}; known: {', '.join(FLAWED)}")


def _expect_pass(task: Task, agent: str, bad: list[EpisodeRecord], because: str) -> list[Finding]:
    if not bad:
        return []
    return [Finding(task.id, agent, f"{agent} must pass ({because}) but: {why(bad)}")]


def _expect_fail(task: Task, agent: str, bad: list[EpisodeRecord], because: str) -> list[Finding]:
    if not bad:
        return []
    reason = f" ({because})" if because else ""
    return [Finding(task.id, agent, f"{agent} must fail{reason} but: {why(bad)}")]


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*(?:\.\d+)?(?![\w])")


def _numbers(text: str) -> list[float]:
    out = []
    for match in _NUMBER.findall(text):
        try:
            out.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return out


def _leaks(instance: TaskInstance) -> dict[int, str]:
    """The output checks of one rendered instance whose answer its prompt already says:
    check index -> what leaked."""
    task = instance.task
    prompt = task.description
    lowered = prompt.lower()
    out: dict[int, str] = {}
    for index, check in enumerate(task.success):
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
        if "number" not in leaks[0][index]:
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


def judge_task(suite: Suite, task: Task, records: GateRecords) -> list[Finding]:
    """Every gate rule on one task, from the records of every agent."""
    oracle = records.of("oracle", task.id)
    findings = judge_markers(task, suite.task_file(task.id).read_text(encoding="utf-8"))
    findings += judge_oracle(task, oracle)
    findings += judge_noop(task, records.of("noop", task.id))
    findings += judge_random(task, records.of("random", task.id))
    for agent in FLAWED:
        findings += judge_flawed(task, agent, records.of(agent, task.id), oracle)
    instances = instances_of(suite, task.id, ORACLE_EPOCHS)
    findings += judge_answer_in_prompt(
        instances, lambda: instances_of(suite, task.id, CHOICE_SEEDS)
    )
    findings += judge_facts_vary(instances)
    return findings
