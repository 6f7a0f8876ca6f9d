"""What decides the next reply: a `Script` consumed in order, or a policy.

A policy is any callable from `ChatRequest` to `ScriptedReply`. A `Script` is
the simplest one: the next unused reply, whoever asks. That is deterministic
for one conversation at a time, but when several episodes run concurrently
their requests interleave in an order the scheduler picks, so which episode
gets which reply changes from run to run. `sequence_policy` fixes that by
keying the script position on the conversation itself (how many assistant turns
it already holds), so every conversation gets the same script whatever the
interleaving.

Policies run on the server's event loop, one request at a time; they must
return quickly (use `ScriptedReply.latency_s` for a slow model).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Literal, TypeAlias

from toolproof.testing._replies import ScriptedError, ScriptedReply
from toolproof.testing._request import ChatRequest

Policy: TypeAlias = Callable[[ChatRequest], ScriptedReply]
"""Decides the reply to one request."""

WhenExhausted: TypeAlias = Literal["error", "done"]
"""What a script answers once its replies are used up: a 500 error, or "done"."""


def _checked(replies: Iterable[ScriptedReply]) -> tuple[ScriptedReply, ...]:
    checked = tuple(replies)
    for i, reply in enumerate(checked):
        if not isinstance(reply, ScriptedReply):
            raise TypeError(f"script reply {i} must be a ScriptedReply, got {reply!r}")
    return checked


def _check_when_exhausted(when_exhausted: str) -> None:
    if when_exhausted not in ("error", "done"):
        raise ValueError(f"when_exhausted must be 'error' or 'done', got {when_exhausted!r}")


def exhausted_reply(when_exhausted: WhenExhausted, length: int) -> ScriptedReply:
    """The answer to a request the script has no reply left for.

    Args:
        when_exhausted: "done" answers with the text "done"; "error" with a
            500 that tells the SDK not to retry (`x-should-retry: false`), so
            the test fails at once with this message instead of after retries.
        length: How many replies the script had, for the message.

    Returns:
        The reply.
    """
    if when_exhausted == "done":
        return ScriptedReply(content="done")
    message = (
        f"toolproof.testing: the script is exhausted: all {length} replies were used and "
        "another request came; add replies, or pass when_exhausted='done' to answer 'done'"
    )
    error = ScriptedError(500, message=message, headers={"x-should-retry": "false"})
    return ScriptedReply(error=error)


class Script:
    """Replies consumed in order, one per request, by all conversations together.

    An entry whose `error` has `times=n` answers the next n requests, then the
    script moves on. Thread-safe.

    Args:
        replies: The replies, in order.
        when_exhausted: What to answer after the last reply: "error" (default,
            a 500 the SDKs do not retry, naming the problem) or "done".

    Raises:
        TypeError: If an entry is not a `ScriptedReply`.
        ValueError: If `when_exhausted` is neither "error" nor "done".
    """

    def __init__(
        self, replies: Iterable[ScriptedReply], *, when_exhausted: WhenExhausted = "error"
    ) -> None:
        _check_when_exhausted(when_exhausted)
        self.replies = _checked(replies)
        self.when_exhausted: WhenExhausted = when_exhausted
        self._lock = threading.Lock()
        self._index = 0
        self._errors_served = 0

    def __repr__(self) -> str:
        return f"Script({len(self.replies)} replies, used={self.used})"

    @property
    def used(self) -> int:
        """How many entries have been used up."""
        with self._lock:
            return self._index

    @property
    def exhausted(self) -> bool:
        """Whether every entry has been used up."""
        return self.used >= len(self.replies)

    def __call__(self, request: ChatRequest) -> ScriptedReply:
        """Answer with the next reply.

        Args:
            request: The request (not consulted: a script answers in order).

        Returns:
            The next reply, or the exhausted answer.
        """
        with self._lock:
            if self._index >= len(self.replies):
                return exhausted_reply(self.when_exhausted, len(self.replies))
            reply = self.replies[self._index]
            if reply.error is not None:
                self._errors_served += 1
                if self._errors_served < reply.error.times:
                    return reply
            self._index += 1
            self._errors_served = 0
            return reply


class _PerConversation:
    """The policy behind `sequence_policy(per_conversation=True)`."""

    def __init__(self, replies: tuple[ScriptedReply, ...], when_exhausted: WhenExhausted) -> None:
        self.length = len(replies)
        self.when_exhausted: WhenExhausted = when_exhausted
        # Turn k is the k-th reply that is not an error, with the errors scripted before it.
        self.turns: list[tuple[list[ScriptedError], ScriptedReply | None]] = []
        errors: list[ScriptedError] = []
        for reply in replies:
            if reply.error is not None:
                errors.append(reply.error)
            else:
                self.turns.append((errors, reply))
                errors = []
        if errors:
            self.turns.append((errors, None))
        self._lock = threading.Lock()
        self._errors_served: dict[str, int] = {}

    def __call__(self, request: ChatRequest) -> ScriptedReply:
        turn = request.assistant_turns
        if turn >= len(self.turns):
            return exhausted_reply(self.when_exhausted, self.length)
        errors, reply = self.turns[turn]
        if errors:
            with self._lock:
                served = self._errors_served.get(request.fingerprint, 0)
                before = 0
                for error in errors:
                    if served < before + error.times:
                        self._errors_served[request.fingerprint] = served + 1
                        return ScriptedReply(error=error)
                    before += error.times
        if reply is None:
            return exhausted_reply(self.when_exhausted, self.length)
        return reply


def sequence_policy(
    replies: Iterable[ScriptedReply],
    *,
    per_conversation: bool = True,
    when_exhausted: WhenExhausted = "error",
) -> Policy:
    """A policy that plays a script, per conversation or for all together.

    With `per_conversation=True`, a request whose conversation already holds k
    assistant messages gets the k-th reply that is not an error, so concurrent
    episodes each play the whole script and the outcome does not depend on how
    their requests interleave. Scripted errors do not take a turn: the errors
    listed before the k-th reply answer that turn's first attempts, counted per
    conversation (`ChatRequest.fingerprint`), so an SDK's retry gets the next
    one. Clients that drop or summarise history shift the position; use a
    custom policy for those.

    Args:
        replies: The replies, in order.
        per_conversation: Key the position on the conversation (default); when
            false, this is a plain `Script`, consumed in arrival order.
        when_exhausted: What to answer past the end: "error" or "done".

    Returns:
        The policy.

    Raises:
        TypeError: If an entry is not a `ScriptedReply`.
        ValueError: If `when_exhausted` is neither "error" nor "done".
    """
    _check_when_exhausted(when_exhausted)
    if not per_conversation:
        return Script(replies, when_exhausted=when_exhausted)
    return _PerConversation(_checked(replies), when_exhausted)


def echo_policy(request: ChatRequest) -> ScriptedReply:
    """Answer with the text of the last message that is not the assistant's.

    A model that needs no script: handy for demos and for checking that a
    client's request reaches the server intact (a user prompt or a tool result
    comes back as the answer).

    Args:
        request: The request.

    Returns:
        A text reply.
    """
    for message in reversed(request.messages):
        if message.role != "assistant":
            return ScriptedReply(content=message.content or "")
    return ScriptedReply(content="")
