"""The OpenAI Chat Completions wire format (`POST /v1/chat/completions`).

Field names follow the official `openai` SDK's types (`ChatCompletion`,
`ChatCompletionChunk`, `CompletionUsage`), so the SDK, and every framework on
top of it, parses the replies as it would parse OpenAI's.
"""

from __future__ import annotations

from typing import Any

from toolproof.testing._replies import ScriptedReply
from toolproof.testing._request import (
    ChatMessage,
    ChatRequest,
    MessageToolCall,
    OfferedTool,
    Role,
    derived_id,
    json_text,
)
from toolproof.testing._wire import (
    BadRequest,
    Wire,
    optional_number,
    pieces,
    require_dict,
    require_list,
    sse,
    text_of,
    usage_of,
)

# A fixed `created` timestamp keeps responses byte-identical across replays.
CREATED = 1_700_000_000
SYSTEM_FINGERPRINT = "fp_toolproof_testing"
_ROLES: dict[str, Role] = {
    "system": "system",
    "developer": "system",
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
}


def parse_request(body: dict[str, Any]) -> ChatRequest:
    """Read a chat completions request body into a neutral `ChatRequest`.

    Args:
        body: The JSON body.

    Returns:
        The neutral request.

    Raises:
        BadRequest: If a required field is missing or has the wrong shape.
    """
    model = body.get("model")
    if not isinstance(model, str):
        raise BadRequest(f"model must be a string, got {model!r}")
    messages = tuple(
        _parse_message(require_dict(raw, f"messages[{i}]"), f"messages[{i}]")
        for i, raw in enumerate(require_list(body.get("messages"), "messages"))
    )
    tools = []
    for i, raw in enumerate(require_list(body.get("tools") or [], "tools")):
        function = require_dict(
            require_dict(raw, f"tools[{i}]").get("function"), f"tools[{i}].function"
        )
        name = function.get("name")
        if not isinstance(name, str):
            raise BadRequest(f"tools[{i}].function.name must be a string, got {name!r}")
        tools.append(
            OfferedTool(name, function.get("description"), dict(function.get("parameters") or {}))
        )
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest(f"seed must be an integer, got {seed!r}")
    return ChatRequest(
        provider="openai",
        model=model,
        messages=messages,
        tools=tuple(tools),
        temperature=optional_number(body, "temperature"),
        seed=seed,
        stream=body.get("stream") is True,
        raw=body,
    )


def _parse_message(raw: dict[str, Any], where: str) -> ChatMessage:
    role = _ROLES.get(str(raw.get("role")))
    if role is None:
        raise BadRequest(f"{where}.role must be one of {sorted(_ROLES)}, got {raw.get('role')!r}")
    calls = []
    for i, call in enumerate(require_list(raw.get("tool_calls") or [], f"{where}.tool_calls")):
        at = f"{where}.tool_calls[{i}]"
        function = require_dict(require_dict(call, at).get("function"), f"{at}.function")
        calls.append(
            MessageToolCall(
                id=str(call.get("id", "")),
                name=str(function.get("name", "")),
                arguments=str(function.get("arguments", "")),
            )
        )
    tool_call_id = raw.get("tool_call_id")
    return ChatMessage(
        role=role,
        content=text_of(raw.get("content"), f"{where}.content"),
        tool_calls=tuple(calls),
        tool_call_id=str(tool_call_id) if tool_call_id is not None else None,
    )


def _finish_reason(reply: ScriptedReply) -> str:
    if reply.truncated:
        return "length"
    return "tool_calls" if reply.tool_calls else "stop"


def _usage(reply: ScriptedReply, request: ChatRequest) -> dict[str, int]:
    prompt, completion = usage_of(reply, request)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _call_id(reply: ScriptedReply, request: ChatRequest, index: int) -> str:
    scripted = reply.tool_calls[index].id
    return scripted or derived_id("call_", request.fingerprint, f"tool_call:{index}")


def render_reply(reply: ScriptedReply, request: ChatRequest) -> dict[str, Any]:
    """Render a reply as a `chat.completion` object.

    Args:
        reply: The scripted reply (not an error).
        request: The request it answers.

    Returns:
        The response JSON.
    """
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content if reply.content is not None or reply.tool_calls else "",
        "refusal": None,
    }
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": _call_id(reply, request, i),
                "type": "function",
                "function": {"name": call.name, "arguments": json_text(call.arguments)},
            }
            for i, call in enumerate(reply.tool_calls)
        ]
    return {
        "id": derived_id("chatcmpl-", request.fingerprint, "completion"),
        "object": "chat.completion",
        "created": CREATED,
        "model": request.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": _finish_reason(reply),
            }
        ],
        "usage": _usage(reply, request),
    }


def render_stream(reply: ScriptedReply, request: ChatRequest, chunk_chars: int) -> list[str]:
    """Render a reply as `chat.completion.chunk` server-sent events.

    The text and each call's arguments arrive in deltas of `chunk_chars`
    characters; a tool call's first delta carries its index, id and name, later
    ones its index and an arguments fragment, as OpenAI streams them. With
    `stream_options.include_usage`, every chunk has `usage: null` and a last
    chunk with no choices carries the usage. The stream ends with `[DONE]`.

    Args:
        reply: The scripted reply (not an error).
        request: The request it answers.
        chunk_chars: The largest text or arguments delta.

    Returns:
        The events, in order.
    """
    options = request.raw.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    base: dict[str, Any] = {
        "id": derived_id("chatcmpl-", request.fingerprint, "completion"),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": request.model,
        "system_fingerprint": SYSTEM_FINGERPRINT,
    }

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        data = {
            **base,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            data["usage"] = None
        return sse(data)

    first_content = "" if reply.content is not None or not reply.tool_calls else None
    events = [chunk({"role": "assistant", "content": first_content, "refusal": None})]
    events += [chunk({"content": piece}) for piece in pieces(reply.content or "", chunk_chars)]
    for i, call in enumerate(reply.tool_calls):
        head = {
            "index": i,
            "id": _call_id(reply, request, i),
            "type": "function",
            "function": {"name": call.name, "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            for piece in pieces(json_text(call.arguments), chunk_chars)
        ]
    events.append(chunk({}, _finish_reason(reply)))
    if include_usage:
        events.append(sse({**base, "choices": [], "usage": _usage(reply, request)}))
    events.append("data: [DONE]\n\n")
    return events


_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    409: ("conflict_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """OpenAI's error JSON for a status.

    Args:
        status: The HTTP status.
        message: The human-readable message.

    Returns:
        `{"error": {"message", "type", "param", "code"}}`.
    """
    kind, code = _ERROR_KINDS.get(status, ("server_error" if status >= 500 else "api_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def model_object(name: str) -> dict[str, Any]:
    """OpenAI's `model` object for a model name."""
    return {"id": name, "object": "model", "created": CREATED, "owned_by": "toolproof"}


def model_list(names: list[str]) -> dict[str, Any]:
    """OpenAI's `GET /v1/models` page for model names."""
    return {"object": "list", "data": [model_object(name) for name in names]}


WIRE = Wire(
    "openai", parse_request, render_reply, render_stream, error_body, model_object, model_list
)
