"""What the OpenAI and Anthropic wire modules share.

A `Wire` bundles one provider's four translations (request body to
`ChatRequest`, reply to JSON, reply to server-sent events, message to error
JSON), so the server handles both endpoints with one code path.
"""

from __future__ import annotations

import http
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.responses import JSONResponse, Response

from toolproof.testing._replies import ScriptedError, ScriptedReply
from toolproof.testing._request import ChatRequest, Provider, estimate_tokens, json_text


class BadRequest(ValueError):
    """The request body is not what the provider's API accepts; answered with a 400."""


@dataclass(frozen=True)
class Wire:
    """One provider's wire format.

    Attributes:
        provider: The provider's name.
        parse_request: Body to neutral request; raises `BadRequest`.
        render_reply: Reply to the non-streaming response JSON.
        render_stream: Reply to the server-sent events of a streaming response,
            given the number of characters per text or argument delta.
        error_body: `(status, message)` to the provider's error JSON.
        model_object: A model name to the provider's model object.
        model_list: Model names to the provider's page of model objects.
    """

    provider: Provider
    parse_request: Callable[[dict[str, Any]], ChatRequest]
    render_reply: Callable[[ScriptedReply, ChatRequest], dict[str, Any]]
    render_stream: Callable[[ScriptedReply, ChatRequest, int], list[str]]
    error_body: Callable[[int, str], dict[str, Any]]
    model_object: Callable[[str], dict[str, Any]]
    model_list: Callable[[list[str]], dict[str, Any]]


_PHRASES = {529: "Overloaded"}


def error_response(wire: Wire, error: ScriptedError) -> Response:
    """The HTTP response for a scripted error, or one the server raises itself.

    Args:
        wire: The provider whose error JSON to use when `error.body` is `None`.
        error: The error.

    Returns:
        The response, with `retry-after` and `retry-after-ms` when
        `error.retry_after` is set, and `error.headers`.
    """
    headers = dict(error.headers)
    if error.retry_after is not None:
        headers.setdefault("retry-after", str(math.ceil(error.retry_after)))
        headers.setdefault("retry-after-ms", f"{error.retry_after * 1000:g}")
    if isinstance(error.body, str):
        return Response(error.body, error.status, headers, media_type="application/json")
    if isinstance(error.body, dict):
        return JSONResponse(error.body, error.status, headers)
    message = error.message
    if message is None:
        try:
            phrase = _PHRASES.get(error.status) or http.HTTPStatus(error.status).phrase
        except ValueError:
            phrase = "Error"
        message = f"toolproof.testing: scripted {error.status} {phrase}"
    return JSONResponse(wire.error_body(error.status, message), error.status, headers)


def usage_of(reply: ScriptedReply, request: ChatRequest) -> tuple[int, int]:
    """The `(prompt, completion)` tokens to report: scripted, else estimated.

    Args:
        reply: The reply being sent.
        request: The request it answers.

    Returns:
        The two token counts.
    """
    if reply.usage is not None:
        return reply.usage
    completion_chars = len(reply.content or "") + sum(
        len(call.name) + len(json_text(call.arguments)) for call in reply.tool_calls
    )
    return estimate_tokens(request.prompt_chars()), estimate_tokens(completion_chars)


def pieces(text: str, size: int) -> list[str]:
    """Split text into deltas of at most `size` characters.

    Args:
        text: The text to split.
        size: The largest piece.

    Returns:
        The pieces, in order; none for empty text.
    """
    return [text[i : i + size] for i in range(0, len(text), size)]


def sse(data: dict[str, Any], event: str | None = None) -> str:
    """One server-sent event carrying `data` as JSON.

    Args:
        data: The event's payload.
        event: The event name, for protocols that name them (Anthropic).

    Returns:
        The event's text, ending in the blank line that terminates it.
    """
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


def text_of(content: object, where: str) -> str | None:
    """The text of a message's content: a string, or the text parts of a list.

    Args:
        content: The `content` field as sent.
        where: Where it is, for the error message, e.g. "messages[2].content".

    Returns:
        The text (parts joined with newlines), or `None` when there is none.

    Raises:
        BadRequest: If the content is neither a string, a list nor null.
    """
    if content is None or isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise BadRequest(f"{where} must be a string or a list of parts, got {content!r}")
    texts = [
        part["text"]
        for part in content
        if isinstance(part, dict)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def require_dict(value: object, where: str) -> dict[str, Any]:
    """Check that a JSON value is an object.

    Args:
        value: The value.
        where: Where it is, for the error message.

    Returns:
        The value, typed as a dict.

    Raises:
        BadRequest: If it is not an object.
    """
    if not isinstance(value, dict):
        raise BadRequest(f"{where} must be an object, got {value!r}")
    return value


def require_list(value: object, where: str) -> list[Any]:
    """Check that a JSON value is an array.

    Args:
        value: The value.
        where: Where it is, for the error message.

    Returns:
        The value, typed as a list.

    Raises:
        BadRequest: If it is not an array.
    """
    if not isinstance(value, list):
        raise BadRequest(f"{where} must be an array, got {value!r}")
    return value


def optional_number(body: dict[str, Any], key: str) -> float | None:
    """A numeric option of the body, or `None` when absent.

    Args:
        body: The request body.
        key: The option's name.

    Returns:
        The number as a float.

    Raises:
        BadRequest: If it is present and not a number.
    """
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise BadRequest(f"{key} must be a number, got {value!r}")
    return float(value)
