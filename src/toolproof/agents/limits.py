"""What an agent hands the harness, checked before the harness touches it.

An agent's turn (from ``act()``) and a driven agent's tool call (``call_tool``) are
agent-controlled input: an in-process agent can put anything in them (a non-string
name, arguments that are not JSON, a cycle, a 10 MB string, a 5,000-digit integer,
an object whose ``__eq__`` raises) and a remote one can send any size. Everything
is copied here into plain, bounded data, or refused with an :class:`AgentFault`
that names the field and the limit, so that no such input can crash the harness
later and end the episode as an ``infra_error`` that would be retried and then
left out of the scores (invariant 4). The limits are documented in
``docs/evaluate-your-agent.md``.
"""

from __future__ import annotations

from typing import Any, TypeVar

from toolproof.trajectory import ToolCall, Usage, ingress

from .base import AgentTurn

MAX_CONTENT_CHARS = ingress.MAX_TEXT_CHARS
"""Characters of a turn's text (its content or final answer)."""
MAX_ARGUMENT_CHARS = ingress.MAX_JSON_CHARS
"""Characters of one call's arguments as JSON (or of its raw argument text)."""
MAX_CALLS_PER_TURN = 64
"""Tool calls in one turn."""
MAX_NAME_CHARS = 256
"""Characters of a tool name or call id."""
MAX_DEPTH = ingress.MAX_DEPTH
"""Nesting of lists and objects in one call's arguments."""


class AgentFault(Exception):
    """The agent handed the harness something malformed or too big: an ``agent_error``."""


def _text(value: object, field: str, limit: int) -> str:
    try:
        return ingress.text(value, field, limit)
    except ingress.IngressError as exc:
        raise AgentFault(str(exc)) from None


def plain_arguments(arguments: object, field: str = "arguments") -> dict[str, Any]:
    """A JSON-object copy of a call's arguments, through the one ingress for agent bytes.

    Raises:
        AgentFault: not a dict, not JSON (a set, an object, a cycle, an integer too long
            to print, NaN, a lone surrogate, a nesting too deep), or too big.
    """
    try:
        return ingress.json_object(arguments, field, MAX_ARGUMENT_CHARS)
    except ingress.IngressError as exc:
        raise AgentFault(str(exc)) from None


def checked_model_call(call: object) -> dict[str, Any]:
    """A plain copy of a model call to list on a step (what the model gateway summarizes:
    a reply of up to 64 KiB, so the bound is a text's, not one call's arguments').

    Raises:
        AgentFault: not a JSON object of plain, bounded data.
    """
    try:
        return ingress.json_object(call, "model call", MAX_CONTENT_CHARS)
    except ingress.IngressError as exc:
        raise AgentFault(str(exc)) from None


def _call(call: object, field: str) -> ToolCall:
    if not isinstance(call, ToolCall):
        raise AgentFault(f"{field} must be a ToolCall, got {type(call).__name__}")
    values = dict(vars(call))  # the fields as they are now, not as validated at creation
    raw = values.get("raw_arguments")
    return ToolCall(
        id=_text(values.get("id"), f"{field}.id", MAX_NAME_CHARS),
        name=_text(values.get("name"), f"{field}.name", MAX_NAME_CHARS),
        arguments=plain_arguments(values.get("arguments"), f"{field}.arguments"),
        raw_arguments=None
        if raw is None
        else _text(raw, f"{field}.raw_arguments", MAX_ARGUMENT_CHARS),
    )


def _usage(usage: object) -> Usage | None:
    if usage is None:
        return None
    if not isinstance(usage, Usage):
        raise AgentFault(f"turn.usage must be a Usage or None, got {type(usage).__name__}")
    return checked_usage(dict(vars(usage)), "turn.usage")


def checked_usage(values: dict[str, Any], field: str = "usage") -> Usage:
    """A Usage from an agent's reported numbers: counts and cost finite and non-negative.

    Raises:
        AgentFault: a count or cost that is not a finite, non-negative number.
    """
    try:
        return Usage(
            input_tokens=ingress.count(values.get("input_tokens", 0), f"{field}.input_tokens"),
            output_tokens=ingress.count(values.get("output_tokens", 0), f"{field}.output_tokens"),
            estimated=values.get("estimated") is True,
            cost_usd=ingress.cost(values.get("cost_usd"), f"{field}.cost_usd"),
        )
    except ingress.IngressError as exc:
        raise AgentFault(str(exc)) from None


T = TypeVar("T")

_CHECKERS: set[type] = set()
"""Toolproof's agent wrappers whose ``act`` returns :func:`checked_turn`'s own copy."""


def checks_its_turns(cls: type[T]) -> type[T]:
    """Mark toolproof's own wrapper class whose ``act`` returns :func:`checked_turn`'s
    copy, made where the agent's code runs (e.g. on its own thread): the engine takes
    that copy as it is instead of checking it twice (:func:`engine_checked_turn`)."""
    _CHECKERS.add(cls)
    return cls


def engine_checked_turn(agent: object, turn: object, what: str = "act()") -> AgentTurn:
    """``turn`` checked by :func:`checked_turn`, unless ``agent`` is exactly one of the
    wrappers marked with :func:`checks_its_turns` (its ``act`` returned that check's own
    copy; no agent code holds it).

    Raises:
        AgentFault: as :func:`checked_turn`.
    """
    if type(agent) in _CHECKERS and type(turn) is AgentTurn:
        return turn
    return checked_turn(turn, what)


def checked_turn(turn: object, what: str = "act()") -> AgentTurn:
    """A plain, bounded copy of an agent's turn.

    Args:
        turn: What the agent returned.
        what: Names the source in messages, e.g. ``act() of step 3``.

    Raises:
        AgentFault: not an AgentTurn, a field of the wrong type, or over a limit.
    """
    try:
        return _checked(turn, what)
    except AgentFault:
        raise
    except Exception as exc:  # an odd object's own methods (__eq__, __len__, ...) raised
        raise AgentFault(f"{what} returned a turn that cannot be read: {_error(exc)}") from None


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _checked(turn: object, what: str) -> AgentTurn:
    if not isinstance(turn, AgentTurn):
        raise AgentFault(f"{what} returned {type(turn).__name__}, not AgentTurn")
    values = dict(vars(turn))  # the fields as they are now, not as validated at creation
    content = values.get("content")
    calls = values.get("tool_calls")
    if not isinstance(calls, list):
        raise AgentFault(f"turn.tool_calls must be a list, got {type(calls).__name__}")
    calls = list.copy(calls)
    if len(calls) > MAX_CALLS_PER_TURN:
        raise AgentFault(
            f"the turn has {len(calls):,} tool calls; the limit is {MAX_CALLS_PER_TURN} per turn"
        )
    give_up, retries = values.get("give_up"), values.get("retries")
    if not isinstance(give_up, bool):
        raise AgentFault(f"turn.give_up must be a bool, got {type(give_up).__name__}")
    if type(retries) is not int or not 0 <= retries < 10**6:
        raise AgentFault(f"turn.retries must be an int from 0, got {type(retries).__name__}")
    return AgentTurn(
        content=None if content is None else _text(content, "turn.content", MAX_CONTENT_CHARS),
        tool_calls=[_call(c, f"turn.tool_calls[{i}]") for i, c in enumerate(calls)],
        usage=_usage(values.get("usage")),
        give_up=bool(give_up),
        retries=retries,
    )
