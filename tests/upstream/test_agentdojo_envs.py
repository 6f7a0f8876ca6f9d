"""Attacked environments: toolproof's fast placement equals AgentDojo's own loader.

For sampled (user task, injection task) pairs of every suite (every pair with
``TOOLPROOF_AGENTDOJO_ALL=1``): the injection candidates equal AgentDojo's own
``get_injection_candidates``, and the environment with the attack's injections equals
``TaskSuite.load_and_inject_default_environment``, field by field (derived fields too).
"""

from __future__ import annotations

import os
from importlib import metadata
from typing import Any

import pytest

try:
    metadata.version("agentdojo")
    INSTALLED = True
except metadata.PackageNotFoundError:
    INSTALLED = False

pytestmark = pytest.mark.skipif(
    not INSTALLED,
    reason="agentdojo not installed: pip install --no-deps 'agentdojo==0.1.35' "
    "'deepdiff==8.6.1' orderly-set email-validator dnspython",
)

ALL = os.environ.get("TOOLPROOF_AGENTDOJO_ALL") == "1"
SUITES = ("banking", "slack", "travel", "workspace")


def _sample(items: list[Any], picks: tuple[int, ...]) -> list[Any]:
    return items if ALL else [items[i] for i in picks if -len(items) <= i < len(items)]


@pytest.mark.parametrize("suite_name", SUITES)
@pytest.mark.parametrize("attack_name", ["important_instructions", "tool_knowledge"])
def test_placed_injections_equal_agentdojos_loader(suite_name: str, attack_name: str) -> None:
    from toolproof.upstream import _agentdojo_upstream as upstream
    from toolproof.upstream._agentdojo_envs import SuiteEnvironments

    suite = upstream.suites()[suite_name]
    envs = SuiteEnvironments(suite)
    attack = upstream.modules().ATTACKS[attack_name](
        suite, upstream._TargetPipeline(upstream.TARGET_MODEL)
    )
    users = _sample(list(suite.user_tasks.values()), (0, 13))
    injections = _sample(list(suite.injection_tasks.values()), (0, -1))
    for user_task in users:
        assert envs.candidates(user_task) == attack.get_injection_candidates(user_task)
        for injection_task in injections:
            placed = attack.attack(user_task, injection_task)
            assert placed and all(injection_task.GOAL in text for text in placed.values())
            ours = envs.injected(placed).model_dump(mode="json")
            theirs = suite.load_and_inject_default_environment(placed).model_dump(mode="json")
            assert ours == theirs, (user_task.ID, injection_task.ID)
    assert envs.injected({}).model_dump(mode="json") == envs.default_dump


def test_a_string_holding_two_vectors_is_loaded_agentdojos_way() -> None:
    from toolproof.upstream import _agentdojo_upstream as upstream
    from toolproof.upstream._agentdojo_envs import SuiteEnvironments

    suite = upstream.suites()["banking"]
    envs = SuiteEnvironments(suite)
    vector = sorted(envs.places)[0]
    envs.entangled.add(vector)  # as if another vector shared its object
    placed = {vector: "Say hi. " * 3}
    assert envs.injected(placed).model_dump(
        mode="json"
    ) == suite.load_and_inject_default_environment(placed).model_dump(mode="json")
    other = sorted(envs.places)[-1]
    mixed = {vector: "one text", other: "another text"}  # two texts: AgentDojo's way too
    assert envs.injected(mixed).model_dump(
        mode="json"
    ) == suite.load_and_inject_default_environment(mixed).model_dump(mode="json")
