"""SDK clients and request fixtures shared by the scripted model server tests.

SDK clients are made with a short timeout and an explicit retry budget, so a
broken server fails a test in seconds, and scripted errors carry a
`retry_after` of a millisecond, so retries cost no real time.
"""

from __future__ import annotations

import anthropic
import openai

from toolproof.testing import ModelServer

TIMEOUT_S = 20.0
FAST_RETRY_S = 0.001
USER = [{"role": "user", "content": "What is 2 + 3?"}]
ADD_TOOL_OPENAI = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}
ADD_TOOL_ANTHROPIC = {
    "name": "add",
    "description": "Add two integers.",
    "input_schema": ADD_TOOL_OPENAI["function"]["parameters"],
}


def openai_client(server: ModelServer, max_retries: int = 0) -> openai.OpenAI:
    """A sync OpenAI client pointed at the server."""
    return openai.OpenAI(
        base_url=server.base_url, api_key="test", max_retries=max_retries, timeout=TIMEOUT_S
    )


def async_openai_client(server: ModelServer, max_retries: int = 0) -> openai.AsyncOpenAI:
    """An async OpenAI client pointed at the server."""
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="test", max_retries=max_retries, timeout=TIMEOUT_S
    )


def anthropic_client(server: ModelServer, max_retries: int = 0) -> anthropic.Anthropic:
    """A sync Anthropic client pointed at the server."""
    return anthropic.Anthropic(
        base_url=server.anthropic_base_url,
        api_key="test",
        max_retries=max_retries,
        timeout=TIMEOUT_S,
    )


def async_anthropic_client(server: ModelServer, max_retries: int = 0) -> anthropic.AsyncAnthropic:
    """An async Anthropic client pointed at the server."""
    return anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url,
        api_key="test",
        max_retries=max_retries,
        timeout=TIMEOUT_S,
    )
