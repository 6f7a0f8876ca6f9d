"""What the scripted model was asked, independent of the provider that asked.

Policies decide their reply from a `ChatRequest`, so one policy serves both the
OpenAI and the Anthropic endpoint. The wire modules build it from the request
body; the raw body stays available for assertions on provider-specific fields.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
Provider = Literal["openai", "anthropic"]


@dataclass(frozen=True)
class MessageToolCall:
    """A tool call made by an earlier assistant turn of the conversation.

    Attributes:
        id: The call id the client sent back.
        name: The tool's name.
        arguments: The arguments as JSON text, exactly as the client sent them
            (Anthropic's `input` objects are JSON-encoded).
    """

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> Any:
        """The arguments decoded from JSON.

        Returns:
            The decoded value.

        Raises:
            ValueError: If the arguments are not valid JSON.
        """
        return json.loads(self.arguments)


@dataclass(frozen=True)
class ChatMessage:
    """One message of the conversation, in a shape common to both providers.

    OpenAI `developer` messages and Anthropic's top-level `system` become
    `system` messages; each Anthropic `tool_result` block becomes a `tool`
    message, as in OpenAI's format. Text parts are joined with newlines, and
    non-text parts (images, documents) are left out; read `ChatRequest.raw` for
    those.

    Attributes:
        role: "system", "user", "assistant" or "tool".
        content: The text, or `None` when the message has none.
        tool_calls: The tool calls of an assistant message.
        tool_call_id: For a `tool` message, the call it answers.
        is_error: For a `tool` message, whether the client marked the result
            as an error (Anthropic's `is_error`).
    """

    role: Role
    content: str | None = None
    tool_calls: tuple[MessageToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False


@dataclass(frozen=True)
class OfferedTool:
    """A tool the client offered the model.

    Attributes:
        name: The tool's name.
        description: Its description, if any.
        parameters: The JSON Schema of its arguments.
    """

    name: str
    description: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ChatRequest:
    """A neutral view of one chat request, as a policy sees it.

    Attributes:
        provider: "openai" for `/v1/chat/completions`, "anthropic" for
            `/v1/messages`.
        model: The model name the client asked for (echoed in the reply).
        messages: The conversation so far, normalised.
        tools: The tools offered.
        temperature: The sampling temperature, if sent.
        seed: The seed, if sent (OpenAI only; Anthropic has none).
        stream: Whether the client asked for a stream.
        raw: The request body as received.
    """

    provider: Provider
    model: str
    messages: tuple[ChatMessage, ...]
    tools: tuple[OfferedTool, ...] = ()
    temperature: float | None = None
    seed: int | None = None
    stream: bool = False
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def tool_names(self) -> list[str]:
        """The names of the offered tools, in the order offered."""
        return [tool.name for tool in self.tools]

    @property
    def assistant_turns(self) -> int:
        """How many assistant messages the conversation already holds."""
        return sum(1 for message in self.messages if message.role == "assistant")

    @property
    def last_user_text(self) -> str | None:
        """The text of the most recent user message, if there is one."""
        for message in reversed(self.messages):
            if message.role == "user":
                return message.content
        return None

    @cached_property
    def fingerprint(self) -> str:
        """A hex digest of the normalised conversation (not of model or options).

        Equal conversations, such as a retry of the same request, have equal
        fingerprints. The server derives response and tool-call ids from it, and
        `sequence_policy` counts scripted errors per fingerprint.
        """
        data = [
            [m.role, m.content, [[c.id, c.name, c.arguments] for c in m.tool_calls], m.tool_call_id]
            for m in self.messages
        ]
        encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(encoded.encode()).hexdigest()

    def prompt_chars(self) -> int:
        """The number of characters of prompt text, tool calls and tool schemas."""
        total = 0
        for message in self.messages:
            total += len(message.content or "")
            total += sum(len(call.name) + len(call.arguments) for call in message.tool_calls)
        for tool in self.tools:
            total += len(tool.name) + len(tool.description or "") + len(json.dumps(tool.parameters))
        return total


def estimate_tokens(chars: int) -> int:
    """Estimate a token count from a character count (about four characters a token).

    Args:
        chars: The number of characters.

    Returns:
        `ceil(chars / 4)`, and at least 1 so usage is never zero.
    """
    return max(1, math.ceil(chars / 4))


def derived_id(prefix: str, fingerprint: str, salt: str) -> str:
    """A deterministic id for a response or tool call.

    Args:
        prefix: The provider's id prefix, e.g. "call_" or "toolu_".
        fingerprint: The conversation fingerprint.
        salt: What distinguishes ids within one response, e.g. the call index.

    Returns:
        `prefix` followed by 24 hex digits.
    """
    return prefix + hashlib.sha256(f"{fingerprint}:{salt}".encode()).hexdigest()[:24]


def json_text(arguments: dict[str, Any] | str) -> str:
    """The JSON text of scripted tool-call arguments; a `str` is returned verbatim."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
