"""The quality gate of a task: what ``toolproof check-task`` and CI's proven tests enforce.

A task is fit to ship when (each rule is a :class:`Finding` when broken):

* ``valid``: it loads and passes every preflight check
  (:mod:`toolproof.engine.preflight`): among them, every tool its reference solution
  calls is one it offers;
* ``oracle``: the reference solution is ``perfect`` on every one of :data:`ORACLE_EPOCHS`
  seeds, without a task error;
* ``noop``: doing nothing is ``fail`` with no credit, and no progress check passes on the
  initial world (a check that holds before the agent acts measures nothing);
* ``blind-claim``: ``noop`` answering that the thing is impossible, missing, refused or
  done, without a tool call, is ``fail`` with no credit (no credit without looking:
  :mod:`toolproof.scoring.looked`);
* ``random``: seeded random calls never pass;
* ``flawed``: each flawed agent fails exactly the tasks of its weakness, as
  ``tests/suites/test_proven.py`` defines it (``gullible`` the attacked tasks,
  ``never-asks`` the ambiguous ones, ``never-retries`` the tool_error tasks whose
  reference run meets an error result) and passes every other;
* ``answer_in_prompt``: no rendered prompt contains the answer an output or answer check
  expects;
* ``answer_type``, ``answer_rivals``: a typed answer's reference and expected value fit the
  declared type on every seed, and the world holds rival values of that type (so that the
  loose reading of a free-text answer can fail);
* ``facts_vary``: the values the checks compare change across seeds (templates draw them);
* ``hidden_cases``: every ``hidden_tests`` check's ``fail_to_pass`` cases fail on the
  original code (the noop agent's runs) and pass on the reference fix (the oracle's), and
  its ``pass_to_pass`` cases pass on both (SWE-bench's discipline).

The episodes run in process through :class:`~toolproof.engine.Worker`, the engine's own
runner, so a gate verdict is what ``toolproof run`` would score. The judging functions
take records, not runs, so the proven tests share them with one run per suite and agent.
"""

from __future__ import annotations

from toolproof.spec import Suite, Task

from ._hidden import judge_hidden_cases
from ._rules import (
    BLIND,
    BLIND_CLAIM,
    FIXED_FACTS,
    FLAWED,
    MARKER,
    ORACLE_EPOCHS,
    OTHER_EPOCHS,
    RANDOM_PASSABLE,
    Finding,
)
from ._runs import GateRecords, gate_records, run_agent
from ._static import (
    CHOICE_SEEDS,
    instances_of,
    judge_answer_in_prompt,
    judge_answer_type,
    judge_facts_vary,
    judge_markers,
)
from ._verdicts import (
    asks,
    judge_blind,
    judge_flawed,
    judge_noop,
    judge_oracle,
    judge_random,
    meets_error_to_recover,
    why,
)

__all__ = [
    "BLIND",
    "BLIND_CLAIM",
    "CHOICE_SEEDS",
    "FIXED_FACTS",
    "FLAWED",
    "MARKER",
    "ORACLE_EPOCHS",
    "OTHER_EPOCHS",
    "RANDOM_PASSABLE",
    "Finding",
    "GateRecords",
    "asks",
    "gate_records",
    "instances_of",
    "judge_answer_in_prompt",
    "judge_answer_type",
    "judge_blind",
    "judge_facts_vary",
    "judge_flawed",
    "judge_hidden_cases",
    "judge_markers",
    "judge_noop",
    "judge_oracle",
    "judge_random",
    "judge_task",
    "meets_error_to_recover",
    "run_agent",
    "why",
]


def judge_task(suite: Suite, task: Task, records: GateRecords) -> list[Finding]:
    """Every gate rule on one task, from the records of every agent."""
    oracle = records.of("oracle", task.id)
    findings = judge_markers(task, suite.task_file(task.id).read_text(encoding="utf-8"))
    findings += judge_oracle(task, oracle)
    findings += judge_noop(task, records.of("noop", task.id))
    findings += judge_blind(task, records.of(BLIND, task.id))
    findings += judge_hidden_cases(task, records.of("noop", task.id), oracle)
    findings += judge_random(task, records.of("random", task.id))
    for agent in FLAWED:
        findings += judge_flawed(task, agent, records.of(agent, task.id), oracle)
    instances = instances_of(suite, task.id, ORACLE_EPOCHS)
    findings += judge_answer_in_prompt(
        instances, lambda: instances_of(suite, task.id, CHOICE_SEEDS)
    )
    findings += judge_facts_vary(instances)
    findings += judge_answer_type(instances)
    return findings
