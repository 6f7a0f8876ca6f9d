"""Scripts, policies and reply validation, without a server."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from toolproof.testing import (
    ChatMessage,
    ChatRequest,
    MessageToolCall,
    Script,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
    echo_policy,
    sequence_policy,
)


def request(*messages: ChatMessage) -> ChatRequest:
    """A request holding the given conversation."""
    return ChatRequest(provider="openai", model="m", messages=messages)


def conversation(task: str, turns: int) -> ChatRequest:
    """A conversation of `turns` assistant turns, each answered by the user."""
    messages = [ChatMessage("user", task)]
    for turn in range(turns):
        messages += [ChatMessage("assistant", f"a{turn}"), ChatMessage("user", f"u{turn}")]
    return request(*messages)


ERROR_429 = ScriptedError(429, times=2)
ERROR_500 = ScriptedError(500)


def test_script_answers_in_order_and_repeats_errors_times() -> None:
    script = Script([ScriptedReply(error=ERROR_429), ScriptedReply("a"), ScriptedReply("b")])
    answers = [script(request()) for _ in range(4)]
    assert [a.error for a in answers[:2]] == [ERROR_429, ERROR_429]
    assert [a.content for a in answers[2:]] == ["a", "b"]
    assert script.used == 3
    assert script.exhausted
    assert "used=3" in repr(script)


def test_script_exhausted_answers_a_non_retryable_500() -> None:
    answer = Script([])(request())
    assert answer.error is not None
    assert answer.error.status == 500
    assert answer.error.headers == {"x-should-retry": "false"}
    assert answer.error.message is not None
    assert "when_exhausted='done'" in answer.error.message


def test_script_is_thread_safe() -> None:
    script = Script([ScriptedReply(str(i)) for i in range(400)])
    answers: list[str | None] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(100):
            answer = script(request()).content
            with lock:
                answers.append(answer)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers, key=lambda a: int(a or 0)) == [str(i) for i in range(400)]


def test_sequence_policy_keys_on_assistant_turns() -> None:
    policy = sequence_policy([ScriptedReply("first"), ScriptedReply("second")])
    # Interleaved conversations each get the script from its start.
    assert policy(conversation("x", 0)).content == "first"
    assert policy(conversation("y", 0)).content == "first"
    assert policy(conversation("x", 1)).content == "second"
    assert policy(conversation("y", 1)).content == "second"
    exhausted = policy(conversation("x", 2))
    assert exhausted.error is not None and exhausted.error.status == 500


def test_sequence_policy_serves_errors_per_conversation_before_the_turn() -> None:
    policy = sequence_policy(
        [
            ScriptedReply("first"),
            ScriptedReply(error=ERROR_429),
            ScriptedReply(error=ERROR_500),
            ScriptedReply("second"),
        ],
        when_exhausted="done",
    )
    for task in ("x", "y"):
        assert policy(conversation(task, 0)).content == "first"
        retries = [policy(conversation(task, 1)) for _ in range(4)]
        assert [r.error for r in retries] == [ERROR_429, ERROR_429, ERROR_500, None]
        assert retries[3].content == "second"
        assert policy(conversation(task, 1)).content == "second"
        assert policy(conversation(task, 2)).content == "done"


def test_sequence_policy_trailing_errors_then_exhausted() -> None:
    policy = sequence_policy([ScriptedReply("a"), ScriptedReply(error=ERROR_500)])
    assert policy(conversation("x", 1)).error == ERROR_500
    after = policy(conversation("x", 1)).error
    assert after is not None and after.headers == {"x-should-retry": "false"}


def test_sequence_policy_not_per_conversation_is_a_script() -> None:
    policy = sequence_policy([ScriptedReply("a")], per_conversation=False, when_exhausted="done")
    assert isinstance(policy, Script)
    assert [policy(conversation("x", 5)).content for _ in range(2)] == ["a", "done"]


def test_echo_policy_echoes_the_last_user_or_tool_message() -> None:
    assert echo_policy(request(ChatMessage("user", "hello"))).content == "hello"
    tool = ChatMessage("tool", "42", tool_call_id="c1")
    assert echo_policy(request(ChatMessage("user", "add"), tool)).content == "42"
    assert echo_policy(request()).content == ""


def test_fingerprint_depends_on_the_conversation_only() -> None:
    a = request(ChatMessage("user", "hi"))
    b = ChatRequest(provider="anthropic", model="other", messages=a.messages, temperature=1.0)
    c = request(ChatMessage("user", "hi!"))
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != c.fingerprint


def test_message_tool_call_parses_its_arguments() -> None:
    assert MessageToolCall("c", "f", '{"a": 1}').parsed_arguments() == {"a": 1}
    with pytest.raises(ValueError):
        MessageToolCall("c", "f", "{").parsed_arguments()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: ScriptedReply("x", error=ERROR_500), "cannot also have content"),
        (lambda: ScriptedReply(usage=(1,)), "usage must be"),  # type: ignore[arg-type]
        (lambda: ScriptedReply(usage=(1, -1)), "usage must be"),
        (lambda: ScriptedReply(latency_s=-1), "latency_s must be >= 0"),
        (lambda: ScriptedReply(tool_calls=["f"]), "ScriptedToolCall values"),  # type: ignore[list-item]
        (lambda: ScriptedToolCall(""), "non-empty string"),
        (lambda: ScriptedToolCall("f", 3), "a dict"),  # type: ignore[arg-type]
        (lambda: ScriptedError(99), "HTTP status"),
        (lambda: ScriptedError(200), "not an error status"),
        (lambda: ScriptedError(429, times=0), "times must be"),
        (lambda: ScriptedError(429, retry_after=-1), "retry_after must be"),
        (lambda: Script([], when_exhausted="never"), "when_exhausted"),  # type: ignore[arg-type]
        (lambda: sequence_policy([], when_exhausted="x"), "when_exhausted"),  # type: ignore[arg-type]
    ],
)
def test_bad_values_are_rejected_with_a_message(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_script_entries_must_be_replies() -> None:
    with pytest.raises(TypeError, match="script reply 1 must be a ScriptedReply"):
        Script([ScriptedReply("a"), "b"])  # type: ignore[list-item]


def test_garbage_builds_a_non_json_body() -> None:
    error = ScriptedError.garbage("oops", status=502, times=2)
    assert (error.status, error.body, error.times) == (502, "oops", 2)
