"""One episode for the replay page: steps with their calls, results, diffs and the checks.

File contents of a step's state change are read on demand from the run's
snapshots (``blobs/``): the step's snapshot against the one before it.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

from toolproof.results import EpisodeRecord, RunReader
from toolproof.trajectory import Step
from toolproof.worlds import BlobStore, World, WorldSnapshot

MAX_TEXT = 100_000
"""Longest text (message, tool result, file) sent to the page, in characters."""


def _clip(text: str | None) -> str | None:
    if text is None or len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + f"\n… [{len(text) - MAX_TEXT} more characters not shown]"


def _step(step: Step) -> dict[str, Any]:
    results = {r.call_id: r for r in step.results}
    calls = []
    for call in step.message.tool_calls:
        result = results.pop(call.id, None)
        calls.append(
            {
                "id": call.id,
                "name": call.name,
                "arguments": call.arguments,
                "raw_arguments": _clip(call.raw_arguments),
                "result": None
                if result is None
                else {
                    "content": _clip(result.content),
                    "is_error": result.is_error,
                    "error_kind": result.error_kind,
                    "duration_s": result.duration_s,
                },
            }
        )
    diff = step.diff
    return {
        "index": step.index,
        "content": _clip(step.message.content),
        "calls": calls,
        "orphan_results": [{"name": r.name, "content": _clip(r.content)} for r in results.values()],
        "observations": [{"role": m.role, "content": _clip(m.content)} for m in step.observations],
        "usage": None if step.usage is None else step.usage.model_dump(),
        "agent_s": step.agent_s,
        "tool_s": step.tool_s,
        "state_digest": step.state_digest,
        "diff": None
        if diff is None or diff.empty
        else {
            "records": [[path, *values] for path, values in sorted(diff.records.items())],
            "files_added": diff.files_added,
            "files_removed": diff.files_removed,
            "files_modified": diff.files_modified,
        },
        "snapshot": step.snapshot,
        "annotations": {k: v for k, v in step.annotations.items() if k != "before"},
    }


def episode_view(record: EpisodeRecord) -> dict[str, Any]:
    """The replay page's data for one episode."""
    traj, score = record.trajectory, record.score
    return {
        "key": record.key,
        "task": record.task.model_dump(),
        "epoch": record.epoch,
        "seed": record.seed,
        "agent": record.agent,
        "attempts": record.attempts,
        "infra_errors": record.infra_errors,
        "isolated": record.isolated,
        "score": score.model_dump(mode="json"),
        "prompt": [{"role": m.role, "content": _clip(m.content)} for m in traj.prompt],
        "steps": [_step(s) for s in traj.steps],
        "final_answer": _clip(traj.final_answer),
        "termination": traj.termination.value,
        "error": traj.error,
        "started_at": traj.started_at,
        "duration_s": traj.duration_s,
        "usage": traj.usage().model_dump(),
    }


def load_episode(run_dir: Path, key: str) -> dict[str, Any] | None:
    """The replay data of one episode, or None when the run has no such episode."""
    with RunReader(run_dir) as reader:
        record = reader.record(key)
    return None if record is None else episode_view(record)


def _snapshot(blobs: BlobStore, ref: str | None) -> WorldSnapshot | None:
    if not ref or not blobs.has(ref):
        return None
    return World.load_snapshot(blobs, ref)


def _text(blobs: BlobStore, entry: list[Any] | None) -> str | None:
    if entry is None or entry[0] is None:
        return None if entry is None else f"-> {entry[2]}"
    if not blobs.has(entry[0]):
        return None
    data = blobs.get_bytes(entry[0])
    if b"\0" in data[:8192]:
        return f"[binary, {len(data)} bytes]"
    return _clip(data.decode("utf-8", errors="replace"))


def step_files(run_dir: Path, key: str, index: int) -> dict[str, Any] | None:
    """Before and after text of the files a step changed, with a unified diff.

    Returns:
        ``{"available": False, ...}`` when the run kept no snapshots; None when
        the episode or step does not exist.
    """
    with RunReader(run_dir) as reader:
        record = reader.record(key)
    if record is None:
        return None
    steps = record.trajectory.steps
    position = next((i for i, s in enumerate(steps) if s.index == index), None)
    if position is None:
        return None
    step = steps[position]
    before_ref = next((s.snapshot for s in reversed(steps[:position]) if s.snapshot), None)
    before_ref = before_ref or (steps[0].annotations.get("before") if steps else None)
    blobs_dir = run_dir / "blobs"
    if step.diff is None or not blobs_dir.is_dir():
        return {"available": False, "files": []}
    blobs = BlobStore(blobs_dir)
    before, after = _snapshot(blobs, before_ref), _snapshot(blobs, step.snapshot)
    if before is None or after is None:
        return {"available": False, "files": []}
    files = []
    for change, paths in (
        ("added", step.diff.files_added),
        ("removed", step.diff.files_removed),
        ("modified", step.diff.files_modified),
    ):
        for rel in paths:
            old, new = _text(blobs, before.files.get(rel)), _text(blobs, after.files.get(rel))
            diff = difflib.unified_diff(
                (old or "").splitlines(),
                (new or "").splitlines(),
                f"a/{rel}",
                f"b/{rel}",
                lineterm="",
                n=3,
            )
            files.append(
                {
                    "path": rel,
                    "change": change,
                    "before": old,
                    "after": new,
                    "diff": list(diff)[:5000],
                }
            )
    return {"available": True, "files": files}
