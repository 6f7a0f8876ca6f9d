"""Two real Ray nodes (two ``ray start`` processes on loopback) give the local scores."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import RunConfig, Runner, Worker
from toolproof.results import RunReader
from toolproof.spec import load_suite, resolve_suite_path

ray = pytest.importorskip("ray", reason="the ray extra is not installed")

from ray_cluster import HOST, one_ray_at_a_time, session_processes, two_node_cluster  # noqa: E402

from toolproof.engine.ray_executor import RayExecutor  # noqa: E402

SLICE = ["stock-*", "shop-*"]


@pytest.fixture(autouse=True, scope="module")
def _alone() -> Iterator[None]:
    with one_ray_at_a_time():
        yield


def _scores(run_dir: Path) -> dict[str, Any]:
    with RunReader(run_dir) as reader:
        return {
            r.key: (r.score.passed, r.score.level.value, r.score.fraction, r.score.failure_mode)
            for r in reader.records()
        }


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
                local = _scores(tmp_path / f"local-{agent}")
                assert len(local) >= 8 and _scores(run_dir) == local
        finally:
            ray.shutdown()
    # two_node_cluster raised if any process of either node outlived it


def test_a_cluster_that_fails_to_start_leaves_no_process() -> None:
    seen: set[int] = set()
    cluster = two_node_cluster(timeout=0.5, on_start=seen.update)
    with pytest.raises(RuntimeError, match="did not start"), cluster:
        raise AssertionError("a node cannot be up within half a second")
    assert seen and session_processes(seen) == []
