"""Token counts in a provider's reply, whatever its shape: OpenAI, Anthropic, OpenAI-compatible.

A reply is a JSON body or a server-sent-event stream. The counts are read from:

* OpenAI and compatible servers: ``usage.prompt_tokens`` / ``completion_tokens``, cached
  prompt tokens in ``usage.prompt_tokens_details.cached_tokens`` (part of the prompt
  count); in a stream, the last chunk's ``usage`` (the gateway asks for it);
* Anthropic: ``usage.input_tokens`` / ``output_tokens``, with ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens`` on top of the input count; in a stream, ``message_start``
  carries the input side and ``message_delta`` the output count.

Every count passes :func:`toolproof.trajectory.ingress.count` (a whole number from 0 to
``MAX_COUNT``): a negative, fractional, infinite or absurd count, or a bool, counts as 0
rather than reaching a price or a total.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from toolproof.trajectory import ingress


@dataclass(frozen=True)
class Counted:
    """Tokens the provider reported for one call.

    Attributes:
        input_tokens: Every prompt token, cached ones included.
        output_tokens: Completion tokens.
        cached_input_tokens: Prompt tokens read from the provider's prompt cache.
    """

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0


def _int(value: Any) -> int:
    try:
        return ingress.count(value, "usage")
    except ingress.IngressError:
        return 0


def _has_int(mapping: dict[str, Any], *names: str) -> bool:
    return any(type(mapping.get(n)) in (int, float) for n in names)  # a bool is no count


def _openai(usage: dict[str, Any]) -> Counted | None:
    if not _has_int(usage, "prompt_tokens", "completion_tokens"):
        return None
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Counted(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")), cached)


def _anthropic(usage: dict[str, Any]) -> tuple[int, int, int] | None:
    """(input including cache reads and writes, output, cache reads), or None."""
    if not _has_int(usage, "input_tokens", "output_tokens"):
        return None
    read = _int(usage.get("cache_read_input_tokens"))
    written = _int(usage.get("cache_creation_input_tokens"))
    return _int(usage.get("input_tokens")) + read + written, _int(usage.get("output_tokens")), read


def json_usage(api: str, body: Any) -> Counted | None:
    """The counts in a JSON reply of ``api`` (``openai`` or ``anthropic``), or None."""
    usage = body.get("usage") if isinstance(body, dict) else None
    if not isinstance(usage, dict):
        return None
    if api == "anthropic":
        counted = _anthropic(usage)
        return None if counted is None else Counted(*counted)
    return _openai(usage)


def sse_events(text: str) -> list[Any]:
    """The JSON ``data:`` payloads of a server-sent-event stream (others skipped)."""
    events: list[Any] = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if not payload or payload == "[DONE]":
            continue
        try:
            events.append(json.loads(payload))
        except ValueError:
            continue
    return events


def stream_usage(api: str, text: str) -> Counted | None:
    """The counts in a streamed reply of ``api``, or None when it reported none."""
    events = sse_events(text)
    if api != "anthropic":
        found = None
        for event in events:
            usage = event.get("usage") if isinstance(event, dict) else None
            if isinstance(usage, dict):
                found = _openai(usage) or found
        return found
    start: tuple[int, int, int] | None = None
    output: int | None = None
    for event in events:
        if not isinstance(event, dict):
            continue
        if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
            usage = event["message"].get("usage")
            if isinstance(usage, dict):
                start = _anthropic(usage)
        elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
            counted = event["usage"].get("output_tokens")
            output = _int(counted) if isinstance(counted, int) else output
    if start is None and output is None:
        return None
    tokens_in, tokens_out, read = start or (0, 0, 0)
    return Counted(tokens_in, tokens_out if output is None else output, read)
