"""The Anthropic Messages wire format (`POST /v1/messages`).

Field names follow the official `anthropic` SDK's types (`Message`,
`ToolUseBlock`, the `Raw*Event` stream events), so the SDK and its stream
helpers accumulate the replies as they would Anthropic's.
"""

from __future__ import annotations

import json
from typing import Any

from toolproof.testing._replies import ScriptedReply, ScriptedToolCall
from toolproof.testing._request import (
    ChatMessage,
    ChatRequest,
    MessageToolCall,
    OfferedTool,
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


def parse_request(body: dict[str, Any]) -> ChatRequest:
    """Read a messages request body into a neutral `ChatRequest`.

    The top-level `system` becomes a leading system message; a user message's
    `tool_result` blocks become `tool` messages placed before its text.

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
    messages: list[ChatMessage] = []
    system = text_of(body.get("system"), "system")
    if system is not None:
        messages.append(ChatMessage("system", system))
    for i, raw in enumerate(require_list(body.get("messages"), "messages")):
        messages += _parse_message(require_dict(raw, f"messages[{i}]"), f"messages[{i}]")
    tools = []
    for i, raw in enumerate(require_list(body.get("tools") or [], "tools")):
        tool = require_dict(raw, f"tools[{i}]")
        name = tool.get("name")
        if not isinstance(name, str):
            raise BadRequest(f"tools[{i}].name must be a string, got {name!r}")
        tools.append(
            OfferedTool(name, tool.get("description"), dict(tool.get("input_schema") or {}))
        )
    return ChatRequest(
        provider="anthropic",
        model=model,
        messages=tuple(messages),
        tools=tuple(tools),
        temperature=optional_number(body, "temperature"),
        seed=None,
        stream=body.get("stream") is True,
        raw=body,
    )


def _parse_message(raw: dict[str, Any], where: str) -> list[ChatMessage]:
    role = raw.get("role")
    if role not in ("user", "assistant"):
        raise BadRequest(f"{where}.role must be 'user' or 'assistant', got {role!r}")
    content = raw.get("content")
    if not isinstance(content, list):
        return [ChatMessage(role, text_of(content, f"{where}.content"))]
    results: list[ChatMessage] = []
    calls: list[MessageToolCall] = []
    for j, block in enumerate(content):
        block = require_dict(block, f"{where}.content[{j}]")
        if block.get("type") == "tool_result":
            results.append(
                ChatMessage(
                    "tool",
                    text_of(block.get("content"), f"{where}.content[{j}].content"),
                    tool_call_id=str(block.get("tool_use_id", "")),
                    is_error=block.get("is_error") is True,
                )
            )
        elif block.get("type") == "tool_use":
            arguments = json.dumps(
                block.get("input", {}), ensure_ascii=False, separators=(",", ":")
            )
            calls.append(
                MessageToolCall(str(block.get("id", "")), str(block.get("name", "")), arguments)
            )
    text = text_of(content, f"{where}.content")
    if role == "assistant":
        return [ChatMessage("assistant", text, tool_calls=tuple(calls))]
    if text is not None or not results:
        results.append(ChatMessage("user", text))
    return results


def _stop_reason(reply: ScriptedReply) -> str:
    if reply.truncated:
        return "max_tokens"
    return "tool_use" if reply.tool_calls else "end_turn"


def _tool_input(call: ScriptedToolCall) -> object:
    """The `input` of a non-streamed tool_use block.

    A mapping is sent as is. A string that holds a JSON object is decoded. Any
    other string is sent as a JSON string, verbatim: Anthropic itself never
    does that, but it lets a test see how a client copes with a bad `input`.
    """
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        decoded = json.loads(call.arguments)
    except ValueError:
        return call.arguments
    return decoded if isinstance(decoded, dict) else call.arguments


def _tool_use_id(reply: ScriptedReply, request: ChatRequest, index: int) -> str:
    scripted = reply.tool_calls[index].id
    return scripted or derived_id("toolu_", request.fingerprint, f"tool_use:{index}")


def _message(request: ChatRequest) -> dict[str, Any]:
    return {
        "id": derived_id("msg_", request.fingerprint, "message"),
        "type": "message",
        "role": "assistant",
        "model": request.model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }


def _usage(prompt: int, completion: int) -> dict[str, int]:
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def render_reply(reply: ScriptedReply, request: ChatRequest) -> dict[str, Any]:
    """Render a reply as a `message` object.

    Args:
        reply: The scripted reply (not an error).
        request: The request it answers.

    Returns:
        The response JSON.
    """
    content: list[dict[str, Any]] = []
    if reply.content is not None:
        content.append({"type": "text", "text": reply.content})
    for i, call in enumerate(reply.tool_calls):
        content.append(
            {
                "type": "tool_use",
                "id": _tool_use_id(reply, request, i),
                "name": call.name,
                "input": _tool_input(call),
            }
        )
    return {
        **_message(request),
        "content": content,
        "stop_reason": _stop_reason(reply),
        "usage": _usage(*usage_of(reply, request)),
    }


def render_stream(reply: ScriptedReply, request: ChatRequest, chunk_chars: int) -> list[str]:
    """Render a reply as Anthropic's named server-sent events.

    `message_start`, a `ping`, then per content block `content_block_start`,
    its deltas (`text_delta`, or `input_json_delta` carrying the arguments
    verbatim in `chunk_chars` fragments) and `content_block_stop`, then
    `message_delta` with the stop reason and usage, and `message_stop`.

    Args:
        reply: The scripted reply (not an error).
        request: The request it answers.
        chunk_chars: The largest text or arguments delta.

    Returns:
        The events, in order.
    """
    prompt, completion = usage_of(reply, request)
    start = {**_message(request), "usage": _usage(prompt, 1)}
    events = [
        sse({"type": "message_start", "message": start}, "message_start"),
        sse({"type": "ping"}, "ping"),
    ]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if reply.content is not None:
        deltas = [{"type": "text_delta", "text": p} for p in pieces(reply.content, chunk_chars)]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for i, call in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": _tool_use_id(reply, request, i), "name": call.name}
        deltas = [
            {"type": "input_json_delta", "partial_json": p}
            for p in pieces(json_text(call.arguments), chunk_chars)
        ]
        blocks.append(({**block, "input": {}}, deltas))
    for index, (block, deltas) in enumerate(blocks):
        events.append(
            sse(
                {"type": "content_block_start", "index": index, "content_block": block},
                "content_block_start",
            )
        )
        events += [
            sse({"type": "content_block_delta", "index": index, "delta": d}, "content_block_delta")
            for d in deltas
        ]
        events.append(sse({"type": "content_block_stop", "index": index}, "content_block_stop"))
    message_delta = {
        "type": "message_delta",
        "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }
    events.append(sse(message_delta, "message_delta"))
    events.append(sse({"type": "message_stop"}, "message_stop"))
    return events


_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Anthropic's error JSON for a status.

    Args:
        status: The HTTP status.
        message: The human-readable message.

    Returns:
        `{"type": "error", "error": {"type", "message"}}`.
    """
    fallback = "api_error" if status >= 500 else "invalid_request_error"
    return {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, fallback), "message": message},
    }


def model_object(name: str) -> dict[str, Any]:
    """Anthropic's `model` object for a model name."""
    return {"type": "model", "id": name, "display_name": name, "created_at": "2023-11-14T22:13:20Z"}


def model_list(names: list[str]) -> dict[str, Any]:
    """Anthropic's `GET /v1/models` page for model names (one page, never empty)."""
    data = [model_object(name) for name in names]
    return {"data": data, "has_more": False, "first_id": names[0], "last_id": names[-1]}


WIRE = Wire(
    "anthropic", parse_request, render_reply, render_stream, error_body, model_object, model_list
)
