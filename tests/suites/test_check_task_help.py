"""``toolproof check-task --help`` names every rule of the gate a finding may carry."""

from __future__ import annotations

from click.testing import CliRunner

from toolproof.cli._check_task import check_task

RULES = (
    "oracle",
    "noop",
    "random",
    "answer_in_prompt",
    "answer_type",
    "answer_rivals",
    "facts_vary",
    "scaffold",
    "hidden_cases",
)


def test_the_help_lists_every_rule() -> None:
    shown = CliRunner().invoke(check_task, ["--help"]).output
    flat = " ".join(shown.split())
    missing = [rule for rule in RULES if f"({rule}" not in flat and f" {rule}" not in flat]
    assert missing == []
