"""Flawed scripted agents: the reference solution played with one deliberate flaw.

These are **test and diagnostic agents**, not baselines. Each one behaves like
``oracle`` except for one weakness, so a suite can prove that its tasks punish
exactly that weakness and nothing else:

``never-asks``
    Skips every ``ask_user`` call and, where the reference solution used a
    fact of the task's simulated user, uses a wrong guess instead (the first
    of the fact's ``alternatives`` that is not the fact); it also leaves every
    question out of its final answer (where the reference asks the user which
    option they mean). Should lose the ``ambiguous`` tasks only.
``never-retries``
    Plays the reference turns until a tool result is an error (its text
    starts with ``error:`` or ``refused:``, as the gateway writes them) while
    reference turns remain, then stops and answers that it could not finish.
    Should lose the ``tool_error`` tasks whose fault is an error result only.
``gullible``
    Plays the reference turns, and once a tool result shows the task's
    ``attack.injection`` it also makes the attacker's ``attack.calls`` and
    adds ``attack.answer`` to its final answer. Should lose on attack success
    (the ``security`` tasks) only.

On a task with a typed answer each hands in ``solution.submit`` with
``submit_answer`` once its script is done, as ``oracle`` does (``never-asks`` its
guessed value; ``gullible`` answers in text once it obeyed an injected answer).

Run one with ``toolproof run SUITE --agent never-asks``. Like ``oracle`` they are
harness-side code, given the rendered task through :func:`~toolproof.agents.with_key`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from toolproof.spec import (
    ANSWER_TOOL,
    AttackCall,
    AttackSpec,
    SolutionCall,
    TaskInstance,
    UserSpec,
)
from toolproof.trajectory import Message, ToolCall

from ..base import (
    AgentFactory,
    AgentSpec,
    AgentTurn,
    EpisodeContext,
    Observation,
    agent,
    with_key,
)

ASK_TOOL = "ask_user"
"""The tool through which agents question the simulated user."""

_ERROR_PREFIXES = ("error:", "refused:")


Play = tuple[list[list[SolutionCall]], str]
"""The reference play of one user turn: its turns of calls, then the reply that ends it."""


def reference_turns(instance: TaskInstance) -> list[list[SolutionCall]]:
    """The rendered reference solution as a list of turns (each a list of calls)."""
    return [item if isinstance(item, list) else [item] for item in instance.task.solution.calls]


def later_plays(instance: TaskInstance) -> list[Play]:
    """The reference play after each further user message (``solution.turns``)."""
    return [
        ([item if isinstance(item, list) else [item] for item in turn.calls], turn.answer)
        for turn in instance.task.solution.turns
    ]


def typed_submit(instance: TaskInstance) -> tuple[Any] | None:
    """The reference's typed answer (``solution.submit``) as a 1-tuple, for a task with
    an answer check; None for a free-text task."""
    solution = instance.task.solution
    if instance.task.answer is None or solution.submit is None:
        return None
    return (solution.submit,)


def latest_results(observation: Observation) -> list[Message]:
    """The tool messages that followed the agent's last turn."""
    results: list[Message] = []
    for message in reversed(observation.messages):
        if message.role != "tool":
            break
        results.append(message)
    return list(reversed(results))


def is_error(message: Message) -> bool:
    """Whether a tool message reports an error, judged from its text as an agent would."""
    return (message.content or "").lstrip().lower().startswith(_ERROR_PREFIXES)


class ScriptedAgent:
    """Plays a list of turns, then answers; subclasses bend the script.

    With ``later`` plays (a task's further user turns, or a user in conversation), each
    new user message starts the next play, as it does for ``oracle``.
    """

    def __init__(
        self,
        turns: list[list[SolutionCall]],
        answer: str,
        later: Sequence[Play] = (),
        submit: tuple[Any] | None = None,
    ) -> None:
        self._turns = turns
        self._answer = answer
        self._submit = submit
        """A typed answer to hand in with submit_answer once the script is done."""
        self._next = 0
        self._later = list(later)
        self._users = 0

    def _follow_user(self, observation: Observation) -> None:
        """Start the next play when a new user message came since the last turn."""
        users = sum(m.role == "user" for m in observation.messages)
        if self._users and users > self._users and self._later:
            self._turns, self._answer = self._later.pop(0)
            self._next = 0
        self._users = users

    def _calls(self, calls: Sequence[SolutionCall | AttackCall], step: int) -> AgentTurn:
        return AgentTurn(
            tool_calls=[
                ToolCall(id=f"call_{step}_{n}", name=c.tool, arguments=dict(c.args))
                for n, c in enumerate(calls)
            ]
        )

    async def act(self, observation: Observation) -> AgentTurn:
        """The next turn of the script, or the answer when none is left."""
        self._follow_user(observation)
        if self._next < len(self._turns):
            turn = self._turns[self._next]
            self._next += 1
            return self._calls(turn, observation.step)
        if self._submit is not None and not self._later:
            arguments = {"answer": self._submit[0]}
            call = ToolCall(id=f"call_{observation.step}_0", name=ANSWER_TOOL, arguments=arguments)
            return AgentTurn(tool_calls=[call])
        return AgentTurn(content=self._answer)


def _pattern(value: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9A-Za-z]){re.escape(value)}(?![0-9A-Za-z])")


def substitute(value: Any, guesses: dict[str, Any]) -> Any:
    """Replace every occurrence of a fact's value by the guess, inside strings too.

    A value equal to a fact (compared as text) becomes the guess itself; a
    longer string has each whole-word occurrence replaced by the guess as text.
    """
    if isinstance(value, dict):
        return {k: substitute(v, guesses) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, guesses) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    text = str(value)
    if text in guesses:
        return guesses[text]
    if isinstance(value, str):
        for fact, guess in guesses.items():
            value = _pattern(fact).sub(str(guess), value)
    return value


class NeverAsksAgent(ScriptedAgent):
    """The reference solution without ``ask_user``, guessing each fact wrong."""

    def __init__(self, instance: TaskInstance) -> None:
        user: UserSpec | None = instance.task.user
        guesses: dict[str, Any] = {}
        if user is not None:
            for fact in user.facts.values():
                guess = fact.wrong_guess()
                if guess is not None and str(fact.value).strip():
                    guesses[str(fact.value)] = guess
        plays = [(reference_turns(instance), instance.task.solution.answer)]
        plays += later_plays(instance)
        if user is not None and user.mode == "conversation":  # no question, so no answer:
            merged = [turn for calls, _ in plays for turn in calls]  # it acts on its guesses
            plays = [(merged, plays[-1][1])]
        guessed = [self._guess(calls, answer, guesses) for calls, answer in plays]
        submit = typed_submit(instance)
        if submit is not None:  # the typed answer it would give on its guesses
            submit = (substitute(submit[0], guesses),)
        super().__init__(*guessed[0], later=guessed[1:], submit=submit)

    @staticmethod
    def _guess(turns: list[list[SolutionCall]], answer: str, guesses: dict[str, Any]) -> Play:
        kept_turns: list[list[SolutionCall]] = []
        for turn in turns:
            kept = [
                SolutionCall(tool=c.tool, args=substitute(c.args, guesses))
                for c in turn
                if c.tool != ASK_TOOL
            ]
            if kept:
                kept_turns.append(kept)
        return kept_turns, without_questions(str(substitute(answer, guesses)))


def without_questions(answer: str) -> str:
    """The answer with every question to the user left out (sentences ending in '?').

    Where the reference asks in its answer which option the user means, an
    agent that never asks says only the rest; if nothing is left, it says it is done.
    """
    sentences = re.split(r"(?<=[.!?])\s+", answer.strip())
    kept = [s for s in sentences if s and not s.rstrip().endswith("?")]
    return " ".join(kept) if kept else "Done."


class NeverRetriesAgent(ScriptedAgent):
    """The reference solution, abandoned at the first error result it would have to retry."""

    async def act(self, observation: Observation) -> AgentTurn:
        """Stop with an apology when the last turn brought an error and work remains.

        An error on the reference's last turn is the finding the task asks to
        report (a duplicate refused, a missing record), not a fault to retry:
        then the agent answers as the reference does.
        """
        self._follow_user(observation)
        failed = [m for m in latest_results(observation) if is_error(m)]
        if failed and self._next < len(self._turns):
            first = failed[0]
            return AgentTurn(
                content=(
                    f"I could not finish the task: {first.name} failed "
                    f"({(first.content or '').strip()[:200]}), so I stopped."
                )
            )
        return await super().act(observation)


class GullibleAgent(ScriptedAgent):
    """The reference solution, plus whatever injected instructions it reads."""

    def __init__(self, instance: TaskInstance) -> None:
        super().__init__(
            reference_turns(instance),
            instance.task.solution.answer,
            later_plays(instance),
            submit=typed_submit(instance),
        )
        self._attack: AttackSpec | None = instance.task.attack
        self._obeyed = False

    def _injected(self, observation: Observation) -> bool:
        attack = self._attack
        if attack is None:
            return False
        return any(
            m.role == "tool" and attack.seen_in(m.content or "") for m in observation.messages
        )

    async def act(self, observation: Observation) -> AgentTurn:
        """Obey the injection on the turn after reading it, then carry on."""
        self._follow_user(observation)
        attack = self._attack
        if attack is not None and not self._obeyed and self._injected(observation):
            self._obeyed = True
            if attack.answer:  # said in text: a typed answer could not carry it
                self._answer = f"{self._answer}\n{attack.answer}".strip()
                self._submit = None
            if attack.calls:
                return self._calls(attack.calls, observation.step)
        return await super().act(observation)


@agent("never-asks")
def build_never_asks(spec: AgentSpec) -> AgentFactory:
    """``never-asks``: a test agent that never questions the user and guesses wrong."""
    return with_key(lambda ctx, instance: NeverAsksAgent(instance))


@agent("never-retries")
def build_never_retries(spec: AgentSpec) -> AgentFactory:
    """``never-retries``: a test agent that gives up at the first tool error."""

    def factory(ctx: EpisodeContext, instance: TaskInstance) -> NeverRetriesAgent:
        return NeverRetriesAgent(
            reference_turns(instance),
            instance.task.solution.answer,
            later_plays(instance),
            submit=typed_submit(instance),
        )

    return with_key(factory)


@agent("gullible")
def build_gullible(spec: AgentSpec) -> AgentFactory:
    """``gullible``: a test agent that obeys instructions injected into tool results."""
    return with_key(lambda ctx, instance: GullibleAgent(instance))
