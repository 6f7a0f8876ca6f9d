"""``judge``: an LLM grades the answer against a rubric, sampled N times.

The judge is called through the real OpenAI SDK (``openai``, imported when a
judge check runs) against any OpenAI-compatible endpoint. Everything it was
given and said is kept in ``CheckResult.data``::

    model, base_url, prompt (the messages), samples_requested, scale, pass_threshold,
    samples: [{score, reason, raw}], valid, mean, min, max, stdev,
    usage: {input_tokens, output_tokens, cost_usd}   # judge cost, apart from the agent's
    infra_error: true, error                         # when the judge could not grade

A judge that cannot be reached, or whose replies hold no usable score, is not
the agent's fault: the result carries ``infra_error`` and the episode is scored
as an infra error. Where the endpoint and key come from: the check's
``base_url``, overridden by :func:`judge_options` (set by whoever runs the
suite), and the SDK's own ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` otherwise.
``toolproof run --judge-model PROVIDER:MODEL`` sets the options to the run's judge
model behind the model gateway (``model``, ``link``): its calls are then recorded in
``data["model_calls"]``, priced with the run's price table and cached by ``--cache``.
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from toolproof.gateway import EpisodeLink
from toolproof.spec.checks import JudgeCheck

from ..base import CheckResult, ScoringContext, check, result
from ._text import parse_json_loose

_SYSTEM = (
    "You are an impartial grader of an AI agent's work. Grade only against the rubric, "
    "using the evidence shown. Reply with one JSON object and nothing else."
)
_MAX_INPUT_CHARS = 20_000
_MAX_RESULT_CHARS = 600


@dataclass(frozen=True)
class JudgeOptions:
    """Run-wide settings of judge calls (the operator's, not the task author's).

    Attributes:
        base_url: Overrides every judge check's ``base_url`` when set.
        api_key: API key; None lets the SDK read ``OPENAI_API_KEY``.
        max_retries: SDK retries of a failed request.
        timeout_s: Overrides the checks' ``timeout_s`` when set.
        model: ``PROVIDER:MODEL`` that overrides every judge check's ``model``
            (``--judge-model``).
        link: The model gateway's episode link the judge's calls go through (set with
            ``model``): its calls give the judge's tokens and cost (priced with the run's
            price table) and are kept in ``data["model_calls"]``.
    """

    base_url: str | None = None
    api_key: str | None = None
    max_retries: int = 2
    timeout_s: float | None = None
    model: str | None = None
    link: EpisodeLink | None = None


_OPTIONS: ContextVar[JudgeOptions | None] = ContextVar("toolproof_judge_options", default=None)


def current_judge_options() -> JudgeOptions:
    """The judge options in force here."""
    return _OPTIONS.get() or JudgeOptions()


@contextmanager
def judge_options(**changes: Any) -> Iterator[JudgeOptions]:
    """Set judge options for the code inside the block (and the tasks it starts).

    Args:
        **changes: Fields of :class:`JudgeOptions` to change.

    Yields:
        The options in force.
    """
    options = replace(current_judge_options(), **changes)
    token = _OPTIONS.set(options)
    try:
        yield options
    finally:
        _OPTIONS.reset(token)


def _bounds(spec: JudgeCheck) -> tuple[float, float, float]:
    """Low and high end of the scale and the pass threshold on it."""
    if isinstance(spec.scale, tuple):
        low, high = float(spec.scale[0]), float(spec.scale[1])
        return low, high, high if spec.pass_threshold is None else spec.pass_threshold
    return 0.0, 1.0, 0.5 if spec.pass_threshold is None else spec.pass_threshold


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...[truncated]"


def _transcript(ctx: ScoringContext) -> str:
    lines = []
    for step in ctx.trajectory.steps:
        if step.message.content:
            lines.append(f"[step {step.index}] agent: {step.message.content}")
        by_id = {r.call_id: r for r in step.results}
        for call in step.message.tool_calls:
            lines.append(f"[step {step.index}] call {call.name}({json.dumps(call.arguments)})")
            res = by_id.get(call.id)
            if res is not None:
                tag = "error" if res.is_error else "result"
                lines.append(f"[step {step.index}] {tag}: {_clip(res.content, _MAX_RESULT_CHARS)}")
        for said in step.observations:  # further user messages (user_turns, a conversation)
            if said.role == "user" and said.content:
                lines.append(f"[step {step.index}] user: {_clip(said.content, _MAX_RESULT_CHARS)}")
    lines.append(f"final answer: {ctx.trajectory.final_answer or '(none)'}")
    return "\n".join(lines)


def build_prompt(spec: JudgeCheck, ctx: ScoringContext) -> list[dict[str, str]]:
    """The messages sent to the judge."""
    parts = [f"## Task given to the agent\n{ctx.instance.task.description.strip()}"]
    parts.append(f"## Rubric\n{spec.rubric.strip()}")
    if spec.reference is not False:
        ref = ctx.instance.task.solution.answer if spec.reference is True else spec.reference
        parts.append(f"## Reference answer\n{ref}")
    if spec.input == "transcript":
        parts.append(f"## The agent's transcript\n{_clip(_transcript(ctx), _MAX_INPUT_CHARS)}")
    else:
        answer = ctx.trajectory.final_answer or "(the agent gave no answer)"
        parts.append(f"## The agent's final answer\n{_clip(answer, _MAX_INPUT_CHARS)}")
    if isinstance(spec.scale, tuple):
        low, high = spec.scale
        how = (
            f"Score the agent's work against the rubric on an integer scale from {low} (worst) "
            f'to {high} (best). Reply with only: {{"score": <integer>, "reason": "<one sentence>"}}'
        )
    else:
        how = (
            "Decide whether the agent's work meets the rubric. Reply with only: "
            '{"verdict": "pass" or "fail", "reason": "<one sentence>"}'
        )
    parts.append(f"## How to reply\n{how}")
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def parse_reply(spec: JudgeCheck, text: str) -> tuple[float | None, str]:
    """The score (on the scale; 1/0 for pass/fail) and reason in a judge reply.

    Returns:
        ``(None, why)`` when the reply holds no usable score.
    """
    low, high, _ = _bounds(spec)
    reason = ""
    value: Any = None
    try:
        data = parse_json_loose(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        reason = str(data.get("reason", ""))
        value = data.get("score") if isinstance(spec.scale, tuple) else data.get("verdict")
    if isinstance(spec.scale, tuple):
        if value is None:
            match = re.search(r"score\W{0,5}(-?\d+(?:\.\d+)?)", text, re.IGNORECASE)
            value = match.group(1) if match else None
        try:
            score = float(value)
        except (TypeError, ValueError):
            return None, f"no score in the reply: {_clip(text, 120)!r}"
        if not low <= score <= high:
            return None, f"score {score:g} is outside the scale [{low:g}, {high:g}]"
        return score, reason
    if not isinstance(value, str):
        match = re.search(r"\b(pass|fail)\b", text, re.IGNORECASE)
        value = match.group(1) if match else ""
    verdict = value.strip().lower()
    if verdict not in ("pass", "fail"):
        return None, f"no pass/fail verdict in the reply: {_clip(text, 120)!r}"
    return (1.0 if verdict == "pass" else 0.0), reason


def _client(spec: JudgeCheck) -> tuple[Any, str | None]:
    import openai

    options = current_judge_options()
    base_url = options.base_url or spec.base_url
    client = openai.OpenAI(
        base_url=base_url,
        api_key=options.api_key,
        max_retries=options.max_retries,
        timeout=options.timeout_s or spec.timeout_s,
    )
    return client, base_url


def _infra(spec: JudgeCheck, index: int, why: str, data: dict[str, Any]) -> CheckResult:
    data.update(infra_error=True, error=why)
    return result(spec, index, False, f"judge could not grade: {why}", score=0.0, data=data)


def _ask(
    spec: JudgeCheck,
    ctx: ScoringContext,
    index: int,
    messages: list[dict[str, str]],
    data: dict[str, Any],
) -> str | None:
    """Ask the judge ``samples`` times, filling ``data``; return an error, or None."""
    try:
        import openai
    except ImportError:
        data["usage"] = {"input_tokens": 0, "output_tokens": 0, "cost_usd": None}
        return "the judge needs the openai package: pip install 'toolproof[openai]'"
    tokens = [0, 0]
    options = current_judge_options()
    link = options.link
    seen = len(link.calls) if link is not None else 0
    try:
        client, data["base_url"] = _client(spec)
        with client:
            for n in range(spec.samples):
                reply = client.chat.completions.create(
                    model=(options.model or spec.model).partition(":")[2],
                    messages=messages,
                    temperature=spec.temperature,
                    max_tokens=spec.max_tokens,
                    seed=(ctx.instance.seed + 1009 * index + n) % 2**31,
                )
                if reply.usage is not None:
                    tokens[0] += reply.usage.prompt_tokens
                    tokens[1] += reply.usage.completion_tokens
                text = (reply.choices[0].message.content or "") if reply.choices else ""
                score, reason = parse_reply(spec, text)
                data["samples"].append(
                    {"score": score, "reason": reason, "raw": _clip(text, _MAX_RESULT_CHARS)}
                )
    except openai.OpenAIError as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        cost = None
        if link is not None:  # through the gateway: its count and the run's price table
            calls = link.calls[seen:]
            # whole replies (a judge's are short): a replay answers from them
            data["model_calls"] = [call.summary() for call in calls]
            tokens = [sum(c.usage.input_tokens for c in calls)]
            tokens.append(sum(c.usage.output_tokens for c in calls))
            costs = [c.usage.cost_usd for c in calls]
            if calls and all(c is not None for c in costs):
                cost = sum(c for c in costs if c is not None)
        elif spec.price is not None:
            cost = (tokens[0] * spec.price[0] + tokens[1] * spec.price[1]) / 1e6
        data["usage"] = {"input_tokens": tokens[0], "output_tokens": tokens[1], "cost_usd": cost}
    return None


@check("judge")
def evaluate(spec: JudgeCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Ask the judge ``samples`` times; pass when the mean score reaches the threshold."""
    low, high, threshold = _bounds(spec)
    messages = build_prompt(spec, ctx)
    data: dict[str, Any] = {
        "model": current_judge_options().model or spec.model,
        "prompt": messages,
        "samples_requested": spec.samples,
        "scale": list(spec.scale) if isinstance(spec.scale, tuple) else "pass_fail",
        "pass_threshold": threshold,
        "samples": [],
    }
    error = _ask(spec, ctx, index, messages, data)
    if error is not None:
        return _infra(spec, index, error, data)
    scores = [s["score"] for s in data["samples"] if s["score"] is not None]
    data["valid"] = len(scores)
    if not scores:
        reasons = "; ".join(s["reason"] for s in data["samples"])
        return _infra(spec, index, f"no sample gave a usable score ({reasons})", data)
    mean = statistics.fmean(scores)
    spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
    data.update(mean=mean, min=min(scores), max=max(scores), stdev=spread)
    passed = mean >= threshold
    detail = (
        f"judge {data['model']} mean {mean:.2f} over {len(scores)}/{spec.samples} samples "
        f"(min {min(scores):g}, max {max(scores):g}, stdev {spread:.2f}); "
        f"{'meets' if passed else 'below'} threshold {threshold:g}"
    )
    return result(spec, index, passed, detail, score=(mean - low) / (high - low), data=data)
