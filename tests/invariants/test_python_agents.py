"""In-process agents (``python:``) sending generated hostile turns: every run keeps the invariants.

Harness-driven agents return turns whose every field is hostile (text with lone surrogates,
tool names and arguments of any shape, NaN or negative usage, a turn that is not one);
agent-driven agents call their tools, report usage and model calls and answer the same way.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import fuzz_agents
import pytest
from fuzz_support import (
    check_run,
    fuzz,
    hostile_arguments,
    hostile_json,
    hostile_number,
    hostile_text,
    run_fuzzed,
    small_suite,
    tool_names,
)
from hypothesis import given
from hypothesis import strategies as st

call = st.tuples(tool_names, hostile_arguments, st.one_of(st.just("c1"), hostile_text))
usage = st.one_of(
    st.none(), st.tuples(hostile_number, hostile_number, st.one_of(st.none(), hostile_number))
)
turn = st.fixed_dictionaries(
    {"content": st.one_of(st.none(), hostile_text)},
    optional={
        "calls": st.lists(call, max_size=3),
        "usage": usage,
        "give_up": st.one_of(st.booleans(), hostile_json),
        "retries": st.one_of(st.integers(0, 3), hostile_number),
    },
)
driven_turn = st.fixed_dictionaries(
    {},
    optional={
        "calls": st.lists(call, max_size=2),
        "usage": usage,
        "model_call": st.dictionaries(hostile_text, hostile_json, max_size=3),
        "answer": st.one_of(hostile_text, hostile_json),
    },
)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


def _run(suite: Path, runs: Path, agent: str, script: list[dict[str, Any]]) -> None:
    fuzz_agents.SCRIPT[:] = script
    run_dir = Path(tempfile.mkdtemp(dir=runs))
    run_fuzzed(suite, run_dir, f"python:fuzz_agents:{agent}", {})
    check_run(run_dir, infra_injected=False)


@fuzz
@given(script=st.lists(turn, min_size=1, max_size=3))
def test_hostile_turns_of_an_in_process_agent(suite: Path, runs: Path, script: Any) -> None:
    _run(suite, runs, "Scripted", script)


@fuzz
@given(script=st.lists(driven_turn, min_size=1, max_size=3))
def test_hostile_calls_usage_and_answers_of_a_driven_agent(
    suite: Path, runs: Path, script: Any
) -> None:
    _run(suite, runs, "Driven", script)
