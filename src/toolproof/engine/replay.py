"""Time travel: restore the world of a recorded episode at step N, write it out or continue it.

Step N means "after the first N steps": step 0 is the initial state. Every
changed state was stored in the run's blob store as the episode ran, so the
restore is exact, byte for byte. The run's user and judge models are rebuilt
from the calls the episode recorded (``side_models.replaying``): a replay makes no
live model call for them, and the same play gets the same score.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.metrics import summarize
from toolproof.results import EpisodeRecord, RunReader, RunStore
from toolproof.spec import Problem, SpecError, load_suite, render
from toolproof.worlds import BlobStore, World, WorldSnapshot

from .config import RunConfig
from .episode import Continuation, EpisodeOptions, run_episode
from .side_models import replaying


@dataclass
class StepState:
    """A recorded episode and its world at one step."""

    record: EpisodeRecord
    config: RunConfig
    snapshot: WorldSnapshot
    blobs: BlobStore
    step: int


def _problem(field: str, message: str) -> SpecError:
    return SpecError([Problem(None, None, field, message)])


def load_step(run_dir: Path, task_id: str, step: int, epoch: int = 0) -> StepState:
    """Find the snapshot of ``task_id#epoch`` after ``step`` steps.

    Raises:
        SpecError: no such episode or step, or the run kept no snapshots.
    """
    with RunReader(run_dir) as reader:
        record = reader.record(f"{task_id}#{epoch}")
        config = RunConfig.model_validate(reader.meta()["config"])
    if record is None:
        raise _problem("task", f"run {run_dir} has no episode {task_id}#{epoch}")
    steps = record.trajectory.steps
    if not 0 <= step <= len(steps):
        raise _problem("--step", f"{task_id}#{epoch} has steps 0..{len(steps)}, not {step}")
    if step == 0:
        ref = steps[0].annotations.get("before") if steps else None
    else:
        ref = steps[step - 1].snapshot
    blobs_dir = run_dir / "blobs"
    if ref is None or not blobs_dir.is_dir():
        raise _problem("--step", "this run kept no snapshots (it ran with --no-snapshots)")
    blobs = BlobStore(blobs_dir)
    return StepState(record, config, World.load_snapshot(blobs, ref), blobs, step)


def copy_snapshot(source: BlobStore, target: BlobStore, ref: str) -> None:
    """Copy a snapshot and every file blob it names between blob stores."""
    if target.has(ref):
        return
    snapshot = World.load_snapshot(source, ref)
    for entry in snapshot.files.values():
        if entry[0] is not None and not target.has(entry[0]):
            target.put_file(source.path(entry[0]), entry[0])
    target.put_bytes(source.get_bytes(ref))


def export_step(run_dir: Path, task_id: str, step: int, to: Path, epoch: int = 0) -> Path:
    """Write the state at a step to ``to``: ``workspace/`` (files) and ``records.json``."""
    state = load_step(run_dir, task_id, step, epoch)
    suite = load_suite(state.config.suite, allow_drift=state.config.allow_drift)
    world = World(suite.task(task_id).world, fixtures_base=suite.task_file(task_id).parent)
    try:
        world.restore(state.snapshot, state.blobs)
        to.mkdir(parents=True, exist_ok=True)
        (to / "records.json").write_text(
            json.dumps(world.records, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        if world.workspace is not None:
            shutil.copytree(
                world.workspace.root, to / "workspace", symlinks=True, dirs_exist_ok=True
            )
    finally:
        world.close()
    return to


async def replay_step(
    run_dir: Path,
    task_id: str,
    step: int,
    agent: str,
    out: Path,
    *,
    epoch: int = 0,
    agent_options: dict[str, Any] | None = None,
) -> EpisodeRecord:
    """Continue ``task_id#epoch`` from ``step`` with ``agent`` as a new, linked episode in ``out``.

    The new trajectory keeps the first ``step`` steps, then the new agent's;
    its ``parent`` is ``"<episode>@<step>"``.
    """
    state = load_step(run_dir, task_id, step, epoch)
    config = state.config.model_copy(update={"agent": agent, "agent_options": agent_options or {}})
    suite = load_suite(config.suite, allow_drift=config.allow_drift)
    instance = render(
        suite.task(task_id),
        suite=suite.name,
        suite_seed=config.effective_seed(suite),
        epoch=epoch,
        limits=suite.config.limits,
        system_prompt=config.system_prompt or suite.config.system_prompt,
    )
    if instance.seed != state.record.seed:
        raise _problem("suite", "the suite changed since the run; the instance no longer matches")
    first = state.record.trajectory.steps[0] if state.record.trajectory.steps else None
    initial_ref = first.annotations.get("before") if first is not None else None
    initial = World.load_snapshot(state.blobs, initial_ref) if initial_ref else state.snapshot
    world = World(instance.task.world, fixtures_base=suite.task_file(task_id).parent)
    store = RunStore(out)
    try:
        world.restore(state.snapshot, state.blobs)
        factory = build_agent(parse_agent_spec(agent, agent_options))
        blobs = BlobStore(out / "blobs")
        for past in [*state.record.trajectory.steps[:step], *([first] if first else [])]:
            for ref in (past.snapshot, past.annotations.get("before")):
                if ref:
                    copy_snapshot(state.blobs, blobs, ref)
        side = replaying(config.user_model, config.judge_model, config.side_models, state.record)
        options = EpisodeOptions(agent_label=agent, blobs=blobs, side=side)
        continuation = Continuation(
            history=list(state.record.trajectory.steps[:step]),
            initial=initial,
            parent=f"{state.record.trajectory.episode_id}@{step}",
            prompt=list(state.record.trajectory.prompt),
        )
        trajectory, score = await run_episode(
            instance, factory, options, world=world, continuation=continuation
        )
        record = state.record.model_copy(
            update={
                "agent": agent,
                "trajectory": trajectory,
                "score": score,
                "attempts": 1,
                "infra_errors": [],
            }
        )
        store.set_meta(
            {
                "config": config.model_dump(),
                "identity": config.identity(),
                "suite": {
                    "name": suite.name,
                    "version": suite.config.version,
                    "digest": suite.digest,
                    "seed": config.effective_seed(suite),
                },
                "track": config.track(),
                "replay_of": {"run": str(run_dir), "episode": record.key, "step": step},
                "planned": 1,
            }
        )
        store.append(record)
        store.finalize(summarize([record], store.meta()))
        return record
    finally:
        store.close()
        world.close()
