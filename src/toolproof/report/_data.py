"""What the HTML report shows, gathered from run directories (never from the engine).

A run whose ``summary.json`` is missing (unfinished) or older than the current
layout is summarised again from its records, so every report shows the same
metric sections.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolproof.metrics import summarize
from toolproof.metrics.compare import Comparison, compare_runs
from toolproof.metrics.failures import FailureReport, failure_report
from toolproof.results import EpisodeRecord, RunReader

from . import _charts as charts

CURRENT_SUMMARY = 2
"""The summary.json layout (``toolproof_summary``) this report reads."""
LEVEL_ORDER = ("perfect", "acceptable", "partial", "fail")
MAX_GROUPS = 16
"""Groups drawn per breakdown chart (the largest)."""


@dataclass
class RunData:
    """One run as the report shows it."""

    run_dir: Path
    summary: dict[str, Any]
    rows: list[dict[str, Any]]
    records: list[EpisodeRecord] = field(default_factory=list)
    anchors: dict[str, str] = field(default_factory=dict)
    """Episode key to the HTML id of its rendered trajectory."""
    not_isolated: int = 0
    """Episodes whose commands ran without a sandbox."""
    failures: FailureReport = field(default_factory=FailureReport)
    """Why episodes failed (recorded errors first) and the infra errors."""

    @property
    def banner(self) -> str | None:
        """The infra-error banner, or None when the run had none."""
        return self.failures.banner()

    @property
    def omitted(self) -> int:
        """Episodes whose trajectory is not rendered."""
        return len(self.rows) - len(self.records)


def anchor(key: str) -> str:
    """A stable HTML id for an episode key (``task#epoch``)."""
    return "ep-" + re.sub(r"[^A-Za-z0-9_-]", "-", key)


def _choose(rows: list[dict[str, Any]], limit: int) -> list[str]:
    """Keys of the trajectories to render: all, or failures first up to ``limit``."""
    if len(rows) <= limit:
        return [r["key"] for r in rows]
    ordered = sorted(rows, key=lambda r: (bool(r["passed"]), r["task_id"], r["epoch"]))
    return sorted((r["key"] for r in ordered[:limit]), key=lambda k: k.rsplit("#", 1)[0])


def load_run(run_dir: Path, max_trajectories: int) -> RunData:
    """Read a run: a current summary, every episode row, the chosen records."""
    with RunReader(run_dir) as reader:
        summary = reader.summary()
        if summary is None or summary.get("toolproof_summary", 0) < CURRENT_SUMMARY:
            summary = summarize(reader.records(), reader.meta())
        rows = reader.rows()
        exposed = len(reader.rows(where="json_extract(record, '$.isolated') = 0"))
        records = [
            r for k in _choose(rows, max_trajectories) if (r := reader.record(k)) is not None
        ]
        # only the episodes that did not pass are parsed (a big run stays fast)
        failing = [
            r
            for row in rows
            if not row["passed"] or row["termination"] == "infra_error"
            if (r := reader.record(row["key"])) is not None
        ]
        failures = failure_report(failing)
        failures.episodes = len(rows)
        failures.scored = sum(1 for row in rows if row["termination"] != "infra_error")
    records.sort(key=lambda r: (r.task.id, r.epoch))
    used = set()
    anchors = {}
    for r in records:
        name = anchor(r.key)
        while name in used:
            name += "-"
        used.add(name)
        anchors[r.key] = name
    return RunData(run_dir, summary, rows, records, anchors, exposed, failures)


def task_table(data: RunData) -> list[dict[str, Any]]:
    """Per task: facts, passes over scored episodes and each epoch's outcome."""
    tasks: dict[str, dict[str, Any]] = {}
    for row in data.rows:
        entry = tasks.setdefault(
            row["task_id"],
            {
                "id": row["task_id"],
                "category": row["category"],
                "type": row["type"],
                "difficulty": row["difficulty"],
                "passed": 0,
                "scored": 0,
                "epochs": [],
            },
        )
        if row["termination"] != "infra_error":
            entry["passed"] += row["passed"]
            entry["scored"] += 1
        entry["epochs"].append({**row, "anchor": data.anchors.get(row["key"])})
    return sorted(tasks.values(), key=lambda t: t["id"])


def success_groups(summary: dict[str, Any], dim: str) -> list[dict[str, Any]]:
    """``[{key, rate, ci_low, ci_high, successes, n}]`` of one breakdown dimension."""
    groups = (summary.get("breakdown") or {}).get(dim) or {}
    out = []
    for key, block in groups.items():
        success = block.get("success") if isinstance(block, dict) else None
        if isinstance(success, dict) and success.get("n"):
            out.append({"key": key, **success})
    return out


def figures(data: RunData, other: RunData | None = None) -> list[charts.Figure]:
    """Every chart of the report, in page order."""
    s, rows = data.summary, data.rows
    out = []
    dims = list(data.summary.get("breakdown") or {})
    first = [d for d in ("category", "type", "difficulty") if d in dims]
    for dim in first + [d for d in dims if d not in first]:
        groups = success_groups(s, dim)
        title = f"Success by {dim} (95% CI)"
        if len(groups) > MAX_GROUPS:
            title = f"Success by {dim}, the {MAX_GROUPS} largest of {len(groups)} (95% CI)"
            groups = sorted(groups, key=lambda g: -int(g["n"]))[:MAX_GROUPS]
        if groups:
            out.append(charts.success_bars(title, groups))
    if other is not None:
        for dim in ("category", "type", "difficulty"):
            mine = {g["key"]: g["rate"] for g in success_groups(s, dim)}
            theirs = {g["key"]: g["rate"] for g in success_groups(other.summary, dim)}
            if mine or theirs:
                both = {
                    k: (theirs.get(k), mine.get(k)) for k in sorted(mine.keys() | theirs.keys())
                }
                names = (f"before: {other.run_dir.name}", f"after: {data.run_dir.name}")
                out.append(charts.compare_bars(f"Success by {dim}, before and after", names, both))
    levels = s.get("levels") or {}
    out.append(
        charts.counts("Levels", {k: levels.get(k, 0) for k in LEVEL_ORDER}, charts.LEVEL_COLOURS)
    )
    terminations = {k: v for k, v in (s.get("terminations") or {}).items() if v}
    if terminations:
        out.append(charts.counts("Terminations", terminations))
    modes = {k: v for k, v in (s.get("failure_modes") or {}).items() if v}
    if modes:
        out.append(
            charts.counts(
                "Failure modes", dict(sorted(modes.items(), key=lambda kv: -kv[1])), horizontal=True
            )
        )
    out.append(charts.histogram("Steps per episode", [r["n_steps"] for r in rows], "steps", True))
    out.append(
        charts.histogram(
            "Tool calls per episode", [r["n_tool_calls"] for r in rows], "tool calls", True
        )
    )
    out.append(charts.histogram("Episode latency", [r["duration_s"] for r in rows], "seconds"))
    tokens = [r["input_tokens"] + r["output_tokens"] for r in rows]
    if any(tokens):
        out.append(charts.histogram("Tokens per episode", tokens, "tokens"))
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    if costs:
        out.append(charts.histogram("Cost per episode", costs, "USD"))
    return out


@dataclass
class CompareData:
    """The report's before/after section: ``before`` is the other run, ``after`` this one."""

    before: RunData
    comparison: Comparison
    tasks: list[dict[str, Any]]


def _counts(rows: list[dict[str, Any]]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        if row["termination"] != "infra_error":
            out[row["task_id"]][0] += row["passed"]
            out[row["task_id"]][1] += 1
    return out


def compare(after: RunData, before_dir: Path, *, allow_mismatch: bool) -> CompareData:
    """Pair this run (after) with another (before).

    Raises:
        ComparisonMismatch: the runs are of different suites, seeds or tracks and
            ``allow_mismatch`` is false.
    """
    comparison = compare_runs(before_dir, after.run_dir, allow_mismatch=allow_mismatch)
    before = load_run(before_dir, 0)
    a, b = _counts(before.rows), _counts(after.rows)
    tasks = []
    for task_id in sorted(a.keys() | b.keys()):
        ra = a[task_id][0] / a[task_id][1] if task_id in a else None
        rb = b[task_id][0] / b[task_id][1] if task_id in b else None
        change = "same"
        if ra is None or rb is None:
            change = "only before" if rb is None else "only after"
        elif rb != ra:
            change = "fixed" if rb > ra else "broke"
        tasks.append(
            {"id": task_id, "before": a.get(task_id), "after": b.get(task_id), "change": change}
        )
    tasks.sort(key=lambda t: (t["change"] == "same", t["id"]))
    return CompareData(before, comparison, tasks)
