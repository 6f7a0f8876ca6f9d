"""The gate's verdicts on the agents' records: oracle perfect, noop and random failing,
each flawed agent failing exactly its weakness."""

from __future__ import annotations

from toolproof.agents.builtin.flawed import ASK_TOOL, is_error
from toolproof.results import EpisodeRecord
from toolproof.scoring import Level
from toolproof.scoring.roles import Role, check_name, static_role
from toolproof.spec import Task
from toolproof.trajectory import Message, Trajectory

from ._rules import BLIND, FLAWED, ORACLE_EPOCHS, RANDOM_PASSABLE, Finding


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


def judge_blind(task: Task, records: list[EpisodeRecord]) -> list[Finding]:
    """No credit without looking: an agent that makes no tool call and claims the thing
    is impossible, missing, refused or done scores ``fail``."""
    bad = [r for r in records if r.score.level is not Level.FAIL]
    if not bad:
        return []
    return [
        Finding(
            task.id,
            BLIND,
            loc=("success",),
            message=f"a claim made without a tool call gets credit: {why(bad)}; require "
            "the reference's read (a process must_call, or a check that needs it)",
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
