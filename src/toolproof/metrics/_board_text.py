"""The text of a leaderboard's cells and pairwise lines: one source for the console, the
HTML file and the viewer's page (report and viewer are sibling layers; both read it here),
so the three never show different numbers."""

from __future__ import annotations

from typing import Any

from .leaderboard import Leaderboard, Standing

NONE = "\N{EN DASH}"


def _pct(value: float | None) -> str:
    return NONE if value is None else f"{100 * value:.1f}%"


def _ks(values: dict[str, float]) -> str:
    """``k=1 80.0%, k=3 60.0%`` (keys in numeric order)."""
    return ", ".join(f"k={k} {_pct(values[k])}" for k in sorted(values, key=int)) or NONE


def cells(row: Standing) -> dict[str, str]:
    """The text of one standing's columns (the console, the HTML and the viewer share it)."""
    cost = (
        NONE
        if row.cost_per_task is None
        else f"${row.cost_per_task:.4f}" + ("*" if row.cost_status == "partial" else "")
    )
    if row.cost_status == "unpriced":
        cost = "unpriced"
    elif row.cost_status == "no_usage":
        cost = "$0"
    flags = []
    if not row.complete:
        flags.append("INCOMPLETE")
    if row.infra_errors:
        flags.append(f"{row.infra_errors} infra errors")
    return {
        "rank": str(row.rank),
        "agent": row.agent or NONE,
        "model": row.model or NONE,
        "success": f"{_pct(row.success)} ({row.successes}/{row.scored})",
        "ci": f"{_pct(row.ci_low)}-{_pct(row.ci_high)}" if row.ci_low is not None else NONE,
        "pass_at_k": _ks(row.pass_at_k),
        "pass_hat_k": _ks(row.pass_hat_k),
        "tokens": NONE if row.tokens_per_task is None else f"{row.tokens_per_task:.0f}",
        "cost": cost,
        "run": row.run,
        "notes": ", ".join(flags),
    }


COLUMNS = (
    ("rank", "#"),
    ("agent", "agent"),
    ("model", "model"),
    ("success", "success"),
    ("ci", "95% CI"),
    ("pass_at_k", "pass@k"),
    ("pass_hat_k", "pass^k"),
    ("tokens", "tokens/task"),
    ("cost", "cost/task"),
    ("run", "run"),
    ("notes", ""),
)


def pair_lines(board: Leaderboard) -> list[str]:
    """One line per adjacent pair of the ranking: its McNemar test on success."""
    if not board.paired:
        return [f"no pairwise tests: {board.note}"]
    lines = []
    for pair in board.pairs:
        p = NONE if pair.p_value is None else f"p={pair.p_value:.3g}"
        verdict = "significantly better" if pair.significant else "not significantly better"
        lines.append(
            f"{pair.upper} vs {pair.lower}: {verdict} ({p}, exact McNemar over "
            f"{pair.paired} paired episodes: {pair.upper_only} passed only above, "
            f"{pair.lower_only} only below)"
        )
    return lines


def context(board: Leaderboard) -> dict[str, Any]:
    """What the HTML page and the viewer's page render."""
    return {
        "suite": board.suite,
        "columns": COLUMNS,
        "rows": [cells(row) for row in board.standings],
        "pairs": pair_lines(board),
    }
