"""A model's reply in one neutral, cacheable shape, and its conversion to an AgentTurn.

Every adapter turns its provider's response into a :class:`ModelReply` (tool-call
arguments kept as the text the model sent); the cache stores exactly that, so a
replayed reply goes through the same conversion as a live one.

A reply is what the agent under test sent (the model, or the HTTP agent), so it passes
the one ingress for agent bytes (``toolproof.trajectory.ingress``) before anything else
sees it, the cache included: :func:`checked_reply` refuses text that is not valid Unicode
(a lone surrogate, which a JSON ``\\udcff`` escape makes), an over-long text, and token
counts or costs that are not finite, non-negative and bounded (:func:`reported_count`
for the adapters reading a provider's usage), as an :class:`ReplyRefused`, an
``agent_error`` that names the field.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from toolproof.trajectory import ToolCall, Usage, ingress

from ..base import AgentTurn
from ..limits import MAX_ARGUMENT_CHARS, MAX_CALLS_PER_TURN, MAX_NAME_CHARS, AgentFault


class ReplyRefused(AgentFault):
    """A reply the ingress refused (its text, its counts): the agent's error, never retried."""


class ReplyCall(BaseModel):
    """One tool call as the model sent it."""

    id: str = ""
    name: str
    arguments: str = Field("", description="The arguments' JSON text, verbatim.")


class ModelReply(BaseModel):
    """What a model answered, before toolproof interprets it."""

    content: str | None = None
    tool_calls: list[ReplyCall] = Field(default_factory=list)
    input_tokens: int | None = Field(
        None, description="Prompt tokens, when the provider reports them."
    )
    output_tokens: int | None = Field(None, description="Completion tokens, when reported.")
    cost_usd: float | None = Field(
        None, description="Cost the callee reported itself (HTTP agents)."
    )
    give_up: bool = False
    stop_reason: str | None = None

    def output_chars(self) -> int:
        """Characters of the reply, for an offline token estimate."""
        return len(self.content or "") + sum(
            len(c.name) + len(c.arguments) for c in self.tool_calls
        )

    def turn(self, usage: Usage | None, retries: int) -> AgentTurn:
        """The agent turn this reply makes."""
        return AgentTurn(
            content=self.content,
            tool_calls=[tool_call(c) for c in self.tool_calls],
            usage=usage,
            give_up=self.give_up,
            retries=retries,
        )


def tool_call(call: ReplyCall) -> ToolCall:
    """A ToolCall; arguments that are not a JSON object are kept raw, for the gateway to refuse.

    An empty argument string means no arguments (some providers send ``""`` for
    tools without parameters). Parsed arguments still meet the ingress with the rest of
    the turn (``agents.limits.checked_turn``): a ``"\\udcff"`` escape or ``NaN`` in them
    is the agent's error there.
    """
    text = call.arguments
    if not text.strip():
        return ToolCall(id=call.id, name=call.name, arguments={})
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        value = None
    if isinstance(value, dict):
        return ToolCall(id=call.id, name=call.name, arguments=value)
    return ToolCall(id=call.id, name=call.name, raw_arguments=text)


def arguments_text(call: ToolCall) -> str:
    """The arguments of an earlier call as the model sent them (raw when they were malformed)."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def reported_count(value: object, field: str) -> int | None:
    """A token count a provider reported (``None``: not reported), through the ingress.

    Raises:
        ReplyRefused: not a whole number from 0 to ``ingress.MAX_COUNT``.
    """
    if value is None:
        return None
    try:
        return ingress.count(value, field)
    except ingress.IngressError as exc:
        raise ReplyRefused(str(exc)) from None


def checked_reply(reply: ModelReply, what: str) -> ModelReply:
    """``reply`` if every field an agent sent passes the ingress.

    Args:
        reply: What the adapter read (or the cache held).
        what: Names the callee in messages, e.g. ``openai:gpt-4o``.

    Raises:
        ReplyRefused: naming the field: text that is not valid Unicode or over a limit,
            more calls than a turn may hold, a count or cost that is not finite,
            non-negative and bounded.
    """
    where = f"the reply of {what}:"
    try:
        if reply.content is not None:
            ingress.text(reply.content, f"{where} content")
        if len(reply.tool_calls) > MAX_CALLS_PER_TURN:
            raise ingress.IngressError(
                f"{where} tool_calls",
                f"has {len(reply.tool_calls):,} calls; the limit is {MAX_CALLS_PER_TURN} per turn",
            )
        for i, call in enumerate(reply.tool_calls):
            ingress.text(call.id, f"{where} tool_calls[{i}].id", MAX_NAME_CHARS)
            ingress.text(call.name, f"{where} tool_calls[{i}].name", MAX_NAME_CHARS)
            ingress.text(call.arguments, f"{where} tool_calls[{i}].arguments", MAX_ARGUMENT_CHARS)
        for name in ("input_tokens", "output_tokens"):
            value = getattr(reply, name)
            if value is not None:
                ingress.count(value, f"{where} usage.{name}")
        ingress.cost(reply.cost_usd, f"{where} usage.cost_usd")
        if reply.stop_reason is not None:
            ingress.text(reply.stop_reason, f"{where} stop_reason", MAX_NAME_CHARS)
    except ingress.IngressError as exc:
        raise ReplyRefused(str(exc)) from None
    return reply
