"""What the run and runs pages show, read from ``summary.json`` and the episode rows.

``summary.json`` is read defensively: sections this module does not know are
shown generically (flattened numbers), so new metrics appear without a change
here. Aggregates over episodes come from :meth:`RunReader.rows` (columns only,
never the record JSON) and are cached by the run database's modification time.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolproof.results import DB_NAME, SUMMARY, RunReader

_KNOWN = {
    "toolproof_summary",
    "suite",
    "agent",
    "track",
    "config",
    "environment",
    "episodes",
    "success",
    "levels",
    "terminations",
    "tasks",
    "breakdown",
    "breakdowns",
    "failure_modes",
}
_DIMENSIONS = ("category", "type", "difficulty", "domain")
_MAX_EXTRAS = 200


def prop(successes: int, n: int) -> dict[str, Any]:
    """A success rate with its 95% Wilson interval, as JSON."""
    from toolproof.metrics import proportion  # metrics load on first use (_server.warm)

    return proportion(successes, n).to_dict()


def _is_prop(value: Any) -> bool:
    return isinstance(value, dict) and "rate" in value and "n" in value


def _success_of(group: Any) -> dict[str, Any] | None:
    """The success proportion of a breakdown group: the group itself or its metric block's."""
    if _is_prop(group):
        return dict(group)
    if isinstance(group, dict) and _is_prop(group.get("success")):
        return dict(group["success"])
    return None


def _given_breakdowns(summary: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for name in ("breakdown", "breakdowns"):
        given = summary.get(name)
        if not isinstance(given, dict):
            continue
        for dim, groups in given.items():
            if isinstance(groups, list):
                groups = {g.get("key", g.get("name")): g for g in groups if isinstance(g, dict)}
            if not isinstance(groups, dict):
                continue
            rows = []
            for key, group in groups.items():
                success = _success_of(group)
                if success is not None:
                    rows.append({**success, "key": str(key)})
            if rows:
                out.setdefault(str(dim), rows)
    return out


def breakdowns(
    summary: dict[str, Any], rows: list[dict[str, Any]] | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Success by category, type, difficulty, domain (and any other the summary breaks down by).

    Groups the summary gives (``breakdown``) are taken as they are; the others are
    counted from the episode rows (category, type, difficulty) or, for the domain of
    older summaries, from ``summary["tasks"]`` (infra errors excluded either way).
    """
    out = _given_breakdowns(summary)
    for dim in ("category", "type", "difficulty"):
        if dim in out or not rows:
            continue
        cells: dict[str, list[int]] = {}
        for row in rows:
            if row["termination"] != "infra_error" and row[dim] is not None:
                cell = cells.setdefault(str(row[dim]), [0, 0])
                cell[0] += bool(row["passed"])
                cell[1] += 1
        if cells:
            out[dim] = [{"key": k, **prop(s, n)} for k, (s, n) in sorted(cells.items())]
    tasks = summary.get("tasks")
    if not isinstance(tasks, dict):
        return out
    for dim in _DIMENSIONS:
        if dim in out:
            continue
        counts: dict[str, list[int]] = {}
        for entry in tasks.values():
            if not isinstance(entry, dict) or entry.get(dim) is None:
                continue
            cell = counts.setdefault(str(entry[dim]), [0, 0])
            if isinstance(entry.get("scored"), int):  # summary.json 3: counts per task
                cell[0] += int(entry.get("passed") or 0)
                cell[1] += entry["scored"]
                continue
            for epoch in entry.get("epochs", []):  # older summaries: one entry per episode
                if isinstance(epoch, dict) and epoch.get("termination") != "infra_error":
                    cell[0] += bool(epoch.get("passed"))
                    cell[1] += 1
        if counts:
            out[dim] = [{"key": k, **prop(s, n)} for k, (s, n) in sorted(counts.items())]
    return out


def extras(summary: dict[str, Any]) -> list[list[Any]]:
    """Numbers of summary sections this module does not know, as ``[name, value]`` pairs."""
    found: list[list[Any]] = []

    def walk(prefix: str, value: Any, depth: int) -> None:
        if len(found) >= _MAX_EXTRAS:
            return
        if isinstance(value, int | float) and not isinstance(value, bool):
            found.append([prefix, value])
        elif isinstance(value, dict) and depth < 3:
            if _is_prop(value):
                found.append(
                    [prefix, {k: value[k] for k in ("rate", "ci_low", "ci_high") if k in value}]
                )
                return
            for key, sub in value.items():
                walk(f"{prefix}.{key}" if prefix else str(key), sub, depth + 1)

    for key in sorted(summary):
        if key not in _KNOWN:
            walk(key, summary[key], 0)
    return found


def histogram(values: Iterable[float], bins: int = 20) -> dict[str, Any]:
    """Equal-width bins over the values: edges and counts, plus median and p95."""
    from toolproof.metrics import percentile

    data = sorted(float(v) for v in values if v is not None and v == v)  # v == v: not NaN
    if not data:
        return {"edges": [], "counts": [], "median": None, "p95": None, "n": 0, "discrete": False}
    low, high = data[0], data[-1]
    discrete = all(v.is_integer() for v in data) and high - low < bins
    if discrete:
        low, high, bins = low - 0.5, high + 0.5, int(high - low) + 1  # one bar per value
    width = (high - low) / bins or 1.0
    counts = [0] * bins
    for v in data:
        counts[min(bins - 1, int((v - low) / width))] += 1
    edges = [low + i * width for i in range(bins + 1)]
    return {
        "edges": edges,
        "counts": counts,
        "median": percentile(data, 50),
        "p95": percentile(data, 95),
        "n": len(data),
        "discrete": discrete,
    }


def from_rows(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Aggregates over episode rows: counts, facets, failure modes, distributions, totals."""
    scored = [r for r in rows if r["termination"] != "infra_error"]
    costs = [r["cost_usd"] for r in rows if r["cost_usd"] is not None]
    modes = Counter(r["failure_mode"] or "unclassified" for r in scored if not r["passed"])
    return {
        "success": prop(sum(r["passed"] for r in scored), len(scored)),
        "levels": dict(Counter(r["level"] for r in scored).most_common()),
        "terminations": dict(Counter(r["termination"] for r in rows).most_common()),
        "failure_modes": dict(modes.most_common()),
        "facets": {
            col: sorted({str(r[col]) for r in rows if r[col] is not None})
            for col in ("category", "type", "difficulty", "level", "termination", "failure_mode")
        },
        "distributions": {
            "steps": histogram(r["n_steps"] for r in rows),
            "tool_calls": histogram(r["n_tool_calls"] for r in rows),
            "duration_s": histogram(r["duration_s"] for r in rows),
            "tokens": histogram(r["input_tokens"] + r["output_tokens"] for r in rows),
            "cost_usd": histogram(costs),
        },
        "totals": {
            "episodes": len(rows),
            "input_tokens": sum(r["input_tokens"] for r in rows),
            "output_tokens": sum(r["output_tokens"] for r in rows),
            "cost_usd": sum(costs) if costs else None,
            "duration_s": sum(r["duration_s"] for r in rows),
        },
    }


OVERVIEW = "overview.json"
"""The precomputed overview in a run directory: written when the run finishes (and by the
viewer when it is missing or stale), used only while its stamp matches the run's files."""
_OVERVIEW_FORMAT = 1


def stamp_of(run_dir: Path) -> list[int]:
    """Size and modification time (ns) of each file whose change changes the overview
    (the WAL file too, mid-run); a missing or empty file counts as ``[0, 0]`` (a reader
    creates an empty WAL when the writer's close has removed it: nothing changed)."""
    stamp: list[int] = []
    for name in (DB_NAME, f"{DB_NAME}-wal", SUMMARY):
        try:
            st = (run_dir / name).stat()
        except OSError:
            stamp += [0, 0]
            continue
        stamp += [st.st_size, st.st_mtime_ns] if st.st_size else [0, 0]
    return stamp


def read_overview(run_dir: Path, stamp: list[int]) -> dict[str, Any] | None:
    """The stored overview if it was computed from the files as they are now."""
    try:
        data = json.loads((run_dir / OVERVIEW).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _OVERVIEW_FORMAT:
        return None
    view = data.get("overview")
    if data.get("stamp") != stamp or not isinstance(view, dict):
        return None
    return view


def write_overview(run_dir: Path) -> dict[str, Any]:
    """Compute the overview and store it in the run directory (when it can be written:
    it only saves time), stamped with the files it was computed from."""
    stamp = stamp_of(run_dir)
    view = overview(run_dir)
    if stamp_of(run_dir) != stamp:  # the run moved on while computing: store nothing
        return view
    text = json.dumps({"format": _OVERVIEW_FORMAT, "stamp": stamp, "overview": view})
    tmp = run_dir / f".{OVERVIEW}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, run_dir / OVERVIEW)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
    return view


class OverviewCache:
    """Per-run overviews: in memory, else the stored ``overview.json``, else computed (and
    stored) again; all keyed by the run's files (:func:`stamp_of`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[list[int], dict[str, Any]]] = {}

    def get(self, run_dir: Path) -> dict[str, Any]:
        """The overview of one run (see :func:`overview`)."""
        stamp = stamp_of(run_dir)
        with self._lock:
            hit = self._cache.get(run_dir)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        value = read_overview(run_dir, stamp)
        if value is None:
            finished = (run_dir / SUMMARY).is_file()
            value = write_overview(run_dir) if finished else overview(run_dir)
        with self._lock:
            self._cache[run_dir] = (stamp, value)
        return value


def _first_infra_error(reader: RunReader) -> str | None:
    from toolproof.metrics.failures import recorded_error

    for row in reader.rows(where="termination = 'infra_error'", limit=5):
        record = reader.record(row["key"])
        error = None if record is None else recorded_error(record)
        if error:
            return error
    return None


def overview(run_dir: Path) -> dict[str, Any]:
    """Everything the run page shows above the table, JSON-ready.

    ``banner`` is the infra-error notice (None without infra errors); ``live``
    is true while the run has no summary.json or is incomplete, and the page
    polls until it is not.
    """
    from toolproof.metrics.failures import infra_banner

    with RunReader(run_dir) as reader:
        summary = reader.summary() or {}
        meta = reader.meta()
        rows = reader.rows()
        first = reader.record(rows[0]["key"]) if rows else None
        infra_error = _first_infra_error(reader)
    computed = from_rows(rows)
    suite = summary.get("suite") or meta.get("suite") or {}
    config = summary.get("config") or meta.get("config") or {}
    episodes = summary.get("episodes") or {}
    success = summary.get("success") if _is_prop(summary.get("success")) else computed["success"]
    infra = computed["terminations"].get("infra_error", 0)
    planned = episodes.get("planned", meta.get("planned", len(rows)))
    complete = episodes.get("complete", len(rows) >= planned)
    return {
        "suite": {k: suite.get(k) for k in ("name", "version", "seed", "digest")},
        "agent": summary.get("agent") or config.get("agent"),
        "track": summary.get("track") or meta.get("track"),
        "started_at": first.trajectory.started_at if first is not None else None,
        "finished": bool(summary),
        "episodes": {
            "planned": planned,
            "finished": len(rows),
            "infra_errors": infra,
            "complete": complete,
        },
        "live": not summary or not complete,
        "banner": infra_banner(infra, len(rows), infra_error),
        "success": success,
        "levels": summary.get("levels") or computed["levels"],
        "terminations": computed["terminations"],
        "failure_modes": computed["failure_modes"],
        "breakdowns": breakdowns(summary, rows),
        "distributions": computed["distributions"],
        "totals": computed["totals"],
        "facets": computed["facets"],
        "extras": extras(summary),
        "environment": summary.get("environment") or meta.get("environment") or {},
        "config": config,
    }
