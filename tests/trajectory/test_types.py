"""Trajectories: the transcript, calls with their results, usage sums, JSONL round trips."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.trajectory import (
    FORMAT_VERSION,
    Message,
    StateDiff,
    Step,
    Termination,
    ToolCall,
    ToolResult,
    Trajectory,
    Usage,
    jsonl,
)


def _trajectory(**fields: object) -> Trajectory:
    call_a = ToolCall(id="a", name="get_stock", arguments={"product_id": "A"})
    call_b = ToolCall(id="b", name="get_stock", arguments={"product_id": "B"})
    steps = [
        Step(
            index=0,
            message=Message(role="assistant", content="looking", tool_calls=[call_a, call_b]),
            results=[
                ToolResult(call_id="b", name="get_stock", content="2"),
                ToolResult(call_id="a", name="get_stock", content="7"),
            ],
            observations=[Message(role="user", content="hurry up")],
            usage=Usage(input_tokens=10, output_tokens=2, cost_usd=0.01),
        ),
        Step(
            index=1,
            message=Message(role="assistant", content="9"),
            usage=Usage(input_tokens=20, output_tokens=1, estimated=True),
        ),
    ]
    values: dict[str, object] = {
        "episode_id": "t#0",
        "task_id": "t",
        "epoch": 0,
        "seed": 1,
        "agent": "test",
        "prompt": [Message(role="system", content="s"), Message(role="user", content="u")],
        "steps": steps,
        "final_answer": "9",
        "termination": Termination.COMPLETED,
    }
    values.update(fields)
    return Trajectory.model_validate(values)


def test_transcript_interleaves_turns_results_and_observations() -> None:
    roles = [(m.role, m.content) for m in _trajectory().transcript()]
    assert roles == [
        ("system", "s"),
        ("user", "u"),
        ("assistant", "looking"),
        ("tool", "2"),
        ("tool", "7"),
        ("user", "hurry up"),
        ("assistant", "9"),
    ]


def test_tool_calls_pair_each_call_with_its_result_by_id() -> None:
    pairs = [(c.id, r.content if r else None) for c, r in _trajectory().tool_calls()]
    assert pairs == [("a", "7"), ("b", "2")]


def test_usage_sums_steps_and_marks_estimates() -> None:
    total = _trajectory().usage()
    assert (total.input_tokens, total.output_tokens, total.estimated) == (30, 3, True)
    assert total.cost_usd == pytest.approx(0.01)
    assert Usage() + Usage() == Usage(cost_usd=None)


def test_state_diff_lists_every_change() -> None:
    diff = StateDiff(records={"a.b": [1, 2]}, files_added=["x"], files_modified=["m"])
    assert not diff.empty
    assert diff.changed_paths() == ["a.b", "m", "x"]
    assert StateDiff().empty


def test_jsonl_round_trip(tmp_path: Path) -> None:
    trajectories = [_trajectory(), _trajectory(episode_id="t#1", epoch=1, error=None)]
    path = tmp_path / "t.jsonl"
    jsonl.write(path, trajectories)
    assert list(jsonl.read(path)) == trajectories
    assert jsonl.loads(jsonl.dumps(trajectories[0])) == trajectories[0]
    assert "\n" not in jsonl.dumps(trajectories[0])


def test_jsonl_skips_a_torn_last_line_but_not_a_corrupt_middle(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = jsonl.dumps(_trajectory())
    path.write_text(good + "\n" + good[: len(good) // 2])
    assert len(list(jsonl.read(path))) == 1
    path.write_text(good[: len(good) // 2] + "\n" + good + "\n")
    with pytest.raises(ValueError):
        list(jsonl.read(path))


def test_a_newer_format_is_refused() -> None:
    newer = _trajectory(format_version=FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match="upgrade toolproof"):
        jsonl.loads(newer.model_dump_json())
