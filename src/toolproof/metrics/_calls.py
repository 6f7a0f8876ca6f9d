"""Per-episode analysis of tool calls: accuracy and redundancy (see docs/metrics.md).

Accuracy, for each call of an episode:

* *reference tool*: its name is one of the tools the task's reference solution
  calls (``TaskFacts.reference_tools``);
* *offered tool*: the gateway knew the tool, i.e. the result's ``error_kind`` is
  not ``unknown_tool`` (the gateway answers ``unknown_tool`` exactly when the name
  is not among the episode's tools);
* *valid arguments*: the result's ``error_kind`` is neither ``invalid_arguments``
  nor ``unknown_tool``.

Redundancy: a call is *redundant* when it is *repeated* or *unused*; the rule
is calibrated so that the reference solution (the ``oracle``) scores 0 on every
built-in suite, while a read made twice for nothing or never used still counts.

* *repeated*: an earlier call of the episode with the same name and arguments
  succeeded on the same world state (equal state digests before both calls,
  from ``Step.state_digest``; two calls in one step count only when that step
  changed nothing) **and returned the same content**. A call whose result
  differs (polling a job, a garbled answer fixed on retry) learned something.
* *unused*: a successful call, in a step that changed nothing, whose result
  decided nothing, i.e. none of these holds:

  1. *the reference solution also makes it*: its tool is one the reference
     solution calls, within the reference's call count (the first
     ``reference_calls`` calls of the episode to reference tools; records keep
     the reference's tool names and count, not its arguments);
  2. *its result is referenced later*: an informative value of the result
     appears in a later step's call arguments or in the final answer. Values
     are word and number tokens of the result's JSON leaf values and the
     lengths of its non-empty lists (of its text when it is not JSON);
     informative ones are those not already in the call's own arguments or in
     the prompt, and a result with none is never unused;
  3. *it precedes a branch*: the next step changed state (a check before an
     action).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from toolproof.spec.answer import ANSWER_TOOL
from toolproof.trajectory import Step, Trajectory

_TOKEN = re.compile(r"[A-Za-z0-9_]+(?:[.\-@:/][A-Za-z0-9_]+)*")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_INVALID = frozenset({"invalid_arguments", "unknown_tool"})


@dataclass(frozen=True)
class CallStats:
    """Counts over one episode's tool calls.

    Attributes:
        calls: All tool calls.
        to_reference: Calls to a tool the reference solution uses.
        to_offered: Calls to a tool the episode offered.
        valid_arguments: Calls whose arguments passed schema validation.
        errors: Calls whose result is an error.
        error_kinds: Error results by ``error_kind``.
        repeated: Repeated calls.
        unused: Calls whose result was never used.
        redundant: Calls that are repeated or unused (each counted once).
    """

    calls: int = 0
    to_reference: int = 0
    to_offered: int = 0
    valid_arguments: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    repeated: int = 0
    unused: int = 0
    redundant: int = 0


def _leaves(value: Any, *, counts: bool = False) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item, counts=counts)
    elif isinstance(value, list):
        if counts and value:
            yield str(len(value))
        for item in value:
            yield from _leaves(item, counts=counts)
    elif isinstance(value, str):
        yield value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield repr(value)


def tokens(text: str) -> set[str]:
    """Word and number tokens of a text, normalised: lower case, ``15.0`` -> ``15``.

    A path-like token also yields its ``/`` parts, so ``reports/q1.md`` and
    ``/workspace/reports/q1.md`` share ``q1.md``.
    """
    out: set[str] = set()
    for raw in _TOKEN.findall(text):
        parts = [raw, *raw.split("/")] if "/" in raw else [raw]
        for part in parts:
            if _NUMBER.fullmatch(part):
                number = float(part)
                out.add(str(int(number)) if number.is_integer() else repr(number))
            elif part:
                out.add(part.lower())
    return out


@functools.lru_cache(maxsize=256)
def _text_tokens(text: str) -> frozenset[str]:
    """:func:`tokens`, cached: prompts repeat across the episodes of a run."""
    return frozenset(tokens(text))


_SHORT_LEAF = 200
"""Leaves up to this long have their tokens cached: argument and result values (ids,
names, numbers) repeat across a run's episodes; a long one (a file's text) is not kept."""


@functools.lru_cache(maxsize=4096)
def _leaf_tokens(leaf: str) -> frozenset[str]:
    return frozenset(tokens(leaf))


def _value_tokens(value: Any, *, counts: bool = False) -> set[str]:
    out: set[str] = set()
    for leaf in _leaves(value, counts=counts):
        out |= _leaf_tokens(leaf) if len(leaf) <= _SHORT_LEAF else tokens(leaf)
    return out


def result_tokens(content: str) -> set[str]:
    """Tokens of a result: its leaf values and list lengths when JSON, else its text's."""
    try:
        return _value_tokens(json.loads(content), counts=True)
    except ValueError:
        return tokens(content)


def _changed(step: Step) -> bool:
    return step.diff is not None and not step.diff.empty


def _pre_digests(steps: list[Step]) -> list[str]:
    """The world digest before each step ("" when unknown: the first step changed state)."""
    before = []
    previous = steps[0].state_digest if steps and not _changed(steps[0]) else ""
    for step in steps:
        before.append(previous)
        previous = step.state_digest
    return before


def _decided(steps: list[Step], reference: set[str], budget: int) -> set[str]:
    """Ids of calls used by rules 1 and 3: within the reference's calls, or before a write."""
    used: set[str] = set()
    for i, step in enumerate(steps):
        before_write = i + 1 < len(steps) and _changed(steps[i + 1])
        for call in step.message.tool_calls:
            if call.name in reference and budget > 0:
                budget -= 1
                used.add(call.id)
            elif before_write:
                used.add(call.id)
    return used


def analyze_calls(
    trajectory: Trajectory, reference_tools: Collection[str], reference_calls: int = 0
) -> CallStats:
    """Accuracy and redundancy counts of one episode's tool calls (module docstring).

    Args:
        trajectory: The episode.
        reference_tools: Names of the tools the reference solution calls.
        reference_calls: How many calls the reference solution makes.
    """
    steps = trajectory.steps
    reference = set(reference_tools)
    decided = _decided(steps, reference, reference_calls)
    prompt_tokens: set[str] = set()
    for message in trajectory.prompt:
        prompt_tokens |= _text_tokens(message.content or "")
    answer_tokens = tokens(trajectory.final_answer or "")
    last_use: dict[str, int] = {}
    arg_tokens: dict[str, set[str]] = {}
    for step in steps:
        for call in step.message.tool_calls:
            arg_tokens[call.id] = found = _value_tokens(call.arguments)
            for token in found:
                last_use[token] = step.index
    errors: Counter[str] = Counter()
    seen: dict[tuple[str, str, str], tuple[int, str]] = {}
    n = to_ref = to_offered = valid = repeated = unused = redundant = 0
    for step, before in zip(steps, _pre_digests(steps), strict=True):
        by_id = {r.call_id: r for r in step.results}
        for call in step.message.tool_calls:
            if call.name == ANSWER_TOOL:  # handing in the typed answer is not tool use
                continue
            n += 1
            res = by_id.get(call.id)
            kind = None if res is None else res.error_kind
            to_ref += call.name in reference
            to_offered += kind != "unknown_tool"
            valid += kind not in _INVALID
            if res is not None and res.is_error:
                errors[kind or "error"] += 1
            args = json.dumps(call.arguments, sort_keys=True, default=str)
            key = (call.name, call.raw_arguments or args, before)
            earlier = seen.get(key)
            is_repeat = (
                earlier is not None
                and (earlier[0] < step.index or not _changed(step))
                and (res is None or res.is_error or res.content == earlier[1])
            )
            is_unused = False
            if res is not None and not res.is_error:
                seen[key] = (step.index, res.content)
                if not _changed(step) and not is_repeat and call.id not in decided:
                    informative = result_tokens(res.content) - arg_tokens[call.id]
                    informative -= prompt_tokens
                    is_unused = bool(informative) and not any(
                        last_use.get(t, -1) > step.index or t in answer_tokens for t in informative
                    )
            repeated += is_repeat
            unused += is_unused
            redundant += is_repeat or is_unused
    return CallStats(
        calls=n,
        to_reference=to_ref,
        to_offered=to_offered,
        valid_arguments=valid,
        errors=sum(errors.values()),
        error_kinds=dict(errors),
        repeated=repeated,
        unused=unused,
        redundant=redundant,
    )
