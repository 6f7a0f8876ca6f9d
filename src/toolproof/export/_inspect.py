"""Inspect AI's eval log (JSON): read by ``inspect_ai.log.read_eval_log``, listed by
``inspect log list``, opened by ``inspect view``.

The log is written as Inspect's JSON log format (``version`` 2) without importing
inspect_ai: a header (``eval``, ``plan``, ``results``, ``stats``) and then the samples,
one episode per sample, streamed. Each sample carries:

* ``id`` the task id, ``epoch`` the episode's epoch + 1 (Inspect counts from 1);
* ``input`` the prompt, ``messages`` the whole transcript (tool calls and results);
* ``scores``: ``passed`` (1 or 0, Inspect's accuracy), ``fraction`` (partial credit),
  ``level``; the checks ride in ``passed``'s metadata;
* ``model_usage`` tokens and ``total_cost`` (US dollars) under the model's name;
* ``error`` for an infra error (Inspect leaves errored samples out of its metrics, as
  toolproof leaves them out of the denominator);
* ``metadata`` the task's facts, the termination and failure mode.

The header's ``results`` (accuracy and the mean fraction over scored episodes) are counted
from ``run.db``'s rows first, so the file is written in one pass.
"""

from __future__ import annotations

import json
from typing import IO, Any

from toolproof._version import __version__
from toolproof.results import EpisodeRecord
from toolproof.trajectory import Message

from ._registry import exporter
from ._source import RunSource, Tally, check_rows


def _message(message: Message) -> dict[str, Any]:
    """A toolproof message in Inspect's ChatMessage shape."""
    if message.role == "assistant":
        return {
            "role": "assistant",
            "content": message.content or "",
            "source": "generate",
            "tool_calls": [
                {
                    "id": call.id,
                    "function": call.name,
                    "arguments": call.arguments,
                    "type": "function",
                    **({"parse_error": call.raw_arguments} if call.raw_arguments else {}),
                }
                for call in message.tool_calls
            ]
            or None,
        }
    if message.role == "tool":
        return {
            "role": "tool",
            "content": message.content or "",
            "tool_call_id": message.tool_call_id,
            "function": message.name,
        }
    return {"role": message.role, "content": message.content or ""}


def _transcript(record: EpisodeRecord) -> list[dict[str, Any]]:
    traj = record.trajectory
    out = [_message(m) for m in traj.prompt]
    for step in traj.steps:
        out.append(_message(step.message))
        for result in step.results:
            item = _message(
                Message(
                    role="tool",
                    content=result.content,
                    tool_call_id=result.call_id,
                    name=result.name,
                )
            )
            if result.is_error:
                item["error"] = {"type": "unknown", "message": result.content[:2000]}
            out.append(item)
        out.extend(_message(m) for m in step.observations)
    return out


def _usage(record: EpisodeRecord) -> dict[str, Any]:
    usage = record.trajectory.usage()
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "total_cost": usage.cost_usd,
    }


def sample(record: EpisodeRecord, model: str) -> dict[str, Any]:
    """One episode as an Inspect ``EvalSample``."""
    score, traj = record.score, record.trajectory
    answer = traj.final_answer or ""
    why = f"{score.level.value}: {score.termination.value}"
    if score.failure_mode:
        why += f", {score.failure_mode}"
    user = [m.content or "" for m in traj.prompt if m.role == "user"]
    item: dict[str, Any] = {
        "id": record.task.id,
        "epoch": record.epoch + 1,
        "input": user[0] if len(user) == 1 else [_message(m) for m in traj.prompt],
        "target": "",
        "messages": _transcript(record),
        "output": {
            "model": model,
            "choices": [
                {
                    "message": {"role": "assistant", "content": answer, "source": "generate"},
                    "stop_reason": "stop" if score.termination.value == "completed" else "unknown",
                }
            ],
            "completion": answer,
        },
        "scores": {
            "passed": {
                "value": 1 if score.passed else 0,
                "answer": answer,
                "explanation": why,
                "metadata": {"checks": check_rows(record), "passed_loose": score.passed_loose},
            },
            "fraction": {"value": float(score.fraction), "answer": answer},
            "level": {"value": score.level.value},
        },
        "metadata": {
            "key": record.key,
            "seed": record.seed,
            "category": record.task.category,
            "type": record.task.type,
            "domain": record.task.domain,
            "difficulty": record.task.difficulty,
            "tags": record.task.tags,
            "termination": score.termination.value,
            "failure_mode": score.failure_mode,
            "failure_step": score.failure_step,
            "task_error": score.task_error,
            "attempts": record.attempts,
            "tool_calls": score.tool_calls,
        },
        "model_usage": {model: _usage(record)},
        "total_time": traj.duration_s,
        "working_time": traj.duration_s,
        "uuid": f"{record.key}",
    }
    if traj.started_at:
        item["started_at"] = traj.started_at
    if record.infra_error:
        message = traj.error or "; ".join(record.infra_errors[-1:]) or "infra error"
        item["error"] = {"message": message, "traceback": "", "traceback_ansi": ""}
    return item


def _results(tally: Tally) -> dict[str, Any]:
    scored = tally.scored
    accuracy = tally.passed / scored if scored else 0.0
    mean = tally.fraction_sum / scored if scored else 0.0
    return {
        "total_samples": tally.episodes,
        "completed_samples": scored,
        "scores": [
            {
                "name": "passed",
                "scorer": "passed",
                "scored_samples": scored,
                "unscored_samples": tally.infra_errors,
                "params": {},
                "metrics": {"accuracy": {"name": "accuracy", "value": accuracy, "params": {}}},
            },
            {
                "name": "fraction",
                "scorer": "fraction",
                "scored_samples": scored,
                "unscored_samples": tally.infra_errors,
                "params": {},
                "metrics": {"mean": {"name": "mean", "value": mean, "params": {}}},
            },
        ],
    }


def _status(source: RunSource, tally: Tally) -> str:
    """``success`` for a finished run, ``cancelled`` for one stopped part way (its summary
    says so), ``started`` for one with no episode yet."""
    summary = source.reader.summary() or {}
    episodes = summary.get("episodes") if isinstance(summary, dict) else None
    if isinstance(episodes, dict) and episodes.get("complete") is False:
        return "cancelled"
    return "success" if tally.episodes else "started"


def header(source: RunSource, tally: Tally) -> dict[str, Any]:
    """Everything of the log but its samples."""
    now = source.created.isoformat(timespec="seconds")
    config = source.config
    model = source.model
    usage = {
        "input_tokens": tally.input_tokens,
        "output_tokens": tally.output_tokens,
        "total_tokens": tally.input_tokens + tally.output_tokens,
        "total_cost": tally.cost_usd,
    }
    return {
        "version": 2,
        "status": _status(source, tally),
        "eval": {
            "eval_id": source.run_id,
            "run_id": source.run_id,
            "created": now,
            "task": source.suite_name,
            "task_id": source.run_id,
            "task_version": str(source.suite.get("version", 0)),
            "task_attribs": {},
            "task_args": {},
            "solver": source.agent,
            "dataset": {"name": source.suite_name, "samples": tally.episodes},
            "model": model,
            "config": {"epochs": config.get("epochs")},
            "packages": {"toolproof": __version__},
            "metadata": {
                "toolproof": {
                    "run_dir": str(source.run_dir),
                    "suite": source.suite,
                    "agent": source.agent,
                    "config": config,
                }
            },
            "scorers": [
                {"name": "passed", "options": {}, "metrics": [{"name": "accuracy", "options": {}}]},
                {"name": "fraction", "options": {}, "metrics": [{"name": "mean", "options": {}}]},
            ],
        },
        "plan": {"name": "plan", "steps": [{"solver": source.agent, "params": {}}]},
        "results": _results(tally),
        "stats": {"started_at": now, "completed_at": now, "model_usage": {model: usage}},
    }


@exporter("inspect", ".json", "Inspect AI eval log (inspect view, read_eval_log).")
def write_inspect(source: RunSource, out: IO[bytes]) -> int:
    """Write the run as an Inspect AI JSON eval log, its samples streamed."""
    head = json.dumps(header(source, source.tally()), ensure_ascii=False)
    out.write(head[:-1].encode() + b', "samples": [\n')
    model = source.model
    count = 0
    for record in source.records():
        if count:
            out.write(b",\n")
        out.write(json.dumps(sample(record, model), ensure_ascii=False).encode())
        count += 1
    out.write(b"\n]}\n")
    return count
