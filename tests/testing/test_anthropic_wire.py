"""The official `anthropic` SDK, sync and async, against the scripted server."""

from __future__ import annotations

import json

import anthropic
import pytest
from sdk_clients import (
    ADD_TOOL_ANTHROPIC,
    FAST_RETRY_S,
    USER,
    anthropic_client,
    async_anthropic_client,
)

from toolproof.testing import ModelServer, ScriptedError, ScriptedReply, ScriptedToolCall


def test_text_reply_with_estimated_usage() -> None:
    with ModelServer([ScriptedReply("Five.")]) as server, anthropic_client(server) as client:
        message = client.messages.create(model="claude-test", max_tokens=100, messages=USER)
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Five."
    assert message.stop_reason == "end_turn"
    assert message.model == "claude-test"
    assert message.role == "assistant"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (4, 2)


def test_tool_use_reply_and_request_normalisation() -> None:
    reply = ScriptedReply(
        content="Let me add.", tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})]
    )
    with ModelServer([reply, ScriptedReply("5")]) as server, anthropic_client(server) as client:
        first = client.messages.create(
            model="claude-test",
            max_tokens=100,
            system="You add numbers.",
            messages=USER,
            tools=[ADD_TOOL_ANTHROPIC],
        )
        tool_use = first.content[1]
        assert tool_use.type == "tool_use"
        client.messages.create(
            model="claude-test",
            max_tokens=100,
            system=[{"type": "text", "text": "You add numbers."}],
            messages=[
                *USER,
                {"role": "assistant", "content": first.content},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": tool_use.id, "content": "5"},
                        {"type": "text", "text": "Go on."},
                    ],
                },
            ],
            tools=[ADD_TOOL_ANTHROPIC],
        )
        first_request, second = server.chat_requests
    assert first.stop_reason == "tool_use"
    assert tool_use.name == "add"
    assert tool_use.input == {"a": 2, "b": 3}
    assert tool_use.id.startswith("toolu_")
    assert first_request.provider == "anthropic"
    assert first_request.tool_names == ["add"]
    assert first_request.tools[0].parameters["required"] == ["a", "b"]
    assert [m.role for m in second.messages] == ["system", "user", "assistant", "tool", "user"]
    assert second.messages[0].content == "You add numbers."
    assert second.messages[2].content == "Let me add."
    assert second.messages[2].tool_calls[0].parsed_arguments() == {"a": 2, "b": 3}
    assert second.messages[3].tool_call_id == tool_use.id
    assert second.messages[3].content == "5"
    assert second.messages[4].content == "Go on."
    assert second.assistant_turns == 1


def test_parallel_tool_use_blocks() -> None:
    reply = ScriptedReply(
        tool_calls=[ScriptedToolCall("add", {"a": 1, "b": 2}), ScriptedToolCall("add", {"a": 3})]
    )
    with ModelServer([reply]) as server, anthropic_client(server) as client:
        message = client.messages.create(model="c", max_tokens=100, messages=USER)
    blocks = [block for block in message.content if block.type == "tool_use"]
    assert [block.input for block in blocks] == [{"a": 1, "b": 2}, {"a": 3}]
    assert len({block.id for block in blocks}) == 2


def test_streaming_events_reassemble_text_and_tool_input() -> None:
    arguments = {"path": "notes/a-rather-long-file-name.txt", "lines": [1, 2, 3]}
    reply = ScriptedReply(
        content="Reading it now.",
        tool_calls=[ScriptedToolCall("read", arguments), ScriptedToolCall("read", {"path": "b"})],
        usage=(50, 9),
    )
    with (
        ModelServer([reply], stream_chunk_chars=4) as server,
        anthropic_client(server) as client,
    ):
        events = list(client.messages.create(model="c", max_tokens=99, messages=USER, stream=True))
    types = [event.type for event in events]
    assert types[0] == "message_start"
    assert types[-2:] == ["message_delta", "message_stop"]
    text = "".join(
        e.delta.text
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "text_delta"
    )
    partial: dict[int, str] = {}
    for event in events:
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            partial[event.index] = partial.get(event.index, "") + event.delta.partial_json
    starts = [e.content_block for e in events if e.type == "content_block_start"]
    assert text == "Reading it now."
    assert [block.type for block in starts] == ["text", "tool_use", "tool_use"]
    assert json.loads(partial[1]) == arguments
    assert json.loads(partial[2]) == {"path": "b"}
    delta = events[-2]
    assert delta.type == "message_delta"
    assert delta.delta.stop_reason == "tool_use"
    assert delta.usage.output_tokens == 9
    assert events[0].message.usage.input_tokens == 50


def test_stream_helper_builds_the_final_message() -> None:
    reply = ScriptedReply(
        content="On it.", tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})], usage=(20, 5)
    )
    with (
        ModelServer([reply], stream_chunk_chars=2) as server,
        anthropic_client(server) as client,
        client.messages.stream(model="c", max_tokens=100, messages=USER) as stream,
    ):
        streamed_text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert streamed_text == "On it."
    assert final.content[0].text == "On it."
    assert final.content[1].input == {"a": 2, "b": 3}
    assert final.stop_reason == "tool_use"
    assert (final.usage.input_tokens, final.usage.output_tokens) == (20, 5)


def test_malformed_input_is_streamed_verbatim() -> None:
    broken = '{"path": "a.txt", "mode": '
    reply = ScriptedReply(tool_calls=[ScriptedToolCall("read", broken)])
    with ModelServer([reply, reply]) as server, anthropic_client(server) as client:
        events = client.messages.create(model="c", max_tokens=9, messages=USER, stream=True)
        streamed = "".join(
            e.delta.partial_json
            for e in events
            if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
        )
        plain = client.messages.create(model="c", max_tokens=9, messages=USER)
    assert streamed == broken
    # Non-streamed, a tool_use input that is not a JSON object is sent as a JSON string.
    assert plain.content[0].input == broken


def test_rate_limit_is_retried_by_the_sdk() -> None:
    script = [
        ScriptedReply(error=ScriptedError(429, retry_after=FAST_RETRY_S)),
        ScriptedReply("After the wait."),
    ]
    with ModelServer(script) as server, anthropic_client(server, max_retries=1) as client:
        message = client.messages.create(model="c", max_tokens=10, messages=USER)
        assert server.calls == 2
    assert message.content[0].text == "After the wait."


@pytest.mark.parametrize(
    ("status", "exception", "error_type"),
    [
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_errors_use_the_anthropic_shape(
    status: int, exception: type[anthropic.APIStatusError], error_type: str
) -> None:
    error = ScriptedError(status, times=2, message="scripted", retry_after=FAST_RETRY_S)
    with (
        ModelServer([ScriptedReply(error=error)]) as server,
        anthropic_client(server, max_retries=1) as client,
        pytest.raises(exception) as caught,
    ):
        client.messages.create(model="c", max_tokens=10, messages=USER)
    assert server.calls == 2
    assert caught.value.status_code == status
    assert caught.value.body == {
        "type": "error",
        "error": {"type": error_type, "message": "scripted"},
    }


def test_models_endpoint_speaks_the_anthropic_shape() -> None:
    with ModelServer([]) as server, anthropic_client(server) as client:
        page = client.models.list()
        one = client.models.retrieve("claude-test")
    assert [model.id for model in page.data] == ["toolproof-scripted"]
    assert one.id == "claude-test"
    assert one.type == "model"


def test_a_doubled_v1_gets_a_hint() -> None:
    with ModelServer([]) as server:
        client = anthropic.Anthropic(base_url=server.base_url, api_key="test", max_retries=0)
        with client, pytest.raises(anthropic.NotFoundError, match="anthropic_base_url"):
            client.messages.create(model="c", max_tokens=10, messages=USER)
        assert server.calls == 0


async def test_async_client_and_async_stream() -> None:
    script = [
        ScriptedReply(tool_calls=[ScriptedToolCall("add", {"a": 2, "b": 3})]),
        ScriptedReply("It is 5."),
    ]
    with ModelServer(script) as server:
        async with async_anthropic_client(server) as client:
            first = await client.messages.create(model="c", max_tokens=50, messages=USER)
            async with client.messages.stream(
                model="c",
                max_tokens=50,
                messages=[
                    *USER,
                    {"role": "assistant", "content": first.content},
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": first.content[0].id,
                                "content": "5",
                            }
                        ],
                    },
                ],
            ) as stream:
                final = await stream.get_final_message()
        assert server.chat_requests[1].messages[-1].role == "tool"
    assert first.content[0].input == {"a": 2, "b": 3}
    assert final.content[0].text == "It is 5."
    assert final.stop_reason == "end_turn"
