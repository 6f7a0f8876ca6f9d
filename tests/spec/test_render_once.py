"""Rendering once per run is rendering per episode: a loaded task's template is compiled once
(what no draw changes copied, not walked) and the instance of any seed and epoch is the one
rendered and validated from the raw template, for every task of the built-in suites."""

from __future__ import annotations

import os
import random
from functools import cache

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.spec import Suite, Task, load_suite, render, resolve_suite_path
from toolproof.spec.render import draw_params, instance_seed, render_template

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))
SUITES = ("core", "hard", "security", "lint", "repo-doctor")


@cache
def _suite(name: str) -> Suite:
    return load_suite(name)


@cache
def _worker(name: str) -> Worker:
    config = RunConfig(suite=str(resolve_suite_path(name)), agent="noop", snapshots=False)
    return Worker(config, None, _suite(name))


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    name=st.sampled_from(SUITES),
    pick=st.integers(min_value=0, max_value=10_000),
    seed=st.integers(min_value=0, max_value=2**31),
    epoch=st.integers(min_value=0, max_value=1_000),
)
def test_an_instance_rendered_from_the_compiled_template_is_the_one_from_the_raw_template(
    name: str, pick: int, seed: int, epoch: int
) -> None:
    suite = _suite(name)
    task = suite.tasks[pick % len(suite.tasks)]
    once = render(
        task,
        suite=suite.name,
        suite_seed=seed,
        epoch=epoch,
        limits=suite.config.limits,
        system_prompt="s",
    )
    params = draw_params(task.params, random.Random(instance_seed(seed, task.id, epoch)))
    fresh = Task.model_validate(render_template(task.template, params))  # walked, per episode
    assert once.params == params
    assert once.task == fresh
    assert once.task.model_dump(mode="json") == fresh.model_dump(mode="json")


@settings(max_examples=max(10, EXAMPLES // 3), derandomize=True, deadline=None)
@given(name=st.sampled_from(SUITES), pick=st.integers(0, 10_000), epoch=st.integers(0, 50))
def test_the_runs_worker_renders_each_episode_as_a_fresh_render_would(
    name: str, pick: int, epoch: int
) -> None:
    suite = _suite(name)
    task = suite.tasks[pick % len(suite.tasks)]
    worker = _worker(name)
    first = worker.instance(EpisodeJob(task.id, epoch))
    first.task.description += " (edited by whoever held it)"  # an episode's copy is its own
    again = worker.instance(EpisodeJob(task.id, epoch))
    expected = render(
        load_suite(name, tasks=[task.id]).tasks[0],  # loaded afresh: nothing compiled yet
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=epoch,
        limits=suite.config.limits,
        system_prompt=suite.config.system_prompt,
    )
    assert again == expected
