"""A task's ``policy:`` as a gateway :data:`~toolproof.tools.CallPolicy`, and episode stops.

A :class:`TaskPolicy` is made for each episode from the suite's and the task's
:class:`~toolproof.spec.PolicySpec`. The gateway asks it about every call; a call
a rule forbids is refused (the agent sees ``refused: <message>``, the result has
``error_kind="policy_violation"``) and kept in :attr:`TaskPolicy.violations`.
With ``on_violation: end`` the first violation also asks the engine to end the
episode (termination ``policy_violation``).

Policies are a guard rail against honest mistakes, not a security boundary: a
determined agent can write any command in a way no pattern foresees
(variables, ``base64 -d | sh``, a script file). The sandbox is the boundary.

Tools and policies ask the engine to end an episode with :func:`request_stop`;
the engine reads :func:`requested_stop` after every turn.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field

from toolproof.spec import PolicyRule, PolicySpec, patterns
from toolproof.trajectory import Termination, ToolCall

from ._shellwords import path_forms, simple_commands
from .base import ToolContext

__all__ = [
    "TaskPolicy",
    "Violation",
    "request_stop",
    "requested_stop",
    "rule_matches",
]

_STOP_KEY = "toolproof.stop"


def request_stop(ctx: ToolContext, termination: Termination, reason: str) -> None:
    """Ask the engine to end the episode after the current turn (the first request wins).

    Args:
        ctx: The episode's tool context.
        termination: The termination to record, e.g. ``resource_limit``.
        reason: What happened, recorded as the trajectory's error.
    """
    ctx.scratch.setdefault(_STOP_KEY, (termination, reason))


def requested_stop(ctx: ToolContext) -> tuple[Termination, str] | None:
    """The termination and reason a tool or policy asked for, or None."""
    stop = ctx.scratch.get(_STOP_KEY)
    return stop if isinstance(stop, tuple) else None


def _word_matches(pattern: str, word: str, ignore_case: bool) -> bool:
    """One argv pattern (alternatives split by ``|``) against one shell word."""
    if ignore_case:
        pattern, word = pattern.lower(), word.lower()
    for alt in pattern.split("|"):
        if re.fullmatch(r"-[a-zA-Z0-9]", alt):
            cluster = word[1:]
            short = word.startswith("-") and not word.startswith("--") and cluster.isalnum()
            if short and alt[1] in cluster:
                return True
        elif alt.startswith("--"):
            name = word.split("=", 1)[0]
            if name == alt or (name.startswith("--") and len(name) >= 4 and alt.startswith(name)):
                return True
        elif any(fnmatch.fnmatchcase(form, alt) for form in path_forms(word)):
            return True
    return False


def _program_matches(pattern: str, word: str, ignore_case: bool) -> bool:
    if ignore_case:
        pattern, word = pattern.lower(), word.lower()
    base = word.rsplit("/", 1)[-1]
    return any(
        fnmatch.fnmatchcase(base, alt) or fnmatch.fnmatchcase(word, alt)
        for alt in pattern.split("|")
    )


def rule_matches(rule: PolicyRule, tool: str, arguments: dict[str, object]) -> bool:
    """Whether a call of ``tool`` with ``arguments`` breaks ``rule``."""
    if not any(fnmatch.fnmatchcase(tool, pattern) for pattern in rule.tools):
        return False
    value = arguments.get(rule.argument)
    if not isinstance(value, str):
        return False
    if rule.regex is not None:
        # A match that runs out of time counts as broken: a policy fails closed.
        return bool(patterns.search(rule.regex, value, ignore_case=rule.ignore_case))
    program, *wanted = rule.argv or [""]
    for words in simple_commands(value):
        if not _program_matches(program, words[0], rule.ignore_case):
            continue
        args = words[1:]
        if all(any(_word_matches(p, a, rule.ignore_case) for a in args) for p in wanted):
            return True
    return False


@dataclass(frozen=True)
class Violation:
    """A refused call: which rule, which tool, the argument it read."""

    rule: str
    tool: str
    value: str


@dataclass
class TaskPolicy:
    """The policy of one episode; call it with each :class:`ToolCall` (a ``CallPolicy``).

    Attributes:
        spec: The merged suite and task policy.
        ctx: The episode's tool context, for :func:`request_stop` (``on_violation: end``).
        violations: Every refused call, in order.
    """

    spec: PolicySpec
    ctx: ToolContext | None = None
    violations: list[Violation] = field(default_factory=list)

    @classmethod
    def build(cls, *specs: PolicySpec | None, ctx: ToolContext | None = None) -> TaskPolicy | None:
        """The policy of ``specs`` merged in order (suite, then task), or None without rules."""
        merged: PolicySpec | None = None
        for spec in specs:
            if spec is not None:
                merged = spec.over(merged)
        if merged is None or not merged.forbid:
            return None
        return cls(merged, ctx)

    @property
    def ends_episode(self) -> bool:
        """Whether a violation ends the episode."""
        return self.spec.on_violation == "end"

    def __call__(self, call: ToolCall) -> str | None:
        """A refusal message for a forbidden call, or None to allow it."""
        if self.ends_episode and self.violations:
            return "the episode ended after a policy violation; no more calls are run"
        for rule in self.spec.forbid:
            if rule_matches(rule, call.name, call.arguments):
                value = str(call.arguments.get(rule.argument, ""))
                self.violations.append(Violation(rule.label, call.name, value))
                if self.ends_episode and self.ctx is not None:
                    reason = f"policy rule {rule.label!r} forbids {call.name}({value[:200]!r})"
                    request_stop(self.ctx, Termination.POLICY_VIOLATION, reason)
                return f"{rule.message} (policy rule {rule.label!r})"
        return None
