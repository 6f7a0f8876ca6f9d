"""What the scripted model says back, independent of any provider's wire format.

A test writes replies once, as `ScriptedReply` values, and the server renders
them as an OpenAI chat completion or an Anthropic message, streamed or not,
depending on which endpoint the client called. Keeping the reply neutral is what
lets one script drive both SDKs and every framework built on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScriptedToolCall:
    """One tool call the model makes.

    Attributes:
        name: The tool's name, as the client offered it (not checked, so tests
            can call tools that do not exist).
        arguments: A mapping is JSON-encoded by the server. A `str` is sent
            verbatim, so a test can deliver malformed JSON such as `'{"a": 1'`
            and see how the client copes.
        id: The call id. When `None`, the server derives a deterministic id
            from the conversation, so replays of the same episode carry the
            same ids.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"ScriptedToolCall.name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.arguments, dict | str):
            raise ValueError(
                "ScriptedToolCall.arguments must be a dict (JSON-encoded by the server) or a str "
                f"(sent verbatim), got {self.arguments!r} ({type(self.arguments).__name__})"
            )


@dataclass(frozen=True)
class ScriptedError:
    """An HTTP error (or garbage) the server answers with instead of a reply.

    The SDKs map the status to their exception classes (429 to
    `RateLimitError`, 5xx to `InternalServerError`, ...) and retry 408, 409,
    429 and 5xx on their own, so `times` lets one script entry cover each
    attempt of a retry loop.

    Attributes:
        status: The HTTP status code.
        body: `None` sends the provider's own error JSON for this status (with
            `message`); a `dict` is sent as JSON verbatim; a `str` is sent
            verbatim as the body, which is how to send a body that is not JSON.
        times: How many consecutive requests get this error before the script
            moves on.
        message: The human-readable message inside the provider's error JSON
            (used only when `body` is `None`).
        retry_after: Seconds the client should wait before retrying; sent as
            `retry-after` (whole seconds, rounded up) and `retry-after-ms`,
            which both SDKs prefer, so tests can retry in milliseconds.
        headers: Extra response headers, e.g. `{"x-should-retry": "false"}`,
            which both SDKs obey.
    """

    status: int
    body: dict[str, Any] | str | None = None
    times: int = 1
    message: str | None = None
    retry_after: float | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.status, int) or not 100 <= self.status <= 599:
            raise ValueError(f"ScriptedError.status must be an HTTP status, got {self.status!r}")
        if self.status < 400 and self.body is None:
            raise ValueError(
                f"ScriptedError.status {self.status} is not an error status, so there is no "
                "provider error JSON for it; pass body= (a str for garbage) or use "
                "ScriptedError.garbage()"
            )
        if not isinstance(self.times, int) or self.times < 1:
            raise ValueError(f"ScriptedError.times must be an int >= 1, got {self.times!r}")
        if self.retry_after is not None and self.retry_after < 0:
            raise ValueError(f"ScriptedError.retry_after must be >= 0, got {self.retry_after!r}")

    @classmethod
    def garbage(
        cls, text: str = "<html>502 Bad Gateway</html>", *, status: int = 200, times: int = 1
    ) -> ScriptedError:
        """An answer whose body is not JSON, sent as `application/json` all the same.

        Args:
            text: The body, sent verbatim.
            status: The status; 200 by default, the case clients handle worst.
            times: How many consecutive requests get it.

        Returns:
            The error to put in `ScriptedReply(error=...)`.
        """
        return cls(status=status, body=text, times=times)


@dataclass(frozen=True)
class ScriptedReply:
    """One answer of the scripted model: text, tool calls, or an error.

    Attributes:
        content: The assistant's text, if any.
        tool_calls: Tool calls; several make a parallel tool call.
        usage: `(prompt_tokens, completion_tokens)`. When `None`, the server
            estimates both (characters / 4), so usage is always reported.
        error: Answer with this error instead; `content` and `tool_calls` must
            then be empty.
        latency_s: Seconds to wait before answering (an `asyncio.sleep`, so
            other requests proceed meanwhile); for throughput benchmarks.
        truncated: Report that the model hit its token limit (`finish_reason`
            "length" for OpenAI, `stop_reason` "max_tokens" for Anthropic).
    """

    content: str | None = None
    tool_calls: list[ScriptedToolCall] = field(default_factory=list)
    usage: tuple[int, int] | None = None
    error: ScriptedError | None = None
    latency_s: float = 0.0
    truncated: bool = False

    def __post_init__(self) -> None:
        if self.content is not None and not isinstance(self.content, str):
            raise ValueError(f"ScriptedReply.content must be a str or None, got {self.content!r}")
        for call in self.tool_calls:
            if not isinstance(call, ScriptedToolCall):
                raise ValueError(
                    f"ScriptedReply.tool_calls must hold ScriptedToolCall values, got {call!r}"
                )
        if self.error is not None and (self.content is not None or self.tool_calls):
            raise ValueError(
                "a ScriptedReply with an error cannot also have content or tool_calls; "
                "put the error in its own reply before the one that succeeds"
            )
        if self.usage is not None and (
            len(self.usage) != 2 or any(not isinstance(n, int) or n < 0 for n in self.usage)
        ):
            raise ValueError(
                "ScriptedReply.usage must be (prompt_tokens, completion_tokens) as two ints "
                f">= 0, got {self.usage!r}"
            )
        if self.latency_s < 0:
            raise ValueError(f"ScriptedReply.latency_s must be >= 0, got {self.latency_s!r}")
