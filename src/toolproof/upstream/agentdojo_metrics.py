"""AgentDojo's own figures from a toolproof run: utility, utility under attack, targeted ASR.

AgentDojo's benchmark script reports, per suite, the mean of the user tasks' utility
results without an attack ("utility"), and under an attack the mean of the utility
results over (user task, injection task) pairs ("utility under attack") and the mean
of the security results ("targeted attack success rate": ``security()`` is True when
the attacker's goal was reached). This module reads the same verdicts back from the
episodes' check results (``agentdojo_utility`` and the ``attack`` check's
``attack_succeeded``), per suite and per attack, plus ``all``: the mean over every
episode of the run (AgentDojo's leaderboard pools the suites' tasks the same way).
Infra errors are left out, as everywhere in toolproof. Pure Python: nothing here
imports ``agentdojo``.
"""

from __future__ import annotations

from typing import Any

from toolproof.scoring.checks.attack import ATTACK_ROLE

UTILITY_CHECK = "agentdojo_utility"
_SUITE = "agentdojo:"
_ATTACK = "agentdojo-attack:"


def _tag(record: Any, prefix: str) -> str | None:
    return next((t[len(prefix) :] for t in record.task.tags if t.startswith(prefix)), None)


class AgentDojoAccumulator:
    """Counts AgentDojo episodes one at a time for :meth:`to_dict`."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str | None, str], list[int]] = {}
        self._tasks: dict[tuple[str | None, str], set[str]] = {}

    def add(self, record: Any) -> None:
        """Count one episode (an ``EpisodeRecord``: ``results`` sits above this layer, so it
        is read by duck typing); ignored unless it is an AgentDojo task that was scored."""
        suite = _tag(record, _SUITE)
        if suite is None or record.infra_error:
            return
        attack = _tag(record, _ATTACK)
        utility = any(c.name == UTILITY_CHECK and c.passed for c in record.score.checks)
        succeeded = any(
            c.data.get("role") == ATTACK_ROLE and c.data.get("attack_succeeded") is True
            for c in record.score.checks
        )
        for key in ((attack, suite), (attack, "all")):
            row = self._rows.setdefault(key, [0, 0, 0])
            row[0] += 1
            row[1] += utility
            row[2] += succeeded
            self._tasks.setdefault(key, set()).add(record.task.id)

    def _block(self, key: tuple[str | None, str]) -> dict[str, Any]:
        episodes, utility, succeeded = self._rows[key]
        block: dict[str, Any] = {"tasks": len(self._tasks[key]), "episodes": episodes}
        if key[0] is None:
            block["utility"] = utility / episodes
        else:
            block["utility_under_attack"] = utility / episodes
            block["targeted_attack_success_rate"] = succeeded / episodes
        return block

    def to_dict(self) -> dict[str, Any] | None:
        """The ``agentdojo`` section of summary.json, or None when the run has no such task."""
        if not self._rows:
            return None
        from ._agentdojo_upstream import BENCHMARK_VERSION

        out: dict[str, Any] = {"benchmark_version": BENCHMARK_VERSION}
        plain = sorted(s for a, s in self._rows if a is None)
        if plain:
            out["no_attack"] = {s: self._block((None, s)) for s in plain}
        attacks = sorted({a for a, _ in self._rows if a is not None})
        if attacks:
            out["attacks"] = {
                a: {s: self._block((a, s)) for s in sorted(s for b, s in self._rows if b == a)}
                for a in attacks
            }
        return out
