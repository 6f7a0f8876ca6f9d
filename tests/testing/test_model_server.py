"""`ModelServer` itself: recording, policies over the wire, errors, lifecycle, concurrency."""

from __future__ import annotations

import asyncio
import threading
import time

import anthropic
import httpx
import openai
import pytest
from sdk_clients import (
    FAST_RETRY_S,
    USER,
    anthropic_client,
    async_anthropic_client,
    async_openai_client,
    openai_client,
)

from toolproof.testing import (
    ChatRequest,
    ModelServer,
    Script,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
    echo_policy,
    sequence_policy,
)


def test_requests_are_recorded_in_order_across_providers() -> None:
    with ModelServer([ScriptedReply("a"), ScriptedReply("b"), ScriptedReply("c")]) as server:
        with openai_client(server) as client:
            client.chat.completions.create(model="m1", messages=USER, temperature=0.2, seed=7)
        with anthropic_client(server) as client:
            client.messages.create(
                model="m2", max_tokens=5, messages=USER, extra_body={"temperature": 0.5}
            )
        with openai_client(server) as client:
            client.chat.completions.create(model="m3", messages=USER, stream=True).close()
        bodies = server.requests
        requests = server.chat_requests
        bodies.clear()  # a copy: the server's record is untouched
        assert server.calls == 3
        assert [body["model"] for body in server.requests] == ["m1", "m2", "m3"]
    assert [(r.provider, r.model, r.stream) for r in requests] == [
        ("openai", "m1", False),
        ("anthropic", "m2", False),
        ("openai", "m3", True),
    ]
    assert (requests[0].temperature, requests[0].seed) == (0.2, 7)
    assert (requests[1].temperature, requests[1].seed) == (0.5, None)
    assert requests[1].raw["max_tokens"] == 5
    assert requests[0].last_user_text == "What is 2 + 3?"


def test_echo_policy_answers_with_the_prompt() -> None:
    with ModelServer(echo_policy) as server, openai_client(server) as client:
        completion = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "ping 42"}]
        )
    assert completion.choices[0].message.content == "ping 42"


def test_a_failing_policy_answers_500_without_retries() -> None:
    def policy(request: ChatRequest) -> ScriptedReply:
        raise KeyError("no reply for this")

    with (
        ModelServer(policy) as server,
        openai_client(server, max_retries=3) as client,
        pytest.raises(openai.InternalServerError, match="the policy raised KeyError"),
    ):
        client.chat.completions.create(model="m", messages=USER)
    assert server.calls == 1
    (error,) = server.errors
    assert isinstance(error, KeyError)


def test_a_policy_returning_the_wrong_type_is_reported() -> None:
    with (
        ModelServer(lambda request: "hello") as server,
        openai_client(server) as client,
        pytest.raises(openai.InternalServerError, match="not a ScriptedReply"),
    ):
        client.chat.completions.create(model="m", messages=USER)
    assert isinstance(server.errors[0], TypeError)


def test_an_exhausted_script_fails_loudly_and_at_once() -> None:
    with (
        ModelServer([ScriptedReply("only one")]) as server,
        openai_client(server, max_retries=3) as client,
    ):
        client.chat.completions.create(model="m", messages=USER)
        with pytest.raises(openai.InternalServerError, match="script is exhausted: all 1 replies"):
            client.chat.completions.create(model="m", messages=USER)
        assert server.calls == 2  # x-should-retry: false stopped the SDK from retrying


def test_an_exhausted_script_can_answer_done() -> None:
    script = Script([ScriptedReply("first")], when_exhausted="done")
    with ModelServer(script) as server, openai_client(server) as client:
        answers = [
            client.chat.completions.create(model="m", messages=USER).choices[0].message.content
            for _ in range(3)
        ]
    assert answers == ["first", "done", "done"]


def test_requests_the_api_would_reject_get_a_400() -> None:
    with (
        ModelServer([ScriptedReply("unused")]) as server,
        httpx.Client(base_url=server.url) as http,
    ):
        not_json = http.post("/v1/chat/completions", content=b"{nope")
        not_object = http.post("/v1/messages", json=[1, 2])
        no_messages = http.post("/v1/chat/completions", json={"model": "m"})
        bad_role = http.post("/v1/messages", json={"model": "m", "messages": [{"role": "x"}]})
        assert server.calls == 0
    assert not_json.status_code == 400
    assert "not JSON" in not_json.json()["error"]["message"]
    assert not_object.json()["type"] == "error"
    assert no_messages.json()["error"]["message"] == "messages must be an array, got None"
    assert "messages[0].role must be 'user' or 'assistant'" in bad_role.json()["error"]["message"]


def test_unknown_paths_get_a_404_naming_the_endpoints() -> None:
    with ModelServer([]) as server, httpx.Client(base_url=server.url) as http:
        response = http.post("/v1/responses", json={})
    assert response.status_code == 404
    assert "POST /v1/chat/completions" in response.json()["error"]["message"]


def test_ids_are_derived_from_the_conversation() -> None:
    def ids() -> list[str]:
        reply = ScriptedReply(tool_calls=[ScriptedToolCall("a"), ScriptedToolCall("b")])
        with ModelServer([reply]) as server, openai_client(server) as client:
            completion = client.chat.completions.create(model="m", messages=USER)
        calls = completion.choices[0].message.tool_calls or []
        return [completion.id, *(call.id for call in calls)]

    first, second = ids(), ids()
    assert first == second
    assert len(set(first)) == 3


def test_lifecycle() -> None:
    server = ModelServer([ScriptedReply("hi")])
    with pytest.raises(RuntimeError, match="no port yet"):
        _ = server.base_url
    assert server.start() is server
    with pytest.raises(RuntimeError, match="already running"):
        server.start()
    url = server.url
    assert server.base_url == f"{url}/v1"
    assert server.anthropic_base_url == url
    assert url.startswith("http://127.0.0.1:")
    assert "calls=0" in repr(server)
    server.stop()
    server.stop()  # idempotent
    assert not [t for t in threading.enumerate() if t.name == "toolproof-model-server"]
    with httpx.Client() as http, pytest.raises(httpx.ConnectError):
        http.get(f"{url}/v1/models")


def test_stop_does_not_hang_on_a_request_in_flight() -> None:
    server = ModelServer([ScriptedReply("late", latency_s=60)]).start()
    outcome: list[BaseException | str] = []

    def call() -> None:
        with openai_client(server) as client:
            try:
                client.chat.completions.create(model="m", messages=USER)
                outcome.append("answered")
            except openai.APIError as exc:
                outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 30
    while server.calls == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    caller.join(timeout=30)
    assert time.monotonic() - started < 30
    assert not caller.is_alive()
    assert outcome and isinstance(outcome[0], openai.APIError)


async def test_concurrent_conversations_are_deterministic_with_sequence_policy() -> None:
    script = [
        ScriptedReply(error=ScriptedError(429, retry_after=FAST_RETRY_S)),
        ScriptedReply(tool_calls=[ScriptedToolCall("search", {"q": "cats"})], latency_s=0.02),
        ScriptedReply(
            tool_calls=[ScriptedToolCall("open", {"n": 1}), ScriptedToolCall("open", {})]
        ),
        ScriptedReply("Finished.", latency_s=0.01),
    ]
    policy = sequence_policy(script, per_conversation=True)

    async def episode(client: openai.AsyncOpenAI, task: int) -> list[str]:
        messages: list[dict[str, object]] = [{"role": "user", "content": f"task {task}"}]
        seen = []
        for _ in range(5):
            completion = await client.chat.completions.create(model="m", messages=messages)
            message = completion.choices[0].message
            calls = message.tool_calls or []
            seen.append(",".join(c.function.name for c in calls) or message.content or "")
            if not calls:
                return seen
            messages.append(message.model_dump(exclude_none=True))
            messages += [{"role": "tool", "tool_call_id": c.id, "content": "ok"} for c in calls]
        return seen

    with ModelServer(policy) as server:
        async with async_openai_client(server, max_retries=1) as client:
            results = await asyncio.gather(*(episode(client, task) for task in range(6)))
        assert server.calls == 6 * 4  # three turns each, plus one retried 429 each
    assert results == [["search", "open,open", "Finished."]] * 6


async def test_concurrent_anthropic_conversations_get_the_whole_script() -> None:
    policy = sequence_policy([ScriptedReply("one"), ScriptedReply("two")])

    async def episode(client: anthropic.AsyncAnthropic, task: int) -> list[str]:
        history: list[dict[str, object]] = [{"role": "user", "content": f"task {task}"}]
        texts = []
        for _ in range(2):
            message = await client.messages.create(model="c", max_tokens=9, messages=history)
            texts.append(message.content[0].text)
            history += [
                {"role": "assistant", "content": message.content[0].text},
                {"role": "user", "content": "more"},
            ]
        return texts

    with ModelServer(policy) as server:
        async with async_anthropic_client(server) as client:
            results = await asyncio.gather(*(episode(client, task) for task in range(4)))
    assert results == [["one", "two"]] * 4
