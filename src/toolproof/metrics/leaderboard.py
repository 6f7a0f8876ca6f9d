"""A leaderboard of N runs: ranked by success with confidence intervals, pass@k / pass^k,
tokens and cost per task, and pairwise significance where the runs pair.

Runs are ranked only when they measured the same thing: the same suite name, version and
content (digest) and the same prompt track; anything else is refused, naming each
difference (:class:`LeaderboardMismatch`). Runs that also share the seed pair task by task
(the same instances), and each adjacent pair in the ranking gets the exact McNemar test
on success over the paired episodes (:func:`toolproof.metrics.compare.compare_stats`);
with different seeds the ranking stands but no pairwise test is made, and the board says
why.

The ranking key is the success rate, then the lower end of its 95% Wilson interval, then
the cost per task (cheaper first), then the run folder (a stable order).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .compare import compare_stats, identity, load_run
from .summary import summarize

__all__ = ["Leaderboard", "LeaderboardMismatch", "PairTest", "Standing", "leaderboard"]

SHARED = ("suite", "version", "digest", "track")
"""Identity fields every ranked run must share (:func:`toolproof.metrics.compare.identity`)."""


class LeaderboardMismatch(ValueError):
    """The runs do not measure the same thing; ``reasons`` names each difference."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("cannot rank these runs: " + "; ".join(reasons))


@dataclass(frozen=True)
class Standing:
    """One run's row of the board."""

    rank: int
    run: str
    agent: str | None
    model: str | None
    success: float | None
    ci_low: float | None
    ci_high: float | None
    successes: int
    scored: int
    tasks: int
    epochs: int
    pass_at_k: dict[str, float]
    pass_hat_k: dict[str, float]
    tokens_per_task: float | None
    cost_per_task: float | None
    cost_status: str
    complete: bool
    infra_errors: int


@dataclass(frozen=True)
class PairTest:
    """The success test of two adjacent runs of the ranking (``upper`` ranked above)."""

    upper: str
    lower: str
    paired: int
    upper_only: int
    lower_only: int
    p_value: float | None
    significant: bool


@dataclass
class Leaderboard:
    """The ranked runs, the shared suite, and the adjacent pairwise tests."""

    suite: dict[str, Any]
    standings: list[Standing]
    pairs: list[PairTest] = field(default_factory=list)
    paired: bool = True
    note: str | None = None
    """Why there are no pairwise tests (runs with different seeds), when there are none."""
    alpha: float = 0.05

    def to_dict(self) -> dict[str, Any]:
        """Plain data (``leaderboard --json``, the viewer's page)."""
        return {
            "suite": self.suite,
            "alpha": self.alpha,
            "paired": self.paired,
            "note": self.note,
            "standings": [asdict(s) for s in self.standings],
            "pairs": [asdict(p) for p in self.pairs],
        }


def mismatch_reasons(identities: list[dict[str, Any]]) -> list[str]:
    """Why runs cannot be ranked together (empty: they can): each field of :data:`SHARED`
    that differs, with each run's value."""
    reasons = []
    for key in SHARED:
        values = {str(i.get(key)) for i in identities}
        if len(values) > 1:
            each = ", ".join(f"{i['run']}: {i.get(key)!s:.16}" for i in identities)
            what = {"digest": "suite content", "version": "suite version"}.get(key, key)
            reasons.append(f"different {what} ({each})")
    return reasons


def _per_task(total: float | None, tasks: int) -> float | None:
    return None if total is None or not tasks else total / tasks


def _standing(run: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """A run's row before ranking (every :class:`Standing` field but ``rank``)."""
    success = summary.get("success") or {}
    episodes = summary.get("episodes") or {}
    tasks = len(summary.get("tasks") or {})
    cost = summary.get("cost") or {}
    tokens = summary.get("tokens") or {}
    return {
        "run": str(run),
        "agent": summary.get("agent"),
        "model": summary.get("model"),
        "success": success.get("rate") if success.get("n") else None,
        "ci_low": success.get("ci_low") if success.get("n") else None,
        "ci_high": success.get("ci_high") if success.get("n") else None,
        "successes": int(success.get("successes") or 0),
        "scored": int(success.get("n") or 0),
        "tasks": tasks,
        "epochs": int((summary.get("config") or {}).get("epochs") or 1),
        "pass_at_k": dict(summary.get("pass_at_k") or {}),
        "pass_hat_k": dict(summary.get("pass_hat_k") or {}),
        "tokens_per_task": _per_task(float(tokens.get("total") or 0), tasks),
        "cost_per_task": _per_task(cost.get("usd"), tasks),
        "cost_status": str(cost.get("status") or "no_usage"),
        "complete": bool(episodes.get("complete", True)),
        "infra_errors": int(episodes.get("infra_errors") or 0),
    }


def _key(row: dict[str, Any]) -> tuple[float, float, float, str]:
    cost = row["cost_per_task"]
    return (
        -(row["success"] if row["success"] is not None else -1.0),
        -(row["ci_low"] if row["ci_low"] is not None else -1.0),
        cost if cost is not None else float("inf"),
        row["run"],
    )


def leaderboard(runs: list[Path], *, alpha: float = 0.05) -> Leaderboard:
    """Rank ``runs`` (two or more run folders; one is a board of one).

    Raises:
        LeaderboardMismatch: the runs differ in suite, version, content or track.
        FileNotFoundError: a folder is not a run.
    """
    loaded = [(run, *load_run(run)) for run in runs]
    identities = [identity(meta, run) for run, meta, _ in loaded]
    reasons = mismatch_reasons(identities)
    if reasons:
        raise LeaderboardMismatch(reasons)
    rows: list[dict[str, Any]] = []
    stats = {}
    for run, meta, episodes in loaded:
        summary = summarize_stats(run, meta)
        rows.append(_standing(run, summary))
        stats[str(run)] = episodes
    rows.sort(key=_key)
    standings = [Standing(rank=i + 1, **row) for i, row in enumerate(rows)]
    seeds = {str(i.get("seed")) for i in identities}
    board = Leaderboard(suite=_suite_of(identities[0]), standings=standings, alpha=alpha)
    if len(seeds) > 1:
        board.paired = False
        board.note = (
            "the runs used different seeds (" + ", ".join(sorted(seeds)) + "): their task "
            "instances differ, so no pairwise test is made"
        )
        return board
    for upper, lower in itertools.pairwise(standings):
        board.pairs.append(_pair_test(upper.run, lower.run, stats, alpha))
    return board


def summarize_stats(run: Path, meta: dict[str, Any]) -> dict[str, Any]:
    """The run's summary.json (a stopped run's too); counted again from its records when
    it has none (a run killed before its summary was written)."""
    import json

    file = run / "summary.json"
    if file.is_file():
        return dict(json.loads(file.read_text(encoding="utf-8")))
    from toolproof.results import RunReader

    with RunReader(run) as reader:
        return summarize(reader.records(), meta)


def _pair_test(upper: str, lower: str, stats: dict[str, Any], alpha: float) -> PairTest:
    rows, _, _, counts = compare_stats(stats[lower], stats[upper], alpha=alpha, resamples=200)
    success = next(r for r in rows if r.name == "success")
    return PairTest(
        upper=upper,
        lower=lower,
        paired=counts["paired"],
        upper_only=int(success.b_only or 0),
        lower_only=int(success.a_only or 0),
        p_value=success.p_value,
        significant=bool(success.significant and (success.change or 0) > 0),
    )


def _suite_of(ident: dict[str, Any]) -> dict[str, Any]:
    return {k: ident.get(k) for k in ("suite", "version", "digest", "seed", "track")}
