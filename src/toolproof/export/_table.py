"""CSV and Parquet: one row per episode, every score and its breakdown.

The columns (:data:`COLUMNS`) are fixed, so a notebook can rely on them: the task's facts,
the episode's score (passed, the loose pass, level, fraction, termination, failure mode),
its effort (steps, tool calls, time, tokens, cost) and its checks. In CSV the checks are a
JSON list in the ``checks`` column (each ``{name, kind, passed, score, weight, veto,
guard, task_error, detail}``) with ``checks_passed`` / ``checks_total`` beside it; in
Parquet they are a list of structs.

Parquet needs ``pyarrow`` (``pip install 'toolproof[parquet]'``); rows are written in row
groups of :data:`ROW_GROUP` episodes, so memory stays flat.
"""

from __future__ import annotations

import csv
import io
import json
from typing import IO, Any

from toolproof.results import EpisodeRecord

from ._registry import ExportError, exporter
from ._source import RunSource, check_rows

COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("key", "string", "The episode: task_id#epoch."),
    ("task_id", "string", "The task."),
    ("epoch", "int", "The epoch (0-based)."),
    ("seed", "int", "The seed the task was rendered with."),
    ("agent", "string", "The agent spec."),
    ("suite", "string", "The suite's name."),
    ("category", "string", "The task's category."),
    ("type", "string", "The task's type."),
    ("domain", "string", "The task's domain."),
    ("difficulty", "int", "The task's difficulty."),
    ("tags", "string", "The task's tags, joined by spaces."),
    ("passed", "bool", "Whether the episode passed (strict)."),
    ("passed_loose", "bool", "pass@loose (a free-text answer read by the loose rule)."),
    ("level", "string", "perfect, acceptable, partial or fail."),
    ("fraction", "double", "Weighted share of progress-check score, 0 to 1."),
    ("termination", "string", "Why the episode ended (infra_error: out of the score)."),
    ("failure_mode", "string", "The primary failure mode of a failed episode."),
    ("failure_step", "int", "The step where it went wrong, when known."),
    ("task_error", "bool", "A check of the task is broken (out of every denominator)."),
    ("judged", "bool", "Whether an LLM judge contributed."),
    ("infra_error", "bool", "Whether the episode ended in an infra error after retries."),
    ("attempts", "int", "1 + infra-error retries."),
    ("steps", "int", "Agent turns."),
    ("tool_calls", "int", "Tool calls."),
    ("duration_s", "double", "Wall time of the episode in seconds."),
    ("input_tokens", "int", "Input (prompt) tokens."),
    ("output_tokens", "int", "Output (completion) tokens."),
    ("tokens_estimated", "bool", "Tokens counted offline, not reported by the provider."),
    ("cost_usd", "double", "Cost in US dollars (empty: unpriced)."),
    ("isolated", "bool", "False when commands ran without a sandbox."),
    ("checks_passed", "int", "Checks that passed."),
    ("checks_total", "int", "Checks run."),
    ("checks", "checks", "Every check: name, kind, passed, score, weight, veto, guard."),
    ("final_answer", "string", "The agent's final answer."),
)
"""The columns of both formats: name, type, meaning (docs/run-format.md lists them)."""

ROW_GROUP = 2000
"""Episodes per Parquet row group (and per batch held in memory)."""


def episode_row(record: EpisodeRecord, suite: str) -> dict[str, Any]:
    """One episode as a row of :data:`COLUMNS` (checks as a list of dicts)."""
    score, traj = record.score, record.trajectory
    usage = traj.usage()
    checks = check_rows(record)
    return {
        "key": record.key,
        "task_id": record.task.id,
        "epoch": record.epoch,
        "seed": record.seed,
        "agent": record.agent,
        "suite": suite,
        "category": record.task.category,
        "type": record.task.type,
        "domain": record.task.domain,
        "difficulty": record.task.difficulty,
        "tags": " ".join(record.task.tags),
        "passed": score.passed,
        "passed_loose": score.passed if score.passed_loose is None else score.passed_loose,
        "level": score.level.value,
        "fraction": score.fraction,
        "termination": score.termination.value,
        "failure_mode": score.failure_mode,
        "failure_step": score.failure_step,
        "task_error": score.task_error,
        "judged": score.judged,
        "infra_error": record.infra_error,
        "attempts": record.attempts,
        "steps": len(traj.steps),
        "tool_calls": score.tool_calls,
        "duration_s": traj.duration_s,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "tokens_estimated": usage.estimated,
        "cost_usd": usage.cost_usd,
        "isolated": record.isolated,
        "checks_passed": sum(1 for c in checks if c["passed"]),
        "checks_total": len(checks),
        "checks": checks,
        "final_answer": traj.final_answer,
    }


@exporter("csv", ".csv", "One row per episode: every score, its checks as JSON.")
def write_csv(source: RunSource, out: IO[bytes]) -> int:
    """Write the run as CSV (UTF-8, a header row, ``\\r\\n`` lines as the csv module does)."""
    text = io.TextIOWrapper(out, encoding="utf-8", newline="", write_through=True)
    writer = csv.writer(text)
    writer.writerow([name for name, _, _ in COLUMNS])
    count = 0
    for record in source.records():
        row = episode_row(record, source.suite_name)
        writer.writerow([_cell(row[name]) for name, _, _ in COLUMNS])
        count += 1
    text.flush()
    text.detach()  # the caller owns ``out``
    return count


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


@exporter("parquet", ".parquet", "One row per episode, typed columns (needs pyarrow).")
def write_parquet(source: RunSource, out: IO[bytes]) -> int:
    """Write the run as Parquet, :data:`ROW_GROUP` episodes per row group.

    Raises:
        ExportError: pyarrow is not installed (naming the extra to install).
    """
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ExportError(
            f"the parquet export needs pyarrow ({exc}); install it with: "
            "pip install 'toolproof[parquet]' (or export --format csv)"
        ) from None
    schema = pa.schema([pa.field(name, _arrow_type(pa, kind)) for name, kind, _ in COLUMNS])
    count = 0
    with pq.ParquetWriter(out, schema) as writer:
        batch: list[dict[str, Any]] = []
        for record in source.records():
            batch.append(episode_row(record, source.suite_name))
            count += 1
            if len(batch) >= ROW_GROUP:
                writer.write_table(pa.Table.from_pylist(batch, schema=schema))
                batch.clear()
        if batch or count == 0:
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
    return count


def _arrow_type(pa: Any, kind: str) -> Any:
    if kind == "checks":
        return pa.list_(
            pa.struct(
                [
                    ("name", pa.string()),
                    ("kind", pa.string()),
                    ("passed", pa.bool_()),
                    ("score", pa.float64()),
                    ("weight", pa.float64()),
                    ("veto", pa.bool_()),
                    ("guard", pa.bool_()),
                    ("task_error", pa.bool_()),
                    ("detail", pa.string()),
                ]
            )
        )
    types = {"string": pa.string(), "int": pa.int64(), "double": pa.float64(), "bool": pa.bool_()}
    return types[kind]
