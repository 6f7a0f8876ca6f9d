"""OpenTelemetry: the run as OTLP JSON spans, named by the GenAI semantic conventions.

One line per episode, each line an OTLP ``ExportTraceServiceRequest`` in its JSON
encoding (the layout of the OpenTelemetry Collector's file exporter, which its
``otlpjsonfile`` receiver reads back). One trace per episode::

    invoke_agent AGENT            the episode (gen_ai.operation.name = invoke_agent)
    ├── chat MODEL                each model call (a harness-driven turn, or each call
    │                             the model gateway recorded for an agent that owns its loop)
    └── execute_tool TOOL         each tool call

Attribute names follow the GenAI conventions (``gen_ai.operation.name``,
``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.agent.name``, ``error.type``);
what the conventions have no name for is ``toolproof.*`` (the score, the cost in US
dollars, the task). Times come from the episode's start and the recorded per-step agent
and tool seconds; ids are derived from the run and the episode, so the same run exports
the same file.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import IO, Any

from toolproof._version import __version__
from toolproof.results import EpisodeRecord
from toolproof.trajectory import Step

from ._registry import exporter
from ._source import RunSource

LINE_BREAKS = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}
"""Characters some line readers break lines at (``str.splitlines``): escaped, so that each
episode stays one line whatever its text (JSON leaves them raw inside strings)."""

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_OK = 1
STATUS_ERROR = 2


def attr(key: str, value: object) -> dict[str, Any]:
    """One OTLP JSON attribute (``intValue`` as a string, as the JSON encoding has it)."""
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    if isinstance(value, list | tuple):
        return {
            "key": key,
            "value": {"arrayValue": {"values": [{"stringValue": str(v)} for v in value]}},
        }
    return {"key": key, "value": {"stringValue": str(value)}}


def _attrs(**values: object) -> list[dict[str, Any]]:
    return [attr(k.replace("__", "."), v) for k, v in values.items() if v is not None]


def _id(material: str, hex_chars: int) -> str:
    return hashlib.sha256(material.encode()).hexdigest()[:hex_chars]


def _nanos(seconds: float) -> str:
    return str(round(seconds * 1_000_000_000))


def _start(record: EpisodeRecord) -> float:
    text = record.trajectory.started_at
    if text:
        try:
            return datetime.fromisoformat(text).timestamp()
        except ValueError:
            pass
    return 0.0


class _Trace:
    """The spans of one episode."""

    def __init__(self, source: RunSource, record: EpisodeRecord) -> None:
        self.source = source
        self.record = record
        self.trace_id = _id(f"{source.run_id}|{record.key}", 32)
        self.root_id = _id(f"{self.trace_id}|root", 16)
        self.spans: list[dict[str, Any]] = []

    def span(
        self,
        name: str,
        kind: int,
        start: float,
        end: float,
        attributes: list[dict[str, Any]],
        *,
        error: str | None = None,
        parent: bool = True,
    ) -> None:
        n = len(self.spans)
        span: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": self.root_id if not parent else _id(f"{self.trace_id}|{n}", 16),
            "name": name,
            "kind": kind,
            "startTimeUnixNano": _nanos(start),
            "endTimeUnixNano": _nanos(max(end, start)),
            "attributes": attributes,
            "status": {"code": STATUS_ERROR, "message": error} if error else {"code": STATUS_OK},
        }
        if parent:
            span["parentSpanId"] = self.root_id
        self.spans.append(span)

    def build(self) -> list[dict[str, Any]]:
        record, source = self.record, self.source
        score, traj = record.score, record.trajectory
        start = _start(record)
        clock = start
        for step in traj.steps:
            self._model_spans(step, clock)
            clock += step.agent_s
            clock = self._tool_spans(step, clock)
        usage = traj.usage()
        error = None if score.passed else (traj.error or score.failure_mode or score.level.value)
        self.span(
            f"invoke_agent {record.agent}",
            SPAN_KIND_INTERNAL,
            start,
            start + max(traj.duration_s, clock - start),
            _attrs(
                gen_ai__operation__name="invoke_agent",
                gen_ai__agent__name=record.agent,
                gen_ai__request__model=source.model,
                gen_ai__conversation__id=record.key,
                gen_ai__usage__input_tokens=usage.input_tokens,
                gen_ai__usage__output_tokens=usage.output_tokens,
                toolproof__cost_usd=usage.cost_usd,
                toolproof__usage__estimated=usage.estimated,
                toolproof__suite=source.suite_name,
                toolproof__task__id=record.task.id,
                toolproof__task__category=record.task.category,
                toolproof__task__type=record.task.type,
                toolproof__task__difficulty=record.task.difficulty,
                toolproof__epoch=record.epoch,
                toolproof__seed=record.seed,
                toolproof__passed=score.passed,
                toolproof__level=score.level.value,
                toolproof__fraction=float(score.fraction),
                toolproof__termination=score.termination.value,
                toolproof__failure_mode=score.failure_mode,
                toolproof__task_error=score.task_error,
                toolproof__steps=len(traj.steps),
                toolproof__tool_calls=score.tool_calls,
                toolproof__attempts=record.attempts,
                error__type=score.termination.value if traj.error else None,
            ),
            error=error,
            parent=False,
        )
        # The root first, as a viewer lists them.
        return [self.spans[-1], *self.spans[:-1]]

    def _model_spans(self, step: Step, clock: float) -> None:
        calls = step.annotations.get("model_calls")
        if isinstance(calls, list) and calls:
            at = clock
            for call in calls:
                if not isinstance(call, dict):
                    continue
                model = str(call.get("model") or self.source.model)
                latency = _number(call.get("latency_s"))
                given = call.get("usage")
                usage: dict[str, Any] = given if isinstance(given, dict) else {}
                status = call.get("status")
                failed = isinstance(status, int) and status >= 400
                self.span(
                    f"chat {model}",
                    SPAN_KIND_CLIENT,
                    at,
                    at + latency,
                    _attrs(
                        gen_ai__operation__name="chat",
                        gen_ai__request__model=model,
                        gen_ai__provider__name=call.get("api"),
                        gen_ai__usage__input_tokens=_int(usage.get("input_tokens")),
                        gen_ai__usage__output_tokens=_int(usage.get("output_tokens")),
                        toolproof__cost_usd=_cost(usage.get("cost_usd")),
                        toolproof__cached=call.get("cached") is True,
                        toolproof__step=step.index,
                        http__response__status_code=status if isinstance(status, int) else None,
                        error__type=str(status) if failed else None,
                    ),
                    error=f"HTTP {status}" if failed else None,
                )
                at += latency
            return
        if step.usage is None:
            return  # the agent called no model this turn (a scripted or built-in agent)
        model = self.source.model
        self.span(
            f"chat {model}",
            SPAN_KIND_CLIENT,
            clock,
            clock + step.agent_s,
            _attrs(
                gen_ai__operation__name="chat",
                gen_ai__request__model=model,
                gen_ai__provider__name=self.source.provider,
                gen_ai__usage__input_tokens=step.usage.input_tokens,
                gen_ai__usage__output_tokens=step.usage.output_tokens,
                toolproof__cost_usd=step.usage.cost_usd,
                toolproof__usage__estimated=step.usage.estimated,
                toolproof__step=step.index,
                gen_ai__response__finish_reasons=["tool_calls"]
                if step.message.tool_calls
                else ["stop"],
            ),
        )

    def _tool_spans(self, step: Step, clock: float) -> float:
        results = {r.call_id: r for r in step.results}
        spent = 0.0
        for call in step.message.tool_calls:
            result = results.get(call.id)
            took = result.duration_s if result is not None else 0.0
            failed = result is not None and result.is_error
            kind = (result.error_kind or "tool_error") if result is not None and failed else None
            self.span(
                f"execute_tool {call.name}",
                SPAN_KIND_INTERNAL,
                clock + spent,
                clock + spent + took,
                _attrs(
                    gen_ai__operation__name="execute_tool",
                    gen_ai__tool__name=call.name,
                    gen_ai__tool__call__id=call.id,
                    gen_ai__tool__type="function",
                    toolproof__step=step.index,
                    error__type=kind,
                ),
                error=(result.content[:500] if result is not None and kind else None),
            )
            spent += took
        return clock + max(step.tool_s, spent)


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _cost(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@exporter("otel", ".jsonl", "OpenTelemetry OTLP JSON, GenAI conventions (a trace per episode).")
def write_otel(source: RunSource, out: IO[bytes]) -> int:
    """Write one OTLP JSON ``ExportTraceServiceRequest`` line per episode."""
    resource = {
        "attributes": _attrs(
            service__name="toolproof",
            service__version=__version__,
            toolproof__run_dir=str(source.run_dir),
            toolproof__suite=source.suite_name,
            toolproof__suite__version=source.suite.get("version"),
            toolproof__agent=source.agent,
        )
    }
    scope = {"name": "toolproof.export", "version": __version__}
    count = 0
    for record in source.records():
        spans = _Trace(source, record).build()
        line = {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": scope, "spans": spans}]}
            ]
        }
        text = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
        out.write(text.translate(LINE_BREAKS).encode() + b"\n")
        count += 1
    return count
