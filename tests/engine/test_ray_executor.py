"""The Ray executor gives the local executor's scores (on a real two-node cluster too) and
loses no episode when a worker dies."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import RunConfig, Runner, Worker
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import load_suite, resolve_suite_path

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from ray_cluster import HOST, one_ray_at_a_time, session_processes, two_node_cluster  # noqa: E402

from toolproof.engine.ray_executor import RayExecutor  # noqa: E402


def _scores(run_dir: Path) -> dict[str, tuple[bool, str, float]]:
    with RunReader(run_dir) as reader:
        return {
            r.key: (r.score.passed, r.score.level.value, r.score.fraction) for r in reader.records()
        }


def _one_per_kind() -> list[str]:
    """One core task of each family (the id's first word: its world and tools) and category.

    51 of core's 155 tasks: every toolkit and every kind of task crosses the process
    boundary, at a third of the cost (CI time; the oracle is proven on every task elsewhere).
    """
    firsts: dict[tuple[str, str], str] = {}
    for task in load_suite("core").tasks:
        firsts.setdefault((task.id.split("-")[0], str(task.category)), task.id)
    return list(firsts.values())


def _cluster_scores(run_dir: Path) -> dict[str, Any]:
    with RunReader(run_dir) as reader:
        return {
            r.key: (r.score.passed, r.score.level.value, r.score.fraction, r.score.failure_mode)
            for r in reader.records()
        }


SLICE = ["stock-*", "shop-*"]


# The two-node cluster comes first: after a local Ray instance ran on the machine, the
# cluster's actors died unstarted (not understood yet); one file keeps the order under xdist.
@pytest.mark.slow  # 25-40 s on an idle 2-core machine: two Ray nodes start
def test_a_two_node_cluster_gives_the_local_scores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the cluster's own setting
    suite = load_suite("core")
    for agent in ("oracle", "random"):
        config = RunConfig(
            suite=str(resolve_suite_path("core")), agent=agent, epochs=1, seed=5, tasks=SLICE
        )
        asyncio.run(Runner(config, tmp_path / f"local-{agent}", parallel=4, suite=suite).run())
    with two_node_cluster() as address:
        ray.init(address=address, _node_ip_address=HOST, logging_level="ERROR", log_to_driver=False)
        try:
            nodes = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
            assert len(nodes) == 2
            for agent in ("oracle", "random"):
                config = RunConfig(
                    suite=str(resolve_suite_path("core")),
                    agent=agent,
                    epochs=1,
                    seed=5,
                    tasks=SLICE,
                )
                run_dir = tmp_path / f"ray-{agent}"
                executor = RayExecutor(
                    Worker(config, run_dir, suite),
                    {"actors": 2, "actor_cpus": 1, "parallel": 4, "run_dir": run_dir},
                )
                try:
                    assert set(executor.actor_nodes()) == nodes  # one actor on each node
                    runner = Runner(config, run_dir, parallel=4, executor=executor, suite=suite)
                    asyncio.run(runner.run())
                finally:
                    executor.close()
                local = _cluster_scores(tmp_path / f"local-{agent}")
                assert len(local) >= 8 and _cluster_scores(run_dir) == local
        finally:
            ray.shutdown()
    # two_node_cluster raised if any process of either node outlived it


def test_a_cluster_that_fails_to_start_leaves_no_process() -> None:
    seen: set[int] = set()
    cluster = two_node_cluster(timeout=0.5, on_start=seen.update)
    with pytest.raises(RuntimeError, match="did not start"), cluster:
        raise AssertionError("a node cannot be up within half a second")
    assert seen and session_processes(seen) == []


@pytest.fixture(autouse=True, scope="module")
def _alone() -> Iterator[None]:
    with one_ray_at_a_time():
        yield


@pytest.fixture(scope="module")
def ray_instance(_alone: None) -> Iterator[Any]:
    # "local": never the two-node cluster another test (another xdist worker) may have up
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)  # fmt: skip
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_gives_the_same_scores_as_local(ray_instance: Any, tmp_path: Path) -> None:
    suite = str(resolve_suite_path("core"))
    for agent in ("oracle", "random"):
        config = RunConfig(suite=suite, agent=agent, epochs=2, seed=11, tasks=_one_per_kind())
        local = tmp_path / f"local-{agent}"
        remote = tmp_path / f"ray-{agent}"
        asyncio.run(Runner(config, local, parallel=4).run())
        asyncio.run(Runner(config, remote, parallel=4, executor_name="ray").run())
        assert _scores(remote) == _scores(local)


def test_a_killed_worker_loses_no_episode(ray_instance: Any, tmp_path: Path) -> None:
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent="oracle",
        agent_options={"delay_s": 0.05},
        epochs=2,
        retries=3,
        tasks=_one_per_kind(),  # ~100 episodes: the kill after 3 lands mid-run
    )
    run_dir = tmp_path / "killed"
    executor = RayExecutor(
        Worker(config, run_dir), {"actors": 2, "parallel": 6, "run_dir": run_dir}
    )
    victim = executor.actor_pids()[0]
    seen: list[EpisodeRecord] = []

    def on_episode(record: EpisodeRecord) -> None:
        seen.append(record)
        if len(seen) == 3:
            os.kill(victim, signal.SIGKILL)

    try:
        summary = asyncio.run(
            Runner(config, run_dir, parallel=6, executor=executor, on_episode=on_episode).run()
        )
    finally:
        executor.close()
    planned = len(config.select(load_suite(config.suite))) * 2
    assert summary["episodes"]["finished"] == planned
    assert executor.deaths >= 1
    with RunReader(run_dir) as reader:
        records = list(reader.records())
    assert len(records) == planned
    retried = [r for r in records if r.attempts > 1]
    assert retried, "the episodes on the killed worker were retried"
    assert all(r.score.passed for r in records)


def test_the_user_and_judge_models_reach_ray_workers(ray_instance: Any, tmp_path: Path) -> None:
    import yaml

    from toolproof.testing import ModelServer, ScriptedReply

    root = tmp_path / "suite"
    (root / "tasks").mkdir(parents=True)
    meta = {"name": "side", "version": "1.0.0", "seed": 2, "canary": "side canary: no training"}
    (root / "suite.yaml").write_text(yaml.safe_dump(meta))
    task = {
        "id": "amb-pay",
        "description": "Say which account the user wants to pay from.",
        "type": "single_tool",
        "tools": ["ask_user"],
        "user": {
            "simulator": "model",
            "facts": {"account": {"value": "CHK-2"}},
            "topics": [{"keywords": ["account"], "reply": "CHK-2 (scripted)."}],
        },
        "success": [
            {"kind": "output", "contains": ["CHK-2"]},
            {"kind": "judge", "name": "j", "model": "openai:task-judge", "rubric": "Names it."},
        ],
        "solution": {
            "calls": [{"tool": "ask_user", "args": {"question": "Which account?"}}],
            "answer": "CHK-2",
        },
    }
    (root / "tasks" / "amb-pay.yaml").write_text(yaml.safe_dump(task))
    replies = [ScriptedReply("From CHK-2."), ScriptedReply('{"score": 5, "reason": "ok"}')]
    with ModelServer(replies) as server:
        side = {
            role: {"provider": "openai", "model": name, "base_url": server.base_url, "api_key": "k"}
            for role, name in (("user", "sim"), ("judge", "run-judge"))
        }
        config = RunConfig(
            suite=str(root),
            agent="oracle",
            retries=0,
            user_model="openai:sim",
            judge_model="openai:run-judge",
            side_models=side,
        )
        run_dir = tmp_path / "ray"
        asyncio.run(Runner(config, run_dir, parallel=1, executor_name="ray").run())
        assert [r.model for r in server.chat_requests] == ["sim", "run-judge"]
    with RunReader(run_dir) as reader:
        (record,) = list(reader.records())
    assert record.score.passed, record.score
    assert "model:openai:sim" in record.trajectory.steps[0].results[0].content
    judge = next(c for c in record.score.checks if c.kind == "judge")
    assert judge.data["model"] == "openai:run-judge" and len(judge.data["model_calls"]) == 1


def test_ray_workers_share_the_runs_limits(ray_instance: Any, tmp_path: Path) -> None:
    # Each actor's model gateway (framework agents, the user and judge models) and its own
    # limits hold a part of the run's --max-model-calls and --max-sandboxes, the parts adding
    # up to the limit (as with --workers); no more actors than the smallest limit; unset
    # stays unset.
    suite = str(resolve_suite_path("core"))
    cases = [
        (2, 3, None, [2, 1], [None, None]),
        (1, None, None, [None], [None]),
        (3, 2, 5, [1, 1], [3, 2]),  # two actors: the smaller limit is 2
    ]
    for actors, model_calls, sandboxes, gateways, tool_threads in cases:
        config = RunConfig(
            suite=suite,
            agent="oracle",
            tasks=["amb-*"],
            max_model_calls=model_calls,
            max_sandboxes=sandboxes,
        )
        executor = RayExecutor(Worker(config, None), {"actors": actors, "parallel": 2})
        try:
            limits = [ray_instance.get(a.gateway_limit.remote()) for a in executor._actors]
            assert limits == gateways
            parts = [RunConfig.model_validate_json(c) for c in executor._configs]
            assert [p.max_sandboxes for p in parts] == tool_threads
            assert [p.max_model_calls for p in parts] == gateways
        finally:
            executor.close()


def test_episodes_go_to_the_actors_in_batches(ray_instance: Any, tmp_path: Path) -> None:
    # 8 in flight on 2 actors (4 each): batches of 2, one actor call each; a batch of 1 is the old
    # one-call-per-episode path. Both store every episode with the local scores.
    suite = str(resolve_suite_path("core"))
    config = RunConfig(suite=suite, agent="oracle", tasks=["amb-*"], epochs=2)
    local = tmp_path / "local"
    asyncio.run(Runner(config, local, parallel=4).run())
    for batch in (None, 1):
        options: dict[str, Any] = {"actors": 2, "parallel": 8}
        if batch is not None:
            options["batch"] = batch
        run_dir = tmp_path / f"ray-{batch}"
        executor = RayExecutor(Worker(config, run_dir), options)
        calls: list[int] = []
        send = executor._send

        async def counted(pending: list[Any], send: Any = send, calls: Any = calls) -> None:
            calls.append(len(pending))
            await send(pending)

        executor._send = counted  # type: ignore[method-assign,assignment]  # counts the calls
        try:
            asyncio.run(Runner(config, run_dir, parallel=8, executor=executor).run())
        finally:
            executor.close()
        assert _scores(run_dir) == _scores(local)
        assert sum(calls) == len(_scores(local))
        assert max(calls) == (2 if batch is None else 1)


def test_batches_go_to_the_actor_least_busy_for_its_part() -> None:
    # Parts 2 and 1 of --max-model-calls 3: the first actor takes two episodes for each one
    # the second takes (the choice only; the actors themselves are covered above).
    executor = RayExecutor.__new__(RayExecutor)
    executor._size, executor._weights, executor._in_flight = 2, [2, 1], [0, 0]
    for _ in range(9):
        executor._in_flight[executor._pick()] += 1
    assert executor._in_flight == [6, 3]


def test_an_agent_that_ends_its_actor_fails_that_episode_in_the_denominator(
    ray_instance: Any, tmp_path: Path, suite_dir: Any
) -> None:
    """An actor that dies with the agent's code in it is judged as a worker process is
    (``faults.worker_death_outcome``): the episodes of its batch run again alone, and the one
    whose lone actor dies too (the agent's ``os._exit``) is its ``agent_error``, in the
    denominator; the others are not charged."""
    from toolproof_helpers import make_task

    if not Path("tests/fixtures/toolproof_worker_death_agents.py").is_file():
        pytest.skip("run from the repository's root: the actors import the agent from there")
    suite = suite_dir([make_task(id="a"), make_task(id="b")])
    config = RunConfig(
        suite=str(suite),
        # as a namespace package from the root: the actors start there, without tests/fixtures
        # on their path
        agent="python:tests.fixtures.toolproof_worker_death_agents:ray_quitter",
        epochs=3,
        retries=1,
        snapshots=False,
    )
    run_dir = tmp_path / "quit"
    summary = asyncio.run(Runner(config, run_dir, parallel=4, executor_name="ray").run())
    assert summary["episodes"]["finished"] == 6
    assert summary["episodes"]["infra_errors"] == 0
    with RunReader(run_dir) as reader:
        records = {r.key: r for r in reader.records()}
    failed = {k: r.trajectory.termination.value for k, r in records.items() if not r.score.passed}
    assert failed == {"b#0": "agent_error"}
    assert (records["b#0"].trajectory.error or "").startswith("the agent's process died: ")
