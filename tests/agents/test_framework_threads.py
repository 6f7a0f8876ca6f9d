"""Framework agents (LangChain, LlamaIndex, AutoGen) run on their own thread and loop.

A framework agent or its factory that blocks (a synchronous model client, ``time.sleep``
in an ``async def``) must stall only its own episode. Blocked code waits on
``blocking_frameworks.RELEASE``, which the test sets only once every other episode is
stored: on the harness's loop, nothing else could finish.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.agents import build_agent, episode_context, parse_agent_spec
from toolproof.agents.builtin._own_thread import OwnThreadDrivenAgent
from toolproof.engine import RunConfig, Runner
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import load_suite, render
from toolproof_helpers import blocking_agents, make_task, write_suite

HERE = Path(__file__).parent


@pytest.fixture
def blocking() -> Iterator[Any]:
    with blocking_agents(HERE, "blocking_frameworks") as module:
        yield module


def _suite(root: Path, marker: str) -> Path:
    tasks = [make_task(id=f"t{n}") for n in range(4)]
    tasks.append(  # the held task: its prompt has the marker, its tools a calculator
        make_task(
            id="held",
            description=f"{marker} How many units of product A are in stock?".strip(),
            tools=["get_stock", "adjust_stock", "calculate"],
        )
    )
    return write_suite(root, tasks)


def _run(suite: Path, agent: str, run_dir: Path, release: Any) -> dict[str, EpisodeRecord]:
    stored: list[str] = []

    def on_episode(record: EpisodeRecord) -> None:
        stored.append(record.key)
        if len(stored) == 4:  # the others all stored while the held one blocks
            release.set()

    config = RunConfig(suite=str(suite), agent=agent)
    started = time.monotonic()
    asyncio.run(Runner(config, run_dir, parallel=5, on_episode=on_episode).run())
    assert time.monotonic() - started < 30.0  # released by the others, not the clock
    assert len(stored) == 5 and stored[-1] == "held#0", stored
    with RunReader(run_dir) as reader:
        return {r.key: r for r in reader.records()}


@pytest.mark.parametrize("factory", ["make_langchain", "make_blocking_factory"])
def test_a_blocking_langchain_agent_or_factory_stalls_only_its_own_episode(
    blocking: Any, tmp_path: Path, factory: str
) -> None:
    pytest.importorskip("langchain_core", reason="needs pip install 'toolproof[langchain]'")
    suite = _suite(tmp_path / "suite", blocking.MARKER if factory == "make_langchain" else "")
    agent = f"langchain:blocking_frameworks:{factory}"
    records = _run(suite, agent, tmp_path / "run", blocking.RELEASE)
    for key, record in records.items():
        assert record.score.passed, (key, record.trajectory.error)
        calls = [call.name for call, _ in record.trajectory.tool_calls()]
        assert calls == ["get_stock"]  # the tool call came back to the harness's loop


@pytest.mark.parametrize(
    ("kind", "module"),
    [
        ("langchain", "langchain_core"),
        ("llamaindex", "llama_index.core"),
        ("autogen", "autogen_agentchat"),
    ],
)
def test_every_framework_agent_runs_on_its_own_thread(
    blocking: Any, tmp_path: Path, kind: str, module: str
) -> None:
    pytest.importorskip(module, reason=f"needs pip install 'toolproof[{kind}]'")
    factory = build_agent(parse_agent_spec(f"{kind}:blocking_frameworks:make_langchain"))
    suite = load_suite(str(_suite(tmp_path / "suite", "plain")))
    instance = render(
        suite.task("t0"),
        suite=suite.name,
        suite_seed=1,
        epoch=0,
        limits=suite.config.limits,
        system_prompt=suite.config.system_prompt,
    )
    made = factory(episode_context(instance, []))
    assert isinstance(made, OwnThreadDrivenAgent)
