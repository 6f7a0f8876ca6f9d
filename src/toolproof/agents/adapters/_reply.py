"""A model's reply in one neutral, cacheable shape, and its conversion to an AgentTurn.

Every adapter turns its provider's response into a :class:`ModelReply` (tool-call
arguments kept as the text the model sent); the cache stores exactly that, so a
replayed reply goes through the same conversion as a live one.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from toolproof.trajectory import ToolCall, Usage

from ..base import AgentTurn


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
    tools without parameters).
    """
    text = call.arguments
    if not text.strip():
        return ToolCall(id=call.id, name=call.name, arguments={})
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return ToolCall(id=call.id, name=call.name, arguments=value)
    return ToolCall(id=call.id, name=call.name, raw_arguments=text)


def arguments_text(call: ToolCall) -> str:
    """The arguments of an earlier call as the model sent them (raw when they were malformed)."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)
