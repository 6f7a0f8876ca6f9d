"""What the agent sees is a pure function of (suite, seed, epoch, the agent's actions).

Every built-in suite runs twice with the same seed, with the oracle and with a blind prober
that calls every tool with bad arguments, runs failing commands and reads the errors; every
message and tool result the agents were shown must be byte-identical across the two runs.
Then a model-backed agent (the OpenAI adapter against the scripted server) runs with
``--cache``; the replay makes zero model calls, commands included.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import probe_agents
import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.spec import resolve_suite_path
from toolproof.testing import ChatRequest, ModelServer, ScriptedReply, ScriptedToolCall

HERE = Path(__file__).parent

SUITES: dict[str, list[str]] = {
    "core": [],
    "security": [],
    "repo-doctor": [],
    "lint": ["py-unused-imports", "ts-theme-hook"],
}
"""Suites and the tasks to run (all when empty). Lint runs real linters: two of its tasks."""

AGENTS = ("oracle", "python:probe_agents:Prober")


@pytest.fixture(autouse=True)
def _probe_importable() -> Iterator[None]:
    sys.path.insert(0, str(HERE))
    yield
    sys.path.remove(str(HERE))


def _run(suite: str, agent: str, out: Path, **config: Any) -> None:
    run = RunConfig(
        suite=str(resolve_suite_path(suite)),
        agent=agent,
        tasks=SUITES.get(suite, []),
        epochs=1,
        snapshots=False,
        **config,
    )
    asyncio.run(Runner(run, out, parallel=2).run())


def visible(run: Path) -> dict[str, str]:
    """By episode: what its agent was shown (and said), as canonical JSON; no timing fields."""
    seen: dict[str, str] = {}
    for line in (run / "trajectories.jsonl").read_text(encoding="utf-8").splitlines():
        trajectory = json.loads(line)
        steps = [
            {
                "message": step["message"],
                "results": [
                    {k: r[k] for k in ("call_id", "name", "content", "is_error", "error_kind")}
                    for r in step["results"]
                ],
                "observations": step.get("observations", []),
            }
            for step in trajectory["steps"]
        ]
        episode = {
            "prompt": trajectory["prompt"],
            "steps": steps,
            "final_answer": trajectory["final_answer"],
            "termination": trajectory["termination"],
            "error": trajectory["error"],
        }
        seen[trajectory["episode_id"]] = json.dumps(episode, indent=1, sort_keys=True)
    return seen


def _differences(first: dict[str, str], second: dict[str, str]) -> list[str]:
    if sorted(first) != sorted(second):
        return [f"episodes differ: {sorted(set(first) ^ set(second))}"]
    found = []
    for key in sorted(first):
        if first[key] != second[key]:
            diff = difflib.unified_diff(
                first[key].splitlines(), second[key].splitlines(), lineterm="", n=0
            )
            found.append(f"{key}:\n" + "\n".join(line[:300] for line in list(diff)[2:14]))
    return found


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_two_runs_with_one_seed_show_the_agents_the_same_bytes(suite: str, tmp_path: Path) -> None:
    for agent in AGENTS:
        runs = []
        for n in range(2):
            probe_agents.SEEN.clear()
            _run(suite, agent, tmp_path / f"{agent.replace(':', '-')}-{n}")
            runs.append(
                (visible(tmp_path / f"{agent.replace(':', '-')}-{n}"), dict(probe_agents.SEEN))
            )
        (first, seen_first), (second, seen_second) = runs
        assert first, f"{suite}: {agent} ran no episode"
        differences = _differences(first, second)
        assert differences == [], f"{suite} / {agent}:\n" + "\n\n".join(differences[:3])
        assert seen_first == seen_second, f"{suite}: the prober's own observations differ"
        if agent.startswith("python:"):
            assert len(seen_first) == len(first)  # the prober saw every episode it ran


def _model(request: ChatRequest) -> ScriptedReply:
    """A deterministic model: commands (or every tool, badly), read an output, answer."""
    names = request.tool_names
    turn = request.assistant_turns
    if turn == 0 and "run_command" in names:
        return ScriptedReply(
            tool_calls=[
                ScriptedToolCall("run_command", {"command": c}) for c in probe_agents.COMMANDS
            ]
        )
    if turn == 0:
        return ScriptedReply(tool_calls=[ScriptedToolCall(name, {}) for name in names[:4]])
    if turn == 1 and "read_output" in names:
        return ScriptedReply(
            tool_calls=[ScriptedToolCall("read_output", {"output_id": "o2", "stream": "stderr"})]
        )
    return ScriptedReply("done")


CACHED = {"core": ["stock-sum", "hello-file"], "lint": ["py-unused-imports"]}


def test_a_cached_rerun_makes_no_model_call(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with ModelServer(_model) as server:
        options = {
            "base_url": server.base_url,
            "api_key": "test",
            "cache": str(cache),
            "temperature": 0.0,
            "backoff_base": 0.001,
            "timeout": 60,
        }
        recorded: dict[str, str] = {}
        for suite, tasks in CACHED.items():
            config = RunConfig(
                suite=str(resolve_suite_path(suite)),
                agent="openai:gpt-4o",
                agent_options=options,
                tasks=tasks,
                epochs=2,
                snapshots=False,
            )
            asyncio.run(Runner(config, tmp_path / f"first-{suite}", parallel=2).run())
            recorded.update(visible(tmp_path / f"first-{suite}"))
        calls = server.calls
        commands = sum(e.count('"run_command"') for e in recorded.values())
        assert calls > 0 and commands > 0, "the first run asked the model and ran commands"
        replayed: dict[str, str] = {}
        for suite, tasks in CACHED.items():
            config = RunConfig(
                suite=str(resolve_suite_path(suite)),
                agent="openai:gpt-4o",
                agent_options=options,
                tasks=tasks,
                epochs=2,
                snapshots=False,
            )
            asyncio.run(Runner(config, tmp_path / f"again-{suite}", parallel=2).run())
            replayed.update(visible(tmp_path / f"again-{suite}"))
        assert server.calls == calls, f"the replay made {server.calls - calls} model calls"
    assert _differences(recorded, replayed) == []
