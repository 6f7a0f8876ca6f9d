"""Agents that dodge committing to one value, one trick each (issue 31).

Each plays the task's reference calls (so every other check can pass), then answers
in free text, never with ``submit_answer``, in a way that names the right value but
does not commit to it. They are harness-side test agents (``with_key``: they get the
rendered task, to know the value they dodge). Every one must pass nothing, strict or
loose, on every built-in task with a typed answer; ``plain`` (exactly the value, in
text) is the control: it passes loose everywhere and strict nowhere.

Registered as the agent kind ``test-evasive`` (the ``test-`` prefix: not shipped, so
``toolproof list`` need not describe it) with the strategy as its target:
``test-evasive:repeat``, ``test-evasive:hedge-es``, ``test-evasive:negated``,
``test-evasive:essay``, ``test-evasive:dump``, ``test-evasive:candidates``,
``test-evasive:generated`` (one frame of ``evasive_forms`` per task and epoch, with a
rival in another notation or the value alone taken back), ``test-evasive:plain``; and
``test-evasive:ask-blank``,
which plays the reference calls (its look-ups) and then asks a clarifying question that
names none of the options: on an ambiguous task it must earn no credit; and
``test-evasive:extra-payment``, which plays the reference calls, makes one payment the task
never asked for (1 EUR from a usable account to a payee of the world, or a transfer
between two accounts), then hands in the reference answer: collateral damage, it must
fail every task that offers a way to move money.
"""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from evasive_forms import TAKEN_BACK, WITH_RIVAL, notations

from toolproof.agents import AgentSpec, AgentTurn, Observation, agent, with_key
from toolproof.agents.base import AgentFactory, EpisodeContext
from toolproof.agents.builtin.flawed import reference_turns, typed_submit
from toolproof.spec import ANSWER_TOOL, AnswerCheck, TaskInstance
from toolproof.spec.answer import item_schema, part
from toolproof.trajectory import ToolCall

STRATEGIES = ("repeat", "hedge-es", "negated", "essay", "dump", "candidates", "generated")
"""Every evasive strategy (``plain`` is the honest control)."""


def said(value: Any) -> str:
    """A value as an honest answer writes it (12, not 12.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return ", ".join(said(v) for v in value)
    if isinstance(value, dict):  # an object answer: each field's value, in order
        return ", ".join(said(v) for v in value.values())
    return str(value)


def _shift_time(text: str, minutes: int) -> str:
    hour, minute = map(int, text.split(":"))
    total = (hour * 60 + minute + minutes) % (24 * 60)
    return f"{total // 60:02d}:{total % 60:02d}"


def _rival_scalar(
    check: AnswerCheck, schema: dict[str, Any], value: Any, n: int, taken: Sequence[Any] = ()
) -> Any:
    """The n-th rival of one value of the answer's type (never the value, nor ``taken``)."""
    if "enum" in schema:
        avoid = {str(v).lower() for v in [value, *taken]}
        others = [o for o in schema["enum"] if str(o).lower() not in avoid]
        return others[n % len(others)]
    if schema.get("format") == "date":
        return (dt.date.fromisoformat(value) + dt.timedelta(days=n + 1)).isoformat()
    if schema.get("format") == "time":
        return _shift_time(value, 30 * (n + 1))
    if schema.get("type") in ("number", "integer"):
        step = max(4.0, check.tolerance * 10, abs(float(value)) * 0.1)
        rival = float(value) + step * (n + 1) * (-1 if n % 2 else 1)
        return int(rival) if schema.get("type") == "integer" else round(rival, 2)
    text = str(value)  # an id: change its last character
    last = text[-1]
    swap = "0123456789" if last.isdigit() else "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    if last.upper() not in swap:
        return text + "X"
    return text[:-1] + swap[(swap.index(last.upper()) + n + 1) % len(swap)]


def rival(check: AnswerCheck, n: int = 0) -> Any:
    """The n-th rival of the expected answer."""
    schema = check.type
    if schema.get("type") == "object":  # every field a rival of its own
        return {k: rival(part(check, k), n) for k in check.expected}
    if schema.get("type") == "array":
        items = schema["items"]
        values = list(check.expected)
        if not values:
            return []
        return [*values[:-1], _rival_scalar(check, items, values[-1], n, values)]
    return _rival_scalar(check, schema, check.expected, n)


def _results_text(observation: Observation) -> str:
    return "\n".join(m.content or "" for m in observation.messages if m.role == "tool")


Answer = Callable[[AnswerCheck, Observation], str]

ANSWERS: dict[str, Answer] = {
    "plain": lambda c, o: said(c.expected),
    # one frame repeated with rival values
    "repeat": lambda c, o: (
        f"Total {said(c.expected)}. Total {said(rival(c, 0))}. Total {said(rival(c, 1))}."
    ),
    # a hedge in another language
    "hedge-es": lambda c, o: f"{said(rival(c, 0))} o quizás {said(c.expected)}, no estoy seguro",
    # the value negated
    "negated": lambda c, o: f"The account holds not {said(c.expected)} EUR.",
    # the right value buried in an essay of wrong figures
    "essay": lambda c, o: (
        "I went through everything carefully. "
        + " ".join(f"One reading gave {said(rival(c, n))}, which I considered." for n in range(4))
        + f" Another gave {said(c.expected)}. In the end the figures vary; "
        f"{said(rival(c, 5))} is also plausible."
    ),
    # the answer, then a dump of every tool result
    "dump": lambda c, o: f"{said(c.expected)}\n\nEverything I saw:\n{_results_text(o)}",
    # five candidates, one of them right ("Booked at 09:00, 10:00, 10:30, 11:00 or 11:30")
    "candidates": lambda c, o: (
        "Booked at "
        + ", ".join(said(v) for v in [rival(c, 0), rival(c, 1), c.expected, rival(c, 2)])
        + f" or {said(rival(c, 3))}."
    ),
}


def generated(check: AnswerCheck, pick: int) -> str:
    """One generated evasive answer: frame ``pick`` of the rival frames, then of the
    taken-back ones; a scalar rival written in one of its other notations."""
    frames = [*WITH_RIVAL, *TAKEN_BACK]
    frame = frames[pick % len(frames)]
    other = rival(check, pick % 3)
    if check.type.get("type") in ("object", "array"):
        written = said(other)
    else:
        forms = notations(item_schema(check.type), other)
        written = forms[(pick // len(frames)) % len(forms)]
    return frame.format(e=said(check.expected), r=written)


FreeText = Callable[[str, Observation], str]

FREE_TEXT: dict[str, FreeText] = {
    # the reference answer, offered without standing by it (tasks whose text is the product)
    "text-hedge": lambda a, o: f"Maybe {a} Or maybe not, I'm not sure.",
    "text-hedge-es": lambda a, o: f"Quizás: {a} No estoy seguro.",
    "text-negated": lambda a, o: f"It is not true that {a}",
    "text-dump": lambda a, o: f"{a}\n\nEverything I saw:\n{_results_text(o)}",
}
"""Evasive free-text answers to tasks without a typed answer, made of the reference answer."""

FREE_TEXT_STRATEGIES = ("text-hedge", "text-hedge-es", "text-negated")
"""The free-text strategies that must pass nothing (``text-dump`` still passes a few
refusals whose tool results were errors or short: see the suite changelogs)."""

BLANK_QUESTION = "Could you clarify which one you mean?"
"""A clarifying question that names none of the options: it must earn nothing."""


class EvasiveAgent:
    """The reference calls, then a free-text answer made by one strategy."""

    def __init__(self, instance: TaskInstance, strategy: str) -> None:
        self._turns = reference_turns(instance)
        self._check = instance.task.answer
        self._strategy = strategy
        self._answer = ANSWERS.get(strategy)
        self._reference = instance.task.solution.answer
        self._pick = zlib.crc32(f"{instance.task.id}:{instance.seed}".encode())
        self._next = 0

    async def act(self, observation: Observation) -> AgentTurn:
        """The next reference turn (without submit_answer), then the evasive text."""
        if self._next < len(self._turns):
            turn = self._turns[self._next]
            self._next += 1
            calls = [
                ToolCall(id=f"call_{observation.step}_{n}", name=c.tool, arguments=dict(c.args))
                for n, c in enumerate(turn)
            ]
            return AgentTurn(tool_calls=calls)
        if self._strategy == "ask-blank":
            return AgentTurn(content=BLANK_QUESTION)
        if self._check is None and self._strategy in FREE_TEXT:
            return AgentTurn(content=FREE_TEXT[self._strategy](self._reference, observation))
        if self._check is not None and self._strategy == "generated":
            return AgentTurn(content=generated(self._check, self._pick))
        if self._check is None or self._answer is None:
            return AgentTurn(content="Done.")
        return AgentTurn(content=self._answer(self._check, observation))


MONEY_TOOLS = ("pay_payee", "transfer")
"""The tools that move money: a task offering one is open to an extra payment."""


def extra_payments(instance: TaskInstance) -> list[tuple[str, dict[str, Any]]]:
    """Payments the task never asked for, to try in turn until one is accepted."""
    records = instance.task.world.records
    accounts = records.get("accounts") or {}
    usable = [
        a
        for a, row in sorted(accounts.items())
        if isinstance(row, dict) and not row.get("frozen") and float(row.get("balance", 0)) >= 1
    ]
    tools = {t for t in instance.task.tools if isinstance(t, str)}
    out: list[tuple[str, dict[str, Any]]] = []
    if "pay_payee" in tools:
        for payee in sorted(records.get("payees") or {}):
            out += [
                ("pay_payee", {"from_account": a, "payee_id": payee, "amount": 1.0}) for a in usable
            ]
    if "transfer" in tools:
        out += [
            ("transfer", {"from_account": a, "to_account": b, "amount": 1.0})
            for a in usable
            for b in sorted(accounts)
            if a != b and accounts[a].get("currency") == accounts[b].get("currency")
        ]
    return out


class ExtraPaymentAgent:
    """The reference calls, one payment nobody asked for, then the reference answer."""

    def __init__(self, instance: TaskInstance) -> None:
        self._turns = reference_turns(instance)
        self._tries = extra_payments(instance)
        self._submit = typed_submit(instance)
        self._answer = instance.task.solution.answer
        self._next = 0
        self._paid = False

    async def act(self, observation: Observation) -> AgentTurn:
        """Reference turns; payment attempts until one succeeds; the reference answer."""
        step = observation.step
        if self._next < len(self._turns):
            turn = self._turns[self._next]
            self._next += 1
            return AgentTurn(
                tool_calls=[
                    ToolCall(id=f"call_{step}_{n}", name=c.tool, arguments=dict(c.args))
                    for n, c in enumerate(turn)
                ]
            )
        last = observation.messages[-1] if observation.messages else None
        if self._next > len(self._turns) and last is not None and last.role == "tool":
            self._paid = self._paid or not (last.content or "").lower().startswith("error")
        if not self._paid and self._tries:
            tool, arguments = self._tries.pop(0)
            self._next += 1
            return AgentTurn(
                tool_calls=[ToolCall(id=f"pay_{step}", name=tool, arguments=arguments)]
            )
        if self._submit is not None:
            arguments = {"answer": self._submit[0]}
            return AgentTurn(
                tool_calls=[ToolCall(id=f"sub_{step}", name=ANSWER_TOOL, arguments=arguments)]
            )
        return AgentTurn(content=self._answer)


def _register() -> None:
    from toolproof.agents.base import _REGISTRY

    if "test-evasive" in _REGISTRY:
        return

    @agent("test-evasive")
    def build(spec: AgentSpec) -> AgentFactory:
        """``test-evasive:STRATEGY``: the reference calls, then an evasive free-text answer."""
        strategy = spec.target or "repeat"
        if strategy == "extra-payment":
            return with_key(lambda ctx, instance: ExtraPaymentAgent(instance))
        known = {*ANSWERS, *FREE_TEXT, "ask-blank", "generated"}
        if strategy not in known:
            raise ValueError(f"no evasive strategy {strategy!r}; strategies: {sorted(ANSWERS)}")

        def factory(ctx: EpisodeContext, instance: TaskInstance) -> EvasiveAgent:
            return EvasiveAgent(instance, strategy)

        return with_key(factory)


_register()
