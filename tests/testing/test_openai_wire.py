"""The official `openai` SDK, sync and async, against the scripted server."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from sdk_clients import (
    ADD_TOOL_OPENAI,
    FAST_RETRY_S,
    USER,
    async_openai_client,
    openai_client,
)

from toolproof.testing import (
    ChatRequest,
    ModelServer,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
)


def test_text_reply_with_estimated_usage() -> None:
    with ModelServer([ScriptedReply("Five.")]) as server, openai_client(server) as client:
        completion = client.chat.completions.create(model="gpt-test", messages=USER)
    choice = completion.choices[0]
    assert choice.message.content == "Five."
    assert choice.message.tool_calls is None
    assert choice.finish_reason == "stop"
    assert completion.model == "gpt-test"
    assert completion.object == "chat.completion"
    # "What is 2 + 3?" is 14 characters: ceil(14 / 4) = 4 prompt tokens; "Five." is 2.
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (4, 2)
    assert completion.usage.total_tokens == 6


def test_tool_call_reply_and_scripted_usage() -> None:
    reply = ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})], usage=(100, 7))
    with ModelServer([reply]) as server, openai_client(server) as client:
        completion = client.chat.completions.create(
            model="gpt-test",
            messages=USER,
            tools=[ADD_TOOL_OPENAI],
        )
        (request,) = server.chat_requests
    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls or []
    assert call.type == "function"
    assert call.function.name == "add"
    assert json.loads(call.function.arguments) == {"a": 2, "b": 3}
    assert call.id.startswith("call_")
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (100, 7)
    assert request.tool_names == ["add"]
    assert request.tools[0].parameters["required"] == ["a", "b"]


def test_parallel_tool_calls_get_distinct_ids() -> None:
    reply = ScriptedReply(
        content="Both at once.",
        tool_calls=[
            ScriptedToolCall("add", {"a": 1, "b": 2}),
            ScriptedToolCall("add", {"a": 3, "b": 4}),
            ScriptedToolCall("lookup", {"q": "x"}, id="call_fixed"),
        ],
    )
    with ModelServer([reply]) as server, openai_client(server) as client:
        completion = client.chat.completions.create(model="m", messages=USER)
    message = completion.choices[0].message
    calls = message.tool_calls or []
    assert message.content == "Both at once."
    assert [c.function.name for c in calls] == ["add", "add", "lookup"]
    assert [json.loads(c.function.arguments) for c in calls] == [
        {"a": 1, "b": 2},
        {"a": 3, "b": 4},
        {"q": "x"},
    ]
    assert len({c.id for c in calls}) == 3
    assert calls[2].id == "call_fixed"


def test_malformed_arguments_are_delivered_verbatim() -> None:
    broken = '{"a": 2, "b": '
    reply = ScriptedReply(tool_calls=[ScriptedToolCall("add", broken)])
    with ModelServer([reply, reply]) as server, openai_client(server) as client:
        plain = client.chat.completions.create(model="m", messages=USER)
        stream = client.chat.completions.create(model="m", messages=USER, stream=True)
        streamed = "".join(
            tool.function.arguments or ""
            for chunk in stream
            for choice in chunk.choices
            for tool in choice.delta.tool_calls or []
            if tool.function is not None
        )
    assert plain.choices[0].message.tool_calls[0].function.arguments == broken
    assert streamed == broken


def test_streaming_reassembles_text_tool_calls_and_usage() -> None:
    arguments = {"a": 123456789, "b": 987654321, "note": "long enough to need many deltas"}
    reply = ScriptedReply(
        content="Adding, in parallel.",
        tool_calls=[ScriptedToolCall("add", arguments), ScriptedToolCall("add", {"a": 1, "b": 1})],
    )
    with ModelServer([reply], stream_chunk_chars=5) as server, openai_client(server) as client:
        stream = client.chat.completions.create(
            model="m",
            messages=USER,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = ""
    calls: dict[int, dict[str, str]] = {}
    finish_reasons = []
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            finish_reasons.append(choice.finish_reason)
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                call["id"] += delta.id or ""
                if delta.function is not None:
                    call["name"] += delta.function.name or ""
                    call["arguments"] += delta.function.arguments or ""
    assert text == "Adding, in parallel."
    assert [calls[i]["name"] for i in sorted(calls)] == ["add", "add"]
    assert json.loads(calls[0]["arguments"]) == arguments
    assert json.loads(calls[1]["arguments"]) == {"a": 1, "b": 1}
    assert calls[0]["id"] != calls[1]["id"]
    assert finish_reasons[-1] == "tool_calls"
    assert sum(len(c.choices[0].delta.tool_calls or []) for c in chunks if c.choices) > 10
    usage_chunks = [c for c in chunks if c.usage is not None]
    assert len(usage_chunks) == 1
    assert usage_chunks[0] is chunks[-1]
    assert chunks[-1].choices == []


def test_stream_helper_accumulates_the_final_completion() -> None:
    reply = ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})])
    with (
        ModelServer([reply], stream_chunk_chars=3) as server,
        openai_client(server) as client,
        client.chat.completions.stream(model="m", messages=USER) as stream,
    ):
        for _ in stream:
            pass
        final = stream.get_final_completion()
    (call,) = final.choices[0].message.tool_calls or []
    assert call.function.name == "add"
    assert json.loads(call.function.arguments) == {"a": 2, "b": 3}
    assert final.choices[0].finish_reason == "tool_calls"


def test_rate_limit_is_retried_by_the_sdk() -> None:
    script = [
        ScriptedReply(error=ScriptedError(429, retry_after=FAST_RETRY_S)),
        ScriptedReply("After the wait."),
    ]
    with ModelServer(script) as server, openai_client(server, max_retries=1) as client:
        completion = client.chat.completions.create(model="m", messages=USER)
        assert server.calls == 2
        assert server.requests[0] == server.requests[1]
    assert completion.choices[0].message.content == "After the wait."


def test_rate_limit_without_retries_raises_with_the_openai_error_shape() -> None:
    error = ScriptedError(429, message="Rate limit reached", retry_after=FAST_RETRY_S)
    with (
        ModelServer([ScriptedReply(error=error)]) as server,
        openai_client(server) as client,
        pytest.raises(openai.RateLimitError) as caught,
    ):
        client.chat.completions.create(model="m", messages=USER)
    assert caught.value.status_code == 429
    assert caught.value.body == {
        "message": "Rate limit reached",
        "type": "requests",
        "param": None,
        "code": "rate_limit_exceeded",
    }
    assert caught.value.response.headers["retry-after-ms"] == "1"
    assert caught.value.response.headers["retry-after"] == "1"


def test_server_errors_until_retries_run_out_raise() -> None:
    error = ScriptedError(500, times=3, retry_after=FAST_RETRY_S)
    script = [ScriptedReply(error=error), ScriptedReply("now it works")]
    with ModelServer(script) as server, openai_client(server, max_retries=2) as client:
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="m", messages=USER)
        assert server.calls == 3
        assert caught.value.type == "server_error"
        # The error used up its three requests, so the script moved on.
        after = client.chat.completions.create(model="m", messages=USER)
    assert after.choices[0].message.content == "now it works"


def test_garbage_body_reaches_the_client() -> None:
    script = [ScriptedReply(error=ScriptedError.garbage("<html>oops</html>"))]
    with (
        ModelServer(script) as server,
        openai_client(server) as client,
        pytest.raises(ValueError, match="Expecting value"),
    ):
        client.chat.completions.create(model="m", messages=USER)


def test_truncated_reply_reports_length() -> None:
    with ModelServer([ScriptedReply("cut", truncated=True)]) as server, openai_client(server) as c:
        completion = c.chat.completions.create(model="m", messages=USER)
    assert completion.choices[0].finish_reason == "length"


def test_models_endpoint_lists_models_seen() -> None:
    with ModelServer([ScriptedReply("hi")]) as server, openai_client(server) as client:
        client.chat.completions.create(model="gpt-test", messages=USER)
        names = [model.id for model in client.models.list()]
        assert client.models.retrieve("anything").id == "anything"
    assert names == ["toolproof-scripted", "gpt-test"]


async def test_async_client_text_and_tool_calls() -> None:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})]),
        ScriptedReply("It is 5."),
    ]
    with ModelServer(script) as server:
        async with async_openai_client(server) as client:
            first = await client.chat.completions.create(
                model="m",
                messages=USER,
                tools=[ADD_TOOL_OPENAI],
            )
            (call,) = first.choices[0].message.tool_calls or []
            messages = [
                *USER,
                first.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": call.id, "content": "5"},
            ]
            stream = await client.chat.completions.create(
                model="m",
                messages=messages,
                stream=True,
            )
            text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
        second = server.chat_requests[1]
    assert text == "It is 5."
    assert [m.role for m in second.messages] == ["user", "assistant", "tool"]
    assert second.messages[1].tool_calls[0].name == "add"
    assert second.messages[1].tool_calls[0].parsed_arguments() == {"a": 2, "b": 3}
    assert second.messages[2].tool_call_id == call.id
    assert second.messages[2].content == "5"
    assert second.stream is True


async def test_latency_does_not_block_other_requests() -> None:
    def policy(request: ChatRequest) -> ScriptedReply:
        slow = request.last_user_text == "slow"
        return ScriptedReply("slow" if slow else "fast", latency_s=2.0 if slow else 0.0)

    with ModelServer(policy) as server:
        async with async_openai_client(server) as client:
            slow = asyncio.create_task(
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "slow"}]
                )
            )
            async with asyncio.timeout(30):
                while server.calls == 0:
                    await asyncio.sleep(0.01)
            fast = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "fast"}]
            )
            assert not slow.done()
            assert fast.choices[0].message.content == "fast"
            assert (await slow).choices[0].message.content == "slow"
