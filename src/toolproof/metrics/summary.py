"""The run summary: the headline numbers written to ``summary.json``.

Infra errors are counted and reported but kept out of every denominator.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from toolproof.results import EpisodeRecord

from .stats import proportion


def _scored(records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
    return [r for r in records if not r.infra_error]


def summarize(records: Sequence[EpisodeRecord], meta: dict[str, Any]) -> dict[str, Any]:
    """Summary of a run: config facts, success with a 95% CI, levels, terminations, per task."""
    scored = _scored(records)
    passed = sum(1 for r in scored if r.score.passed)
    tasks: dict[str, dict[str, Any]] = {}
    for record in sorted(records, key=lambda r: (r.task.id, r.epoch)):
        entry = tasks.setdefault(
            record.task.id,
            {
                "category": record.task.category,
                "type": record.task.type,
                "difficulty": record.task.difficulty,
                "epochs": [],
            },
        )
        entry["epochs"].append(
            {
                "epoch": record.epoch,
                "passed": record.score.passed,
                "level": record.score.level.value,
                "termination": record.score.termination.value,
                "fraction": round(record.score.fraction, 6),
            }
        )
    usage_in = sum(r.trajectory.usage().input_tokens for r in records)
    usage_out = sum(r.trajectory.usage().output_tokens for r in records)
    return {
        "toolproof_summary": 1,
        "suite": meta.get("suite", {}),
        "agent": meta.get("config", {}).get("agent"),
        "track": meta.get("track"),
        "config": meta.get("config", {}),
        "environment": meta.get("environment", {}),
        "episodes": {
            "planned": meta.get("planned", len(records)),
            "finished": len(records),
            "scored": len(scored),
            "infra_errors": len(records) - len(scored),
            "complete": len(records) >= meta.get("planned", len(records)),
        },
        "success": proportion(passed, len(scored)).to_dict(),
        "levels": dict(sorted(Counter(r.score.level.value for r in scored).items())),
        "terminations": dict(sorted(Counter(r.score.termination.value for r in records).items())),
        "tokens": {"input": usage_in, "output": usage_out},
        "tasks": tasks,
    }
