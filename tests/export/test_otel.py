"""The OpenTelemetry export: OTLP JSON, one trace per episode, GenAI attribute names."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from toolproof.export import export_run


def _traces(run: Path) -> list[list[dict[str, Any]]]:
    buffer = io.BytesIO()
    export_run(run, "otel", buffer)
    traces = []
    for line in buffer.getvalue().decode().splitlines():
        request = json.loads(line)
        (resource_spans,) = request["resourceSpans"]
        names = {a["key"] for a in resource_spans["resource"]["attributes"]}
        assert {"service.name", "service.version"} <= names
        (scope,) = resource_spans["scopeSpans"]
        assert scope["scope"]["name"] == "toolproof.export"
        traces.append(scope["spans"])
    return traces


def _attrs(span: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in span["attributes"]:
        ((kind, value),) = item["value"].items()
        out[item["key"]] = int(value) if kind == "intValue" else value
    return out


def _by_episode(run: Path) -> dict[str, list[dict[str, Any]]]:
    return {_attrs(spans[0])["gen_ai.conversation.id"]: spans for spans in _traces(run)}


def test_every_span_is_well_formed_otlp_json(varied_run: Path) -> None:
    traces = _traces(varied_run)
    assert len(traces) == 6
    trace_ids = set()
    for spans in traces:
        root = spans[0]
        assert "parentSpanId" not in root
        assert re.fullmatch(r"[0-9a-f]{32}", root["traceId"])
        trace_ids.add(root["traceId"])
        span_ids = [s["spanId"] for s in spans]
        assert len(set(span_ids)) == len(span_ids)
        for span in spans:
            assert span["traceId"] == root["traceId"]
            assert re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
            assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"]) > 0
            assert span["kind"] in (1, 3)
            assert span["status"]["code"] in (1, 2)
            assert _attrs(span)["gen_ai.operation.name"] in {"invoke_agent", "chat", "execute_tool"}
        for child in spans[1:]:
            assert child["parentSpanId"] == root["spanId"]
            assert int(child["startTimeUnixNano"]) >= int(root["startTimeUnixNano"])
            assert int(child["endTimeUnixNano"]) <= int(root["endTimeUnixNano"])
    assert len(trace_ids) == 6
    # The same run exports the same file.
    assert _traces(varied_run) == traces


def test_one_span_per_model_call_and_per_tool_call_with_genai_names(varied_run: Path) -> None:
    episodes = _by_episode(varied_run)
    spans = episodes["alpha#0"]
    root, *children = spans
    top = _attrs(root)
    assert root["name"] == "invoke_agent openai:gpt-4o-mini"
    assert top["gen_ai.operation.name"] == "invoke_agent"
    assert top["gen_ai.agent.name"] == "openai:gpt-4o-mini"
    assert top["gen_ai.request.model"] == "gpt-4o-mini"
    assert (top["gen_ai.usage.input_tokens"], top["gen_ai.usage.output_tokens"]) == (280, 35)
    assert top["toolproof.cost_usd"] == 0.0021
    assert top["toolproof.passed"] is True and top["toolproof.level"] == "perfect"
    assert top["toolproof.task.id"] == "alpha" and top["toolproof.epoch"] == 0

    chats = [s for s in children if _attrs(s)["gen_ai.operation.name"] == "chat"]
    tools = [s for s in children if _attrs(s)["gen_ai.operation.name"] == "execute_tool"]
    assert len(chats) == 2  # one per model call (two turns)
    assert [_attrs(c)["gen_ai.usage.input_tokens"] for c in chats] == [120, 160]
    assert [_attrs(c)["gen_ai.usage.output_tokens"] for c in chats] == [30, 5]
    assert [_attrs(c)["toolproof.cost_usd"] for c in chats] == [0.0012, 0.0009]
    assert all(c["name"] == "chat gpt-4o-mini" and c["kind"] == 3 for c in chats)
    assert all(_attrs(c)["gen_ai.provider.name"] == "openai" for c in chats)
    assert [(_attrs(t)["gen_ai.tool.name"], _attrs(t)["gen_ai.tool.call.id"]) for t in tools] == [
        ("lookup", "c1"),
        ("update", "c2"),
    ]
    lookup, update = tools
    assert lookup["status"]["code"] == 1 and "error.type" not in _attrs(lookup)
    assert update["status"] == {"code": 2, "message": "qty must be below 3"}
    assert _attrs(update)["error.type"] == "tool_error"
    # Tool calls follow the model turn that made them.
    assert int(lookup["startTimeUnixNano"]) >= int(chats[0]["endTimeUnixNano"])


def test_calls_the_gateway_recorded_are_spans_of_their_own(varied_run: Path) -> None:
    spans = _by_episode(varied_run)["delta#0"]
    chats = [s for s in spans if _attrs(s)["gen_ai.operation.name"] == "chat"]
    assert len(chats) == 2  # the step's two recorded model calls, not one per turn
    assert [_attrs(c)["toolproof.cached"] for c in chats] == [False, True]
    assert all(_attrs(c)["gen_ai.provider.name"] == "openai" for c in chats)
    assert all(_attrs(c)["gen_ai.usage.input_tokens"] == 50 for c in chats)


def test_failures_and_errors_are_error_status_on_the_episode(varied_run: Path) -> None:
    episodes = _by_episode(varied_run)
    infra = episodes["beta#0"][0]
    assert infra["status"] == {"code": 2, "message": "provider outage: HTTP 503"}
    assert _attrs(infra)["toolproof.termination"] == "infra_error"
    assert _attrs(infra)["error.type"] == "infra_error"
    failed = episodes["alpha#1"][0]
    assert failed["status"]["code"] == 2
    assert _attrs(failed)["toolproof.failure_mode"] == "wrong_value"
    assert len(episodes["alpha#1"]) == 1  # no model or tool calls: the episode alone
