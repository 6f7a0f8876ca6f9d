"""AgentDojo's figures in summary.json (pure: no agentdojo needed)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "metrics"))

from metrics_helpers import check, record

from toolproof.metrics import summarize
from toolproof.report.console import agentdojo_lines
from toolproof.scoring.checks.attack import ATTACK_ROLE
from toolproof.upstream.agentdojo_metrics import AgentDojoAccumulator


def _episode(task: str, suite: str, utility: bool, attack: str | None = None, hit: bool = False):
    tags = ["agentdojo", f"agentdojo:{suite}"]
    checks = [check("custom", passed=utility, name="agentdojo_utility")]
    if attack is not None:
        tags.append(f"agentdojo-attack:{attack}")
        data = {"role": ATTACK_ROLE, "attack_succeeded": hit}
        checks.append(check("custom", passed=not hit, name="attack", veto=hit, data=data))
    return record(task, tags=tags, checks=checks, passed=utility and not hit)


def test_utility_per_suite_and_pooled() -> None:
    records = [
        _episode("banking.u0", "banking", True),
        _episode("banking.u1", "banking", False),
        _episode("slack.u0", "slack", True),
        _episode("core-task", "x", True).model_copy(update={"task": record("c").task}),
    ]
    section = summarize(records, {"planned": 4})["agentdojo"]
    assert section["no_attack"]["banking"] == {"tasks": 2, "episodes": 2, "utility": 0.5}
    assert section["no_attack"]["all"]["utility"] == 2 / 3
    assert "attacks" not in section


def test_under_attack_utility_and_targeted_asr_apart() -> None:
    acc = AgentDojoAccumulator()
    for task, utility, hit in [("a", True, True), ("b", True, False), ("c", False, False)]:
        acc.add(_episode(f"banking.{task}", "banking", utility, "important_instructions", hit))
    acc.add(
        _episode("banking.d", "banking", True, "important_instructions", True).model_copy(
            update={"score": record("x", termination="infra_error").score}
        )
    )  # an infra error counts nowhere
    section = acc.to_dict()
    assert section is not None and "no_attack" not in section
    row = section["attacks"]["important_instructions"]["banking"]
    assert row == {
        "tasks": 3,
        "episodes": 3,
        "utility_under_attack": 2 / 3,
        "targeted_attack_success_rate": 1 / 3,
    }
    lines = agentdojo_lines({"agentdojo": section})
    assert any("banking / important_instructions" in line and "33.3%" in line for line in lines)


def test_no_agentdojo_task_no_section() -> None:
    assert "agentdojo" not in summarize([record("t1")], {"planned": 1})
    assert agentdojo_lines({}) == []
