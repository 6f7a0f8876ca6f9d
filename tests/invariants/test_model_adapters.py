"""The ``openai:`` and ``anthropic:`` adapters against a model server sending generated replies.

Replies shaped as the API's (a chat completion, a message) carry hostile values anywhere a
model puts text or numbers: content with lone surrogates, tool names and ids of any text,
arguments that are not JSON or hold NaN, token counts negative, NaN or past any limit. Each
such reply is the agent's (the model is the agent under test): never an infra error. What
the adapters retry as a provider's failure (an error status, a disconnect, a body that is not
a completion) is an injected infrastructure fault, and only then may an episode be one.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import (
    FAST,
    RawServer,
    Reply,
    check_run,
    fuzz,
    garbage_body,
    hostile_arguments,
    hostile_number,
    hostile_text,
    replies_mode,
    run_fuzzed,
    small_suite,
    tool_names,
    wire_body,
)
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("openai", reason="needs pip install 'toolproof[openai]'")
pytest.importorskip("anthropic", reason="needs pip install 'toolproof[anthropic]'")


def _arguments_text(value: Any) -> str:
    try:
        return json.dumps(value)  # NaN as NaN, a surrogate as \udcff
    except (ValueError, RecursionError):
        return "{"


arguments_text = st.one_of(hostile_arguments.map(_arguments_text), hostile_text)
usage_numbers = st.one_of(hostile_number, st.integers(0, 500))

openai_call = st.fixed_dictionaries(
    {
        "id": st.one_of(st.just("call_1"), hostile_text),
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": tool_names, "arguments": arguments_text}),
    }
)
completion = st.fixed_dictionaries(
    {
        "id": st.just("chatcmpl-1"),
        "object": st.just("chat.completion"),
        "created": st.just(0),
        "model": st.just("m"),
        "choices": st.tuples(
            st.fixed_dictionaries(
                {
                    "index": st.just(0),
                    "finish_reason": st.sampled_from(["stop", "tool_calls", "length"]),
                    "message": st.fixed_dictionaries(
                        {"role": st.just("assistant")},
                        optional={
                            "content": st.one_of(st.none(), hostile_text),
                            "tool_calls": st.lists(openai_call, max_size=3),
                        },
                    ),
                }
            )
        ).map(list),
    },
    optional={
        "usage": st.fixed_dictionaries(
            {}, optional={"prompt_tokens": usage_numbers, "completion_tokens": usage_numbers}
        )
    },
)
block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": hostile_text}),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": st.one_of(st.just("toolu_1"), hostile_text),
            "name": tool_names,
            "input": hostile_arguments,
        }
    ),
)
message = st.fixed_dictionaries(
    {
        "id": st.just("msg_1"),
        "type": st.just("message"),
        "role": st.just("assistant"),
        "model": st.just("m"),
        "content": st.lists(block, max_size=3),
        "stop_reason": st.sampled_from(["end_turn", "tool_use", "max_tokens"]),
    },
    optional={
        "usage": st.fixed_dictionaries(
            {},
            optional={
                "input_tokens": usage_numbers,
                "output_tokens": usage_numbers,
                "cache_read_input_tokens": usage_numbers,
            },
        )
    },
)


def replies_of(shape: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Reply]]:
    reply = st.builds(
        Reply,
        status=st.sampled_from([200, 200, 200, 200, 200, 429, 500]),
        body=st.one_of(shape.flatmap(wire_body), shape.flatmap(wire_body), garbage_body),
        mode=replies_mode,
    )
    return st.lists(reply, min_size=1, max_size=3)


def _provider_failure(replies: list[Reply], provider: str) -> bool:
    """Whether the script holds what the adapter retries as the provider's failure."""
    for reply in replies:
        if reply.status != 200 or reply.mode == "disconnect":
            return True
        try:
            body = json.loads(bytes(reply.body))
        except (ValueError, RecursionError):
            return True  # not JSON: "the response is not a chat completion", retried
        if not isinstance(body, dict):
            return True
        if provider == "openai" and not (isinstance(body.get("choices"), list) and body["choices"]):
            return True
    return False


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


def _run(suite: Path, runs: Path, provider: str, replies: list[Reply]) -> None:
    run_dir = Path(tempfile.mkdtemp(dir=runs))
    with RawServer(replies).running() as server:
        base = f"{server.url}/v1" if provider == "openai" else server.url
        options = {"base_url": base, "api_key": "test", **FAST}
        run_fuzzed(suite, run_dir, f"{provider}:m", options)
    check_run(run_dir, infra_injected=_provider_failure(replies, provider))


@fuzz
@given(replies=replies_of(completion))
def test_the_openai_adapter_against_a_server_sending_anything(
    suite: Path, runs: Path, replies: list[Reply]
) -> None:
    _run(suite, runs, "openai", replies)


@fuzz
@given(replies=replies_of(message))
def test_the_anthropic_adapter_against_a_server_sending_anything(
    suite: Path, runs: Path, replies: list[Reply]
) -> None:
    _run(suite, runs, "anthropic", replies)
