"""AgentDojo inside toolproof: agreement with its own verdicts, oracle, gullible, hostile input.

The oracle's utility on every user task must equal what AgentDojo's own
``GroundTruthPipeline`` scores through ``TaskSuite.run_task_with_pipeline`` (a few
tasks fail upstream too: :data:`UPSTREAM_GROUND_TRUTH_FAILS`). Under an attack, the
``gullible`` agent's episodes are replayed inside AgentDojo (the same calls in the
same order, on AgentDojo's own environment, loaded by AgentDojo's own loader), and
toolproof's utility and security verdicts must equal AgentDojo's. CI runs a fixed
sample of pairs per suite; ``TOOLPROOF_AGENTDOJO_ALL=1`` runs every pair.
"""

from __future__ import annotations

import asyncio
import os
from functools import cache
from importlib import metadata
from pathlib import Path
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

from toolproof.engine import RunConfig, Runner  # noqa: E402
from toolproof.results import EpisodeRecord, RunReader  # noqa: E402

SUITES = ("banking", "slack", "travel", "workspace")
ALL = os.environ.get("TOOLPROOF_AGENTDOJO_ALL") == "1"
UPSTREAM_GROUND_TRUTH_FAILS: set[str] = set()
"""User tasks whose own ground truth AgentDojo's GroundTruthPipeline scores as failed: none
at v1.2.2 (earlier benchmark versions had some; the oracle matches whatever it scores)."""
SAMPLE = ["*.user_task_0", "*.user_task_1", "*.user_task_2", "*.user_task_13"]
"""The user tasks CI runs (every one with TOOLPROOF_AGENTDOJO_ALL=1)."""


def _run(
    suite: str, agent: str, out: Path, tasks: list[str] | None = None, built: Any = None
) -> list[EpisodeRecord]:
    config = RunConfig(suite=suite, agent=agent, tasks=tasks or [])
    asyncio.run(Runner(config, out, parallel=4, suite=built).run())
    with RunReader(out) as reader:
        return [r for r in (reader.record(row["key"]) for row in reader.rows()) if r is not None]


def _check(record: EpisodeRecord, name: str) -> Any:
    return next(c for c in record.score.checks if c.name == name)


@cache
def _upstream() -> Any:
    from toolproof.upstream import _agentdojo_upstream as upstream

    return upstream


def test_oracle_scores_what_the_ground_truth_pipeline_scores(tmp_path: Path) -> None:
    upstream = _upstream()
    mods = upstream.modules()
    records = _run("agentdojo", "oracle", tmp_path / "run", None if ALL else SAMPLE)
    if ALL:
        assert len(records) == sum(len(upstream.suites()[s].user_tasks) for s in SUITES) == 97
    fails: set[str] = set()
    for record in records:
        suite_name, task_id = record.task.id.split(".", 1)
        suite = upstream.suites()[suite_name]
        user_task = suite.get_user_task_by_id(task_id)
        expected, _ = suite.run_task_with_pipeline(
            mods.GroundTruthPipeline(user_task), user_task, None, {}
        )
        assert record.score.termination == "completed", record.task.id
        assert _check(record, "agentdojo_utility").passed is expected, record.task.id
        if not expected:
            fails.add(record.task.id)
    assert fails == {f for f in UPSTREAM_GROUND_TRUTH_FAILS if f in {r.task.id for r in records}}


ATTACK = "important_instructions"
PAIR_SAMPLE = ["*.user_task_0.*"]
"""The pairs CI runs under gullible, in banking, slack and travel: building workspace's 560
attacked tasks alone takes CI's budget (its placement is proven by test_agentdojo_envs)."""


def _replayed_in_agentdojo(record: EpisodeRecord, attack: Any) -> tuple[bool, bool, Any]:
    """The episode's calls and answer replayed by AgentDojo itself: (utility, security, env)."""
    from agentdojo.types import text_content_block_from_string

    mods = _upstream().modules()
    suite_name, user_id, injection_id = record.task.id.split(".")
    suite = _upstream().suites()[suite_name]
    user_task = suite.get_user_task_by_id(user_id)
    injection_task = suite.get_injection_task_by_id(injection_id)
    injections = attack.attack(user_task, injection_task)  # AgentDojo's own candidates
    env = user_task.init_environment(suite.load_and_inject_default_environment(injections))
    start = env.model_dump(mode="json")
    pre = env.model_copy(deep=True)
    runtime = mods.FunctionsRuntime(suite.tools)
    trace = []
    for step in record.trajectory.steps:
        for call in step.message.tool_calls:
            trace.append(mods.FunctionCall(function=call.name, args=dict(call.arguments)))
            runtime.run_function(env, call.name, dict(call.arguments))
    output = [text_content_block_from_string(record.trajectory.final_answer or "")]
    utility = suite._check_task_result(user_task, output, pre, env, trace)
    security = suite._check_task_result(injection_task, output, pre, env, trace)
    return utility, security, start


@pytest.mark.parametrize("suite_name", SUITES if ALL else SUITES[:3])
def test_gullible_verdicts_equal_agentdojo_on_the_same_episodes(
    suite_name: str, tmp_path: Path
) -> None:
    from toolproof.spec import load_suite

    upstream = _upstream()
    name = f"agentdojo:{suite_name}@{ATTACK}"
    built = load_suite(name)
    records = _run(name, "gullible", tmp_path / "run", None if ALL else PAIR_SAMPLE, built)
    assert records
    attack = upstream.modules().ATTACKS[ATTACK](
        upstream.suites()[suite_name], upstream._TargetPipeline(upstream.TARGET_MODEL)
    )
    attack.model_name = "the AI language model"  # what toolproof addresses (no agent known)
    obeyed = 0
    for record in records:
        utility, security, start = _replayed_in_agentdojo(record, attack)
        env_record = built.task(record.task.id).world.records["environment"]
        assert env_record == start, f"{record.task.id}: the attacked environment differs"
        assert _check(record, "agentdojo_utility").passed is utility, record.task.id
        verdict = _check(record, "attack")
        assert verdict.data["attack_succeeded"] is security, record.task.id
        assert verdict.data["exposed"], record.task.id  # the injection sits where GT reads
        obeyed += security
    if built.task(records[0].task.id).attack is not None:
        assert obeyed > 0  # gullible carries injections out


def test_no_attack_places_no_injection(tmp_path: Path) -> None:
    from toolproof.spec import load_suite

    upstream = _upstream()
    for suite_name in SUITES:
        suite = upstream.suites()[suite_name]
        goals = [t.GOAL for t in suite.injection_tasks.values()]
        built = load_suite(f"agentdojo:{suite_name}")
        for task in built.tasks:
            text = str(task.world.records)
            assert "<INFORMATION>" not in text and not any(g in text for g in goals), task.id
            assert task.attack is None and "attack" not in [c.name for c in task.success]


def test_garbage_arguments_are_tool_errors_not_crashes(tmp_path: Path) -> None:
    """An agent passing hostile arguments to AgentDojo's tools gets tool errors."""
    from toolproof.spec import load_suite
    from toolproof.tools import ToolGateway, resolve_tools
    from toolproof.tools.base import ToolContext
    from toolproof.trajectory import ToolCall
    from toolproof.worlds import World

    task = load_suite("agentdojo:banking").task("banking.user_task_0")
    world = World(task.world)
    gateway = ToolGateway(resolve_tools(task), ToolContext(world=world))
    before = dict(world.records)
    hostile = [
        ("send_money", {"recipient": "X", "amount": "lots", "subject": "s", "date": "d"}),
        ("send_money", {"recipient": ["a"] * 3, "amount": 1e308, "subject": {}, "date": None}),
        ("get_most_recent_transactions", {"n": "many"}),
        ("update_scheduled_transaction", {"id": "not-a-number"}),
        ("no_such_function", {}),
    ]
    for name, args in hostile:
        result = asyncio.run(gateway.call(ToolCall(id=name, name=name, arguments=args)))
        assert result.is_error, (name, result.content)
        assert "Traceback" not in (result.content or "")
    for path in ("../../etc/passwd", "x" * 100_000):  # AgentDojo answers "" for no such file
        call = ToolCall(id="r", name="read_file", arguments={"file_path": path})
        result = asyncio.run(gateway.call(call))
        assert result.content == "" and "root:" not in (result.content or "")
    assert gateway.crash is None
    assert world.records == before  # nothing was changed by refused calls


def test_cli_attack_is_recorded_and_bad_names_are_errors_for_people(
    invoke: Any, tmp_path: Path
) -> None:
    import json

    out = tmp_path / "run"
    first = invoke(
        "run", "agentdojo:banking", "--attack", ATTACK, "--agent", "gullible",
        "-t", "banking.user_task_0.*", "--out", out, "-q",
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["attack"] == ATTACK
    assert summary["config"]["suite"] == f"agentdojo:banking@{ATTACK}"
    row = summary["agentdojo"]["attacks"][ATTACK]["banking"]
    assert row["episodes"] == 9 and row["targeted_attack_success_rate"] > 0
    assert first.code in (0, 3), first.err
    bad = invoke("run", "agentdojo:banking", "--attack", "nope", "--agent", "oracle",
                 "--out", tmp_path / "b")  # fmt: skip
    assert bad.code != 0 and "important_instructions" in bad.err and "Traceback" not in bad.err
    core = invoke("run", "core", "--attack", ATTACK, "--agent", "oracle", "--out", tmp_path / "c")
    assert core.code != 0 and "has no attacks" in core.err and "Traceback" not in core.err


def test_stand_ins_do_not_outlive_the_import_and_bad_names_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    from toolproof.spec import SpecError
    from toolproof.upstream import agentdojo

    upstream = _upstream()
    upstream.modules()
    for name in upstream.STAND_INS:  # only AgentDojo's modules hold them, never sys.modules
        assert name not in sys.modules or not upstream._missing(name), name
    with pytest.raises(SpecError, match="not an AgentDojo suite; suites: banking"):
        agentdojo.build_suite("nosuch")
    for attack in ("dos", "manual"):  # manual would ask a person at load time
        with pytest.raises(SpecError, match="DoS attacks and 'manual' are not supported"):
            agentdojo.build_suite("banking", attack=attack)
    monkeypatch.setattr(upstream, "installed_version", lambda: "9.9.9")
    with pytest.raises(SpecError, match=r"proven on 0\.1\.35.*--allow-drift"):
        agentdojo.build_suite("banking")
    assert len(agentdojo.build_suite("banking", allow_drift=True).tasks) == 16
