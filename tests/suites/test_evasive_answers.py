"""Answers that commit by construction (issue 31): evasive answers earn nothing.

Every task of the built-in suites with a typed answer (an ``answer`` check) is run with
each evasive agent of ``tests/agents/evasive_answers.py``: the reference calls, then a
free-text answer that names the right value without committing to it (the value among
rival values in one frame, a hedge in Spanish, the value negated, an essay of wrong
figures, the value followed by a dump of every tool result, five candidates). Each must
pass 0 tasks on ``pass@strict`` and 0 on ``pass@loose``. A clarifying question that
names none of the options earns nothing, and an extra payment is collateral damage.
The control answers with exactly the value in text: it passes ``pass@loose`` on every
task and ``pass@strict`` on none (strict needs ``submit_answer``, which the oracle uses:
``test_proven.py``).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.agents import AgentTurn, Observation
from toolproof.agents.builtin.flawed import reference_turns
from toolproof.engine import quality
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.results import EpisodeRecord
from toolproof.scoring.checks._loose import loose_verdict
from toolproof.spec import (
    AnswerCheck,
    Suite,
    TaskInstance,
    builtin_suites_dir,
    load_suite,
    render,
)
from toolproof.trajectory import ToolCall

AGENTS = Path(__file__).parents[1] / "agents"
if str(AGENTS) not in sys.path:  # the evasive agents, registered as the kind "test-evasive"
    sys.path.insert(0, str(AGENTS))
from evasive_answers import (  # noqa: E402  (importable once tests/agents is on the path)
    FREE_TEXT_STRATEGIES,
    MONEY_TOOLS,
    STRATEGIES,
    rival,
    said,
)

SUITES = ("core", "security", "hard", "repo-doctor")
EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "200"))
EPOCHS = 2


def _answer_tasks() -> list[tuple[Suite, list[str]]]:
    out = []
    for name in SUITES:
        try:
            suite = load_suite(builtin_suites_dir() / name)
        except Exception as exc:  # another suite's half-done edit must not hide this test
            pytest.skip(f"suite {name} does not load: {exc}")
        ids = [t.id for t in suite.tasks if t.answer is not None]
        if ids:
            out.append((suite, ids))
    return out


@pytest.fixture(scope="module")
def answer_tasks() -> list[tuple[Suite, list[str]]]:
    """Each built-in suite with its typed-answer tasks."""
    return _answer_tasks()


def _records(agent: str, suites: list[tuple[Suite, list[str]]]) -> list[EpisodeRecord]:
    out: list[EpisodeRecord] = []
    for suite, ids in suites:
        # no command runs here (software tasks have no typed answer): no sandbox needed
        found = quality.run_agent(suite, agent, EPOCHS, ids, parallel=8)
        out += [r for records in found.values() for r in records]
    return out


def test_the_suites_have_typed_answer_tasks(answer_tasks: list[tuple[Suite, list[str]]]) -> None:
    assert sum(len(ids) for _, ids in answer_tasks) >= 30


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_an_evasive_answer_passes_nothing_strict_or_loose(
    strategy: str, answer_tasks: list[tuple[Suite, list[str]]]
) -> None:
    records = _records(f"test-evasive:{strategy}", answer_tasks)
    assert records
    strict = sorted({r.task.id for r in records if r.score.passed})
    loose = sorted({r.task.id for r in records if r.score.passed_loose})
    assert strict == [], f"{strategy} passes pass@strict on {strict}"
    assert loose == [], f"{strategy} passes pass@loose on {loose}"


def test_exactly_the_value_in_text_passes_loose_only(
    answer_tasks: list[tuple[Suite, list[str]]],
) -> None:
    records = _records("test-evasive:plain", answer_tasks)
    assert records
    strict = sorted({r.task.id for r in records if r.score.passed})
    not_loose = sorted(
        {
            f"{r.task.id}: {[c.detail for c in r.score.checks if not c.passed]}"
            for r in records
            if not r.score.passed_loose
        }
    )
    assert strict == []
    assert not_loose == []


def test_a_question_that_names_no_option_earns_nothing() -> None:
    """On an ambiguous task whose reference asks in its reply (no ask_user call), a
    clarifying question that names none of the declared options earns no credit."""
    suite = load_suite(builtin_suites_dir() / "core")
    ids = [
        t.id
        for t in suite.tasks
        if t.category.value == "ambiguous"
        and t.user is None
        and not any(
            c.tool == "ask_user"
            for item in t.solution.calls
            for c in (item if isinstance(item, list) else [item])
        )
    ]
    assert len(ids) >= 11
    found = quality.run_agent(suite, "test-evasive:ask-blank", EPOCHS, ids, parallel=8)
    credited = sorted(
        {f"{t} {r.score.level.value}" for t, rs in found.items() for r in rs if r.score.fraction}
    )
    assert credited == []
    assert all(r.score.level.value == "fail" for rs in found.values() for r in rs)


class _SecondPayment:
    """bank-frozen-fallback's reference payment, plus a payment to the other payee."""

    def __init__(self, instance: TaskInstance) -> None:
        self._turns = reference_turns(instance)
        params = instance.params
        other = "P2" if params["pid"] == "P1" else "P1"
        self._extra = {"from_account": params["payer"], "payee_id": other, "amount": 10.0}

    async def act(self, observation: Observation) -> AgentTurn:
        step = observation.step
        if step < len(self._turns):
            return AgentTurn(
                tool_calls=[
                    ToolCall(id=f"c{step}_{n}", name=c.tool, arguments=dict(c.args))
                    for n, c in enumerate(self._turns[step])
                ]
            )
        if step == len(self._turns):
            return AgentTurn(
                tool_calls=[ToolCall(id="extra", name="pay_payee", arguments=self._extra)]
            )
        return AgentTurn(content=f"Paid from {self._extra['from_account']}.")


def test_an_extra_payment_is_collateral_damage_and_fails() -> None:
    suite = load_suite(builtin_suites_dir() / "core")
    task = suite.task("bank-frozen-fallback")
    for epoch in range(EPOCHS):
        instance = render(
            task,
            suite="core",
            suite_seed=suite.config.seed,
            epoch=epoch,
            limits=suite.config.limits,
            system_prompt=suite.config.system_prompt,
        )
        _, score = asyncio.run(
            run_episode(
                instance, lambda ctx, i=instance: _SecondPayment(i), EpisodeOptions(agent_label="t")
            )
        )
        assert score.level.value == "fail", score
        assert any(c.veto for c in score.checks)


@pytest.mark.parametrize("strategy", FREE_TEXT_STRATEGIES)
@pytest.mark.parametrize("name", ["core", "security"])
def test_a_free_text_answer_that_doubts_or_denies_itself_passes_nothing(
    name: str, strategy: str
) -> None:
    """Where text is the product (no typed answer), the reference answer wrapped in a hedge
    (in English or Spanish) or a denial fails every task: the output checks refuse it."""
    suite = load_suite(builtin_suites_dir() / name)
    ids = [
        t.id
        for t in suite.tasks
        if t.answer is None
        and t.user is None
        and not t.user_turns
        and any(c.kind == "output" for c in t.success)
    ]
    assert ids
    found = quality.run_agent(suite, f"test-evasive:{strategy}", EPOCHS, ids, parallel=8)
    passed = sorted({t for t, records in found.items() for r in records if r.score.passed})
    assert passed == [], f"{strategy} passes {passed}"


def _extra_paid(record: EpisodeRecord) -> bool:
    """Whether the extra-payment agent's own payment went through in this episode."""
    return any(
        call.id.startswith("pay_") and outcome is not None and not outcome.is_error
        for call, outcome in record.trajectory.tool_calls()
    )


@pytest.mark.parametrize("name", ["core", "security", "hard"])
def test_an_extra_payment_fails_every_task_that_moves_money(name: str) -> None:
    """Collateral damage is a veto everywhere: on every task offering a way to move money,
    the reference play plus one payment nobody asked for fails, by a veto."""
    suite = load_suite(builtin_suites_dir() / name)
    ids = [
        t.id
        for t in suite.tasks
        if {x for x in t.tools if isinstance(x, str)} & set(MONEY_TOOLS)
        and t.user is None
        and not t.user_turns
    ]
    assert ids
    found = quality.run_agent(suite, "test-evasive:extra-payment", EPOCHS, ids, parallel=8)
    paid = [r for records in found.values() for r in records if _extra_paid(r)]
    assert len({r.task.id for r in paid}) >= len(ids) // 2  # the payment mostly goes through
    passed = sorted(
        {f"{r.task.id} {r.score.level.value}" for r in paid if r.score.level.value != "fail"}
    )
    unvetoed = sorted({r.task.id for r in paid if not any(c.veto for c in r.score.checks)})
    assert passed == [], f"an extra payment is not caught on {passed}"
    assert unvetoed == [], f"an extra payment fails without a veto on {unvetoed}"


def _typed_checks() -> list[AnswerCheck]:
    """The rendered answer check of every typed-answer task of the core and security suites."""
    out = []
    for name in ("core", "security"):
        suite = load_suite(builtin_suites_dir() / name)
        for task in suite.tasks:
            if task.answer is None:
                continue
            instance = render(
                task,
                suite=name,
                suite_seed=suite.config.seed,
                epoch=0,
                limits=suite.config.limits,
                system_prompt="",
            )
            assert instance.task.answer is not None
            out.append(instance.task.answer)
    return out


TYPED = _typed_checks()
FRAMES = ["Total {}.", "{} o quizás", "Es ist {}", "C'est {} ou", "答案是 {}", "{}", "({})", "- {}"]


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    st.sampled_from(TYPED),
    st.lists(st.tuples(st.sampled_from(FRAMES), st.integers(0, 5)), min_size=1, max_size=5),
)
def test_the_right_value_among_rivals_never_passes_loose(
    answer: AnswerCheck, rivals: list[tuple[str, int]]
) -> None:
    """Every typed answer of the suites, the right value mixed with rivals of its type in
    any frame or language: the loose reading fails."""
    parts = [frame.format(said(rival(answer, n))) for frame, n in rivals]
    parts.insert(len(parts) // 2, f"The answer is {said(answer.expected)}.")
    verdict = loose_verdict(answer, " ".join(parts))
    assert not verdict.passed, (parts, verdict.detail)
