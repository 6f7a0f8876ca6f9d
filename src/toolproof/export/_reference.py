"""The generated reference of a run folder's format: docs/run-format.md.

Every field of a ``trajectories.jsonl`` line comes from the pydantic models that write
it (``Trajectory`` and the ``Score`` added as its last field), every table and column of
``run.db`` from a real database made by ``RunStore`` (schema and indexes), and the export
columns from ``_table.COLUMNS``; only the meaning of each ``run.db`` column is written
here (:data:`COLUMN_NOTES`), and a column without one fails the generation.
``python scripts/gen_run_format.py`` writes the page; ``tests/export/test_run_format.py``
fails while the page differs from what this module generates.
"""

from __future__ import annotations

import sqlite3
import tempfile
import types
import typing
from enum import Enum
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from toolproof.results import DB_NAME, EpisodeRecord, RunStore, TaskFacts
from toolproof.scoring import CheckResult, Score
from toolproof.trajectory import (
    Message,
    StateDiff,
    Step,
    ToolCall,
    ToolResult,
    Trajectory,
    Usage,
)

from ._table import COLUMNS

COLUMN_NOTES: dict[str, dict[str, str]] = {
    "meta": {
        "key": "What is recorded: `config`, `identity`, `suite`, `track`, `environment`, "
        "`planned`, ... (one row each).",
        "value": "Its value as JSON.",
    },
    "episodes": {
        "key": "The episode: `task_id#epoch`.",
        "seq": "Order of storing (1, 2, ...).",
        "task_id": "The task.",
        "epoch": "The epoch, from 0.",
        "passed": "1 when the episode passed (strict), else 0.",
        "level": "`perfect`, `acceptable`, `partial` or `fail`.",
        "termination": "Why the episode ended; `infra_error` is out of every denominator.",
        "fraction": "Weighted share of progress-check score, 0 to 1.",
        "n_steps": "Agent turns.",
        "n_tool_calls": "Tool calls.",
        "duration_s": "Wall time in seconds.",
        "input_tokens": "Input tokens over the episode.",
        "output_tokens": "Output tokens over the episode.",
        "cost_usd": "Cost in US dollars; NULL when unpriced.",
        "category": "The task's category.",
        "type": "The task's type.",
        "difficulty": "The task's difficulty.",
        "failure_mode": "The primary failure mode of a failed episode.",
        "record": "The episode record without its trajectory, as JSON "
        "(see [the record column](#the-record-column)).",
        "traj_offset": "Byte offset of the episode's line in `trajectories.jsonl` "
        "(NULL in schema-1 rows, whose record holds the trajectory).",
        "traj_length": "Length of that line in bytes, newline included.",
    },
    "steps": {
        "episode_key": "Kept empty so that older readers still open new runs.",
        "idx": "(unused)",
        "step": "(unused)",
    },
    "episodes_search_state": {
        "n": "Episodes the search index was filled from.",
        "seq": "The last `seq` it saw (a resumed run appends after it: the index is stale).",
    },
}
"""What each column of ``run.db`` means (the generator refuses a column without a note)."""

FIELD_NOTES: dict[str, dict[str, str]] = {
    "Trajectory": {
        "format_version": "Version of the line format; a reader refuses a newer one.",
        "episode_id": "The episode: `task_id#epoch` (near the start of every line).",
        "task_id": "The task.",
        "epoch": "The epoch, from 0.",
        "seed": "The seed the task instance was rendered with.",
        "agent": "The agent spec, e.g. `openai:gpt-4o-mini`.",
        "steps": "The agent's turns, in order.",
        "final_answer": "The agent's final answer (null when it gave none).",
        "termination": "Why the episode ended.",
        "started_at": "When it started (ISO 8601, UTC).",
        "duration_s": "Wall time in seconds.",
    },
    "Message": {
        "role": "Who speaks.",
        "content": "The text (null for an assistant turn of tool calls only).",
        "tool_calls": "The tool calls of an assistant turn.",
        "tool_call_id": "The call a tool message answers.",
        "name": "The tool of a tool message.",
    },
    "Step": {
        "index": "The turn's number, from 0.",
        "results": "One result per tool call of the turn.",
        "usage": "Tokens and cost of the turn's model call(s); null when no model was called.",
    },
    "ToolResult": {
        "call_id": "The call it answers.",
        "name": "The tool.",
        "is_error": "Whether the call failed.",
        "duration_s": "Seconds the tool took.",
    },
    "Usage": {
        "input_tokens": "Input (prompt) tokens.",
        "output_tokens": "Output (completion) tokens.",
    },
    "StateDiff": {
        "files_added": "Workspace files that appeared.",
        "files_removed": "Workspace files that went away.",
        "files_modified": "Workspace files whose content changed.",
    },
    "Score": {
        "passed": "Whether the episode passed (strict).",
        "level": "The graded level.",
        "checks": "Every check's outcome.",
        "termination": "Why the episode ended (as the trajectory's).",
        "tool_calls": "Tool calls the agent made.",
    },
    "CheckResult": {
        "name": "The check's name in the task.",
        "kind": "The check's kind (`state`, `output`, `process`, `custom`, `judge`, ...).",
        "passed": "Whether it held.",
        "weight": "Its weight in `fraction`.",
    },
    "EpisodeRecord": {
        "task": "The task's facts.",
        "epoch": "The epoch, from 0.",
        "seed": "The seed the task instance was rendered with.",
        "agent": "The agent spec.",
        "score": "The episode's score.",
        "trajectory": "Not in the column: the episode's line of `trajectories.jsonl`.",
    },
    "TaskFacts": {
        "id": "The task.",
        "type": "The task's type.",
        "category": "The task's category.",
        "difficulty": "The task's difficulty.",
        "domain": "The task's domain.",
        "tags": "The task's tags.",
        "reference_calls": "Tool calls of the task's reference solution.",
        "judged": "Whether a check of the task is an LLM judge.",
    },
}
"""The meaning of fields whose model has no ``Field(description=...)``; a field with
neither fails the generation, so a new field cannot go undocumented."""

SEARCH_TABLE = "episodes_search"
"""The trigram full-text index (FTS5 keeps shadow tables beside it, not listed)."""

MODELS: tuple[tuple[str, type[BaseModel]], ...] = (
    ("Trajectory", Trajectory),
    ("Message", Message),
    ("ToolCall", ToolCall),
    ("Step", Step),
    ("ToolResult", ToolResult),
    ("Usage", Usage),
    ("StateDiff", StateDiff),
    ("Score", Score),
    ("CheckResult", CheckResult),
    ("EpisodeRecord", EpisodeRecord),
    ("TaskFacts", TaskFacts),
)


def type_name(annotation: Any) -> str:
    """A field's type as the reference shows it (``list[Step]``, ``str | null``)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_name(a) for a in args)
    if origin is Literal:
        return " \\| ".join(f'`"{a}"`' for a in args)
    if origin in (list, tuple, set):
        return f"list[{type_name(args[0])}]" if args else "list"
    if origin is dict:
        return f"object[{type_name(args[0])}, {type_name(args[1])}]" if args else "object"
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " \\| ".join(f'`"{m.value}"`' for m in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"[{annotation.__name__}](#{annotation.__name__.lower()})"
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if annotation is Any:
        return "any"
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _cell(text: str) -> str:
    return " ".join(text.replace("|", "\\|").split())


def model_table(model: type[BaseModel]) -> list[str]:
    """A model's fields as a Markdown table: name, type, default, meaning.

    Raises:
        ValueError: a field has neither a description nor a note in :data:`FIELD_NOTES`.
    """
    notes = FIELD_NOTES.get(model.__name__, {})
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        if field.is_required():
            default = "required"
        elif field.default_factory is not None:
            made = field.default_factory()  # type: ignore[call-arg]
            default = f"`{made!r}`" if made in ([], {}) else "(made)"
        else:
            value = field.default
            default = f"`{value.value if isinstance(value, Enum) else value!r}`"
        if default == "`None`":
            default = "`null`"
        meaning = _cell(field.description or notes.get(name, ""))
        if not meaning:
            raise ValueError(
                f"{model.__name__}.{name} has no description: add Field(description=...) "
                "or a note in FIELD_NOTES (toolproof/export/_reference.py)"
            )
        lines.append(f"| `{name}` | {type_name(field.annotation)} | {default} | {meaning} |")
    return lines


def _database() -> list[tuple[str, str, list[tuple[str, str, bool, bool]]]]:
    """Every table of a finished run's ``run.db``: name, kind, columns (name, type, not
    null, primary key), from a database ``RunStore`` made and finalized."""
    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder) / "run"
        store = RunStore(run)
        try:
            store.finalize({})
        finally:
            store.close()
        db = sqlite3.connect(run / DB_NAME)
        try:
            tables = []
            rows = db.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid"
            ).fetchall()
            for name, sql in rows:
                if name.startswith(f"{SEARCH_TABLE}_") or name.startswith("sqlite_"):
                    continue  # FTS5's shadow tables
                kind = "full-text index (FTS5, trigram)" if "VIRTUAL" in sql.upper() else "table"
                info = db.execute(f'PRAGMA table_info("{name}")').fetchall()
                columns = [(c[1], c[2] or "", bool(c[3]), bool(c[5])) for c in info]
                tables.append((name, kind, columns))
            indexes = db.execute(
                "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index' "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            ).fetchall()
        finally:
            db.close()
    tables.append(("", "indexes", [(n, t, False, False) for n, t in indexes]))
    return tables


def _db_section() -> list[str]:
    out: list[str] = []
    for name, kind, columns in _database():
        if kind == "indexes":
            out += ["### Indexes", "", "| index | on table |", "|---|---|"]
            out += [f"| `{n}` | `{t}` |" for n, t, _, _ in columns]
            out.append("")
            continue
        out += [f"### `{name}` ({kind})", ""]
        if name == SEARCH_TABLE:
            out += [
                "Columns `"
                + "`, `".join(c[0] for c in columns)
                + "`: the episode key, failure mode and termination, for substring search "
                "(contentless: it stores no text of its own). Filled when the run finishes.",
                "",
            ]
            continue
        notes = COLUMN_NOTES.get(name)
        if notes is None:
            raise ValueError(f"run.db table {name!r} has no notes in COLUMN_NOTES")
        out += ["| column | type | not null | meaning |", "|---|---|---|---|"]
        for column, sqltype, notnull, pk in columns:
            if column not in notes:
                raise ValueError(f"run.db column {name}.{column} has no note in COLUMN_NOTES")
            flag = "primary key" if pk else ("yes" if notnull else "")
            out.append(f"| `{column}` | {sqltype} | {flag} | {_cell(notes[column])} |")
        out.append("")
    return out


HEADER = """# The run folder's format

<!-- Generated by scripts/gen_run_format.py from the pydantic models and a real run.db;
tests/export/test_run_format.py fails while this page is stale. Do not edit by hand. -->

A run folder (`toolproof run -o FOLDER`) holds:

| file | what |
|---|---|
| `run.db` | SQLite: one row per episode (scores, and the record without its trajectory), \
the run's facts (`meta`), indexes for the viewer |
| `trajectories.jsonl` | one line per episode: its [Trajectory](#trajectory) with its \
[Score](#score) as the last field, `"score"` |
| `summary.json` | the run's metrics ([metrics.md](metrics.md)) |
| `blobs/` | world snapshots by digest (time travel: `toolproof snapshot`, `replay`) |
| `overview.json`, `run.lock` | the viewer's cached overview; the writer's lock |

Read them with `toolproof.results.RunReader` (`rows()` pages the rows, `records()` yields
whole records one at a time), or export them: `toolproof export RUN --format
inspect|otel|csv|parquet|junit` ([cli.md](cli.md#export-a-run)).

## `trajectories.jsonl`

One JSON object per line, in task and epoch order once the run finishes. Each line is a
[Trajectory](#trajectory) (its first fields are always `format_version` and
`episode_id`) with the episode's [Score](#score) added as its last field, `"score"`, so
the file alone carries every verdict. Lines written before the score was added have no
`"score"`: take it from `run.db` (`RunReader` does).
"""


def generate() -> str:
    """The whole page."""
    out = [HEADER]
    out += ["## Fields", ""]
    for title, model in MODELS:
        if title == "EpisodeRecord":
            out += [
                "## The record column",
                "",
                "`run.db`'s `episodes.record` holds the [EpisodeRecord](#episoderecord) as "
                "JSON without its `trajectory` (which is the episode's line of "
                "`trajectories.jsonl`).",
                "",
            ]
        doc = (model.__doc__ or "").strip().splitlines()[0]
        out += [f"### {title}", "", doc, "", *model_table(model), ""]
    out += ["## `run.db`", ""]
    out += _db_section()
    out += [
        "## Export columns",
        "",
        "`toolproof export RUN --format csv` (and `parquet`) writes one row per episode "
        "with these columns:",
        "",
        "| column | type | meaning |",
        "|---|---|---|",
    ]
    out += [f"| `{n}` | {t} | {_cell(m)} |" for n, t, m in COLUMNS]
    return "\n".join(out).rstrip() + "\n"
