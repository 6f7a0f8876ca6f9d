"""No single episode stops a run: what toolproof cannot score or store is that episode's fault.

Such an episode ends ``agent_error`` (kept in every denominator, invariant 8), its error
starts with ``toolproof fault`` and names the cause, it is logged as an error, and the
run stores every planned episode once and writes its summary.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import EpisodeJob, RunConfig, Runner, Worker
from toolproof.engine import episode as episode_module
from toolproof.engine.faults import FAULT, record_json, unstorable
from toolproof.results import EpisodeRecord, RunReader, TaskFacts, UnstorableRecord
from toolproof.scoring import Level, Score
from toolproof.trajectory import Message, Step, Termination, Trajectory, Usage
from toolproof_helpers import make_task, write_suite

TASKS = ["stock-a", "stock-b", "stock-c"]


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    tasks = [make_task(id=task_id) for task_id in TASKS]
    return write_suite(tmp_path / "suite", tasks)


def _run(suite: Path, run_dir: Path) -> tuple[dict[str, Any], dict[str, EpisodeRecord]]:
    config = RunConfig(suite=str(suite), agent="oracle", retries=0)
    summary = asyncio.run(Runner(config, run_dir, parallel=2).run())
    with RunReader(run_dir) as reader:
        return summary, {r.key: r for r in reader.records()}


def _keeps_the_run(summary: dict[str, Any], run_dir: Path, records: dict[str, Any]) -> None:
    assert set(records) == {f"{t}#0" for t in TASKS}
    assert summary["episodes"]["finished"] == len(TASKS)
    assert summary["episodes"]["infra_errors"] == 0
    assert json.loads((run_dir / "summary.json").read_text())["episodes"]["complete"]


def _is_fault(record: EpisodeRecord, what: str) -> None:
    assert record.score.termination is Termination.AGENT_ERROR
    assert not record.score.passed
    error = record.trajectory.error or ""
    assert error.startswith(f"{FAULT}: toolproof could not {what} this episode"), error
    assert "please report it" in error and "not as an infra error" in error


def test_scoring_that_raises_is_that_episodes_fault(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = episode_module.score_episode

    def score(ctx: Any) -> Any:
        if ctx.instance.task.id == "stock-b":
            raise RuntimeError("a bug in grading")
        return real(ctx)

    monkeypatch.setattr(episode_module, "score_episode", score)
    with caplog.at_level(logging.ERROR, logger="toolproof.engine.faults"):
        summary, records = _run(suite, tmp_path / "run")
    _keeps_the_run(summary, tmp_path / "run", records)
    _is_fault(records["stock-b#0"], "score")
    assert "RuntimeError: a bug in grading" in (records["stock-b#0"].trajectory.error or "")
    assert "it had ended completed" in (records["stock-b#0"].trajectory.error or "")
    assert records["stock-b#0"].trajectory.steps  # the trajectory is kept
    assert records["stock-a#0"].score.passed and records["stock-c#0"].score.passed
    assert summary["success"]["n"] == 3  # in the denominator, as a failure
    assert any("stock-b#0" in r.getMessage() for r in caplog.records)


def _poisoned(how: str) -> Any:
    real = Worker.run

    async def run(self: Worker, job: EpisodeJob) -> EpisodeRecord:
        record = await real(self, job)
        if job.task_id != "stock-b":
            return record
        if how == "surrogate":
            record.trajectory.steps[0].message.content = "looked \udcff"
        else:  # a count SQLite cannot hold, past what the ingress lets in
            record.trajectory.steps[0].usage = Usage.model_construct(
                input_tokens=2**70, output_tokens=0, cost_usd=None, estimated=False
            )
        return record

    return run


def test_a_record_the_store_cannot_write_is_stored_made_valid(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Worker, "run", _poisoned("surrogate"))
    summary, records = _run(suite, tmp_path / "run")
    _keeps_the_run(summary, tmp_path / "run", records)
    record = records["stock-b#0"]
    _is_fault(record, "store")
    assert "surrogates not allowed" in (record.trajectory.error or "")
    assert record.trajectory.steps[0].message.content == "looked \\udcff"  # kept, escaped


def test_a_record_that_cannot_be_written_even_made_valid_is_stored_without_its_steps(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Worker, "run", _poisoned("overflow"))
    summary, records = _run(suite, tmp_path / "run")
    _keeps_the_run(summary, tmp_path / "run", records)
    _is_fault(records["stock-b#0"], "store")
    assert records["stock-b#0"].trajectory.steps == []


def test_a_harness_failure_outside_the_episode_is_its_infra_error_not_the_runs_end(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Worker.run

    async def run(self: Worker, job: EpisodeJob) -> EpisodeRecord:
        if job.task_id == "stock-b":
            raise RuntimeError("the worker lost its way")
        return await real(self, job)

    monkeypatch.setattr(Worker, "run", run)
    config = RunConfig(suite=str(suite), agent="oracle", retries=0)
    summary = asyncio.run(Runner(config, tmp_path / "run", parallel=2).run())
    with RunReader(tmp_path / "run") as reader:
        records = {r.key: r for r in reader.records()}
    assert summary["episodes"]["finished"] == 3 and summary["episodes"]["infra_errors"] == 1
    assert records["stock-b#0"].score.termination is Termination.INFRA_ERROR
    assert "the worker lost its way" in (records["stock-b#0"].trajectory.error or "")


def _record(content: str) -> EpisodeRecord:
    trajectory = Trajectory(
        episode_id="t#0",
        task_id="t",
        epoch=0,
        seed=0,
        agent="test",
        prompt=[Message(role="user", content="go")],
        steps=[Step(index=0, message=Message(role="assistant", content=content))],
        final_answer=content,
        termination=Termination.COMPLETED,
    )
    score = Score(
        passed=True,
        level=Level.PERFECT,
        fraction=1.0,
        checks=[],
        termination=Termination.COMPLETED,
        tool_calls=0,
    )
    facts = TaskFacts(id="t", type="single_tool", category="normal", difficulty=1, domain="shop")
    return EpisodeRecord(
        key="t#0", task=facts, epoch=0, seed=0, agent="test", score=score, trajectory=trajectory
    )


def test_what_a_worker_process_sends_is_always_a_record() -> None:
    """A worker process or Ray actor sends its record as JSON: one that cannot be encoded goes
    as its stand-in, so the run's process gets a record (not a hung job, not a crash)."""
    sent = EpisodeRecord.model_validate_json(record_json(_record("ok \udcff")))
    assert sent.score.termination is Termination.AGENT_ERROR
    assert (sent.trajectory.final_answer or "").endswith("\\udcff")
    assert record_json(_record("fine")) == _record("fine").model_dump_json()


def test_the_stand_in_of_a_record_is_itself_writable() -> None:
    stand_in = unstorable(_record("x \ud800"), UnstorableRecord("t#0", ValueError("why")))
    assert stand_in.score.failure_mode == "agent_error"
    assert stand_in.score.fraction == 0.0
    stand_in.model_dump_json()  # does not raise


def test_a_harness_failure_after_the_agent_acted_is_that_episodes_fault(
    suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recording a step looks at what the agent left (a workspace it filled, say): when that
    # raises, no witness shows the agent could not have caused it, so the episode stays in
    # the score as a failure (invariant 8), never an infra error.
    real = episode_module.Recorder.record

    async def record(self: Any, *args: Any, **kwargs: Any) -> Any:
        if self.instance.task.id == "stock-b":
            raise OSError("the snapshot of a hostile workspace failed")
        return await real(self, *args, **kwargs)

    monkeypatch.setattr(episode_module.Recorder, "record", record)
    summary, records = _run(suite, tmp_path / "run")
    _keeps_the_run(summary, tmp_path / "run", records)
    _is_fault(records["stock-b#0"], "run")
    assert "after the agent acted" in (records["stock-b#0"].trajectory.error or "")
    assert "OSError: the snapshot of a hostile workspace failed" in (
        records["stock-b#0"].trajectory.error or ""
    )
    assert summary["success"]["n"] == 3
