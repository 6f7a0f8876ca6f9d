"""BFCL multi-turn inside toolproof: agreement with ``multi_turn_checker``, oracle, noop, hostility.

The corpus is made here from the installed package's ground truth, in BFCL's own
decoded form (per user turn, per step, the call strings): the correct play and each
kind of wrong one (a wrong argument, a missing call, an extra state-changing call,
calls made a turn late, acting on a miss_param/miss_func turn instead of asking,
no call at all). Each becomes a toolproof trajectory (calls with JSON arguments,
user-turn boundaries as the engine records them); toolproof's verdict (the
``bfcl.multi_turn`` check) must equal ``multi_turn_checker``'s on the decoded form,
which the test calls itself. CI checks a sample of entries per category;
``TOOLPROOF_BFCL_ALL=1`` checks every entry.
"""

from __future__ import annotations

import asyncio
import copy
import os
import uuid
from collections import Counter
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.scoring.checks.custom import evaluate
from toolproof.spec import SpecError, Suite, load_suite
from toolproof.trajectory import Message, Step, Termination, ToolCall, Trajectory
from toolproof.upstream import _bfcl_backends as backends
from toolproof.upstream import _bfcl_multi as multi
from toolproof.upstream import _bfcl_multi_check as multi_check
from toolproof.upstream import _bfcl_upstream as upstream

pytest.importorskip("mpmath", reason="BFCL's MathAPI backend needs mpmath==1.3.0")

Decoded = list[list[list[str]]]
ALL = os.environ.get("TOOLPROOF_BFCL_ALL") == "1"
SAMPLE = 5


@cache
def _suite(category: str) -> Suite:
    return load_suite(f"bfcl:{category}")


def _entries(category: str) -> list[dict[str, Any]]:
    entries = list(upstream.load_entries(category))
    if ALL:
        return entries
    stride = max(len(entries) // SAMPLE, 1)
    return entries[::stride][:SAMPLE]


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 7
    if isinstance(value, str):
        return value + "_toolproof"
    if isinstance(value, list):
        return [*value, value[0]] if value else ["toolproof"]
    return {"toolproof": 1}


def _call_text(name: str, args: dict[str, Any]) -> str:
    return f"{name}({','.join(f'{k}={v!r}' for k, v in args.items())})"


def corpus(entry: dict[str, Any], truth: list[list[str]]) -> list[tuple[str, Decoded]]:
    """The correct play and each kind of wrong one, for one entry."""
    params = backends.method_parameters(list(entry["involved_classes"]))
    parsed = [[multi.parse_call(c, params, entry) for c in turn] for turn in truth]
    right: Decoded = [[list(turn)] if turn else [] for turn in truth]
    out: list[tuple[str, Decoded]] = [("correct", right), ("no_calls", [[] for _ in truth])]
    out.append(("one_step_per_call", [[[c] for c in turn] for turn in truth]))
    filled = [i for i, turn in enumerate(truth) if turn]
    first = filled[0]
    with_args = next(((i, j) for i in filled for j, c in enumerate(parsed[i]) if c.args), None)
    if with_args is not None:
        i, j = with_args
        call = parsed[i][j]
        key = next(iter(call.args))
        wrong = copy.deepcopy(right)
        wrong[i][0][j] = _call_text(call.tool, {**call.args, key: _changed(call.args[key])})
        out.append(("wrong_argument", wrong))
    last = filled[-1]
    missing = copy.deepcopy(right)
    missing[last][0] = missing[last][0][:-1]
    missing[last] = [step for step in missing[last] if step]
    out.append(("missing_call", missing))
    extra = copy.deepcopy(right)  # the last turn's state-changing calls, also made in the first
    extra[first] = [[*extra[first][0], *truth[last]]] if last != first else extra[first]
    extra[last] = [[*extra[last][0], *truth[first]]] if last == first else extra[last]
    out.append(("extra_calls", extra))
    if first + 1 < len(truth):
        late = copy.deepcopy(right)
        late[first + 1] = [[*truth[first], *truth[first + 1]]]
        late[first] = []
        out.append(("calls_a_turn_late", late))
    for i, turn in enumerate(truth):
        if not turn and i + 1 < len(truth) and truth[i + 1]:
            acting = copy.deepcopy(right)
            acting[i] = [list(truth[i + 1])]  # acts before the user gives what is missing
            out.append(("acting_instead_of_asking", acting))
            break
    return out


def trajectory(task: Any, decoded: Decoded, entry: dict[str, Any]) -> Trajectory:
    """The decoded play as the engine records it: steps tagged with their user turn."""
    params = backends.method_parameters(list(entry["involved_classes"]))
    steps: list[Step] = []
    for turn, turn_steps in enumerate(decoded):
        for calls in turn_steps:
            made = [multi.parse_call(text, params, entry) for text in calls]
            tool_calls = [
                ToolCall(id=f"c{len(steps)}_{n}", name=c.tool, arguments=c.args)
                for n, c in enumerate(made)
            ]
            steps.append(
                Step(
                    index=len(steps),
                    message=Message(role="assistant", tool_calls=tool_calls),
                    annotations={"user_turn": turn},
                )
            )
        notes: dict[str, Any] = {"user_turn": turn}
        if turn + 1 < len(decoded):
            notes["next_user_turn"] = turn + 1
        steps.append(
            Step(
                index=len(steps),
                message=Message(role="assistant", content="reply"),
                annotations=notes,
            )
        )
    return Trajectory(
        episode_id="e",
        task_id=task.id,
        epoch=0,
        seed=0,
        agent="corpus",
        prompt=[Message(role="user", content=task.description)],
        steps=steps,
        termination=Termination.COMPLETED,
    )


def upstream_verdict(decoded: Decoded, truth: list[list[str]], entry: dict[str, Any]) -> bool:
    """``multi_turn_checker`` itself, on the decoded form (its globals cleaned up after)."""
    upstream.require()
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    model = f"corpus_{uuid.uuid4().hex}"
    category = str(entry["id"]).rsplit("_", 1)[0]
    try:
        return bool(
            multi_turn_checker(decoded, truth, copy.deepcopy(entry), category, model)["valid"]
        )
    finally:
        for name in [n for n in vars(multi_turn_utils) if n.startswith(model)]:
            del vars(multi_turn_utils)[name]


def ours(task: Any, traj: Trajectory) -> Any:
    ctx = SimpleNamespace(trajectory=traj, task_dir=None, initial=None)
    return evaluate(task.success[0], ctx)  # type: ignore[arg-type]


@pytest.mark.parametrize("category", multi.MULTI_TURN_CATEGORIES)
def test_toolproof_agrees_with_multi_turn_checker_on_every_corpus_play(category: str) -> None:
    suite = _suite(category)
    answers = upstream.load_answers(category)
    by_id = {t.id: t for t in suite.tasks}
    kinds: Counter[tuple[str, bool]] = Counter()
    entries = _entries(category)
    for entry in entries:
        truth = answers[entry["id"]]
        task = by_id[str(entry["id"]).lower()]
        for kind, decoded in corpus(entry, truth):
            result = ours(task, trajectory(task, decoded, entry))
            theirs = upstream_verdict(decoded, truth, entry)
            assert result.passed == theirs, (entry["id"], kind, decoded, result.detail)
            kinds[(kind, theirs)] += 1
    assert kinds[("correct", True)] == kinds[("one_step_per_call", True)] == len(entries)
    assert kinds[("no_calls", False)] == len(entries)
    assert kinds[("missing_call", False)] + kinds[("wrong_argument", False)] > 0
    assert kinds[("calls_a_turn_late", False)] > 0
    if category in ("multi_turn_miss_param", "multi_turn_miss_func"):
        assert sum(n for (k, _), n in kinds.items() if k == "acting_instead_of_asking") > 0


def test_failure_detail_carries_bfcls_error_type() -> None:
    entry = upstream.load_entries("multi_turn_base")[0]
    truth = upstream.load_answers("multi_turn_base")[entry["id"]]
    task = next(t for t in _suite("multi_turn_base").tasks if t.id == entry["id"])
    result = ours(task, trajectory(task, [[] for _ in truth], entry))
    assert not result.passed
    assert "multi_turn:empty_turn_model_response" in result.detail
    wrong = [[list(turn)] if turn else [] for turn in truth]
    wrong[0] = [["mkdir(dir_name='somewhere_else')"]]
    result = ours(task, trajectory(task, wrong, entry))
    assert "multi_turn:instance_state_mismatch" in result.detail
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    left = [n for n in vars(multi_turn_utils) if n.startswith("toolproof_")]
    assert left == []  # the checker's instances are not kept between scorings


def test_an_unfinished_episode_is_force_terminated() -> None:
    entry = upstream.load_entries("multi_turn_base")[0]
    truth = upstream.load_answers("multi_turn_base")[entry["id"]]
    task = next(t for t in _suite("multi_turn_base").tasks if t.id == entry["id"])
    play = trajectory(task, [[list(turn)] for turn in truth], entry)
    cut = play.model_copy(update={"steps": play.steps[:2], "termination": Termination.STEP_LIMIT})
    result = ours(task, cut)
    assert not result.passed and "force_terminated" in result.detail
    crowded = [[list(turn)] for turn in truth]
    crowded[0] = crowded[0] * (multi_check.MAX_STEPS_PER_TURN + 1)
    result = ours(task, trajectory(task, crowded, entry))
    assert not result.passed and "BFCL stops a turn after 20" in result.detail


def test_hostile_calls_never_reach_the_checkers_eval(tmp_path: Path) -> None:
    methods = {"cd", "mkdir"}
    target = tmp_path / "pwned"
    hostile = [
        ("__import__", {"name": "os"}),
        ("open", {"file": str(target), "mode": "w"}),
        ("execute_multi_turn_func_call", {"func_call_list": []}),
        ("cd", {f"folder='x'),open({str(target)!r},'w'),print(": 1}),
        ("cd", {"lambda": 1}),
        ("mkdir", "not a dict"),
    ]
    for name, args in hostile:
        assert multi_check.decode_call(name, args, methods) == multi_check.UNKNOWN  # type: ignore[arg-type]
    assert multi_check.decode_call("cd", {"folder": "a'), open('x"}, methods) == (
        "cd(folder=\"a'), open('x\")"
    )
    entry = upstream.load_entries("multi_turn_base")[0]
    truth = upstream.load_answers("multi_turn_base")[entry["id"]]
    task = next(t for t in _suite("multi_turn_base").tasks if t.id == entry["id"])
    steps = [
        Step(
            index=i,
            message=Message(
                role="assistant",
                tool_calls=[ToolCall(id=f"h{i}", name=name, arguments=args)],
            ),
            annotations={"user_turn": 0},
        )
        for i, (name, args) in enumerate(hostile[:5])
    ]
    traj = trajectory(task, [[] for _ in truth], entry)
    traj = traj.model_copy(update={"steps": [*steps, *traj.steps]})
    result = ours(task, traj)
    assert not result.passed and not target.exists()


def test_backends_replay_their_log_after_a_restore() -> None:
    entry = upstream.load_entries("multi_turn_base")[0]
    state = copy.deepcopy(backends.initial_records(entry)[backends.RECORDS_KEY])
    extras: dict[str, Any] = {}
    live = backends.backends(state, extras)
    ok, _ = live.run("cd", {"folder": "document"})
    ok2, made = live.run("mkdir", {"dir_name": "temp"})
    assert ok and ok2
    state["calls"] = copy.deepcopy(live.applied)
    before = dict(vars(live.instances["GorillaFileSystem"]))
    rebuilt = backends.backends(state, {})  # a fresh process, a restored snapshot
    assert rebuilt is not live and rebuilt.applied == live.applied
    assert str(vars(rebuilt.instances["GorillaFileSystem"])) == str(before)
    state["calls"] = state["calls"][:1]  # restored to the step before the mkdir
    back = backends.backends(state, extras)
    assert back is not live and len(back.applied) == 1
    again = back.run("mkdir", {"dir_name": "temp"})
    assert again == (True, made)
    failed = back.run("mkdir", {"no_such_argument": 1})
    assert failed[0] is False and failed[1].startswith("Error during execution: ")


def _run(suite: str, agent: str, out: Path, tasks: list[str]) -> dict[str, Any]:
    config = RunConfig(suite=suite, agent=agent, tasks=tasks)
    loaded = _suite(suite.removeprefix("bfcl:"))  # loaded once per category
    return asyncio.run(Runner(config, out, parallel=4, suite=loaded).run())


@pytest.mark.parametrize("category", multi.MULTI_TURN_CATEGORIES)
def test_oracle_passes_and_noop_fails_through_the_engine(category: str, tmp_path: Path) -> None:
    picked = [str(e["id"]) for e in _entries(category)][:3]
    oracle = _run(f"bfcl:{category}", "oracle", tmp_path / "oracle", picked)
    noop = _run(f"bfcl:{category}", "noop", tmp_path / "noop", picked)
    assert oracle["success"]["successes"] == len(picked)
    assert oracle["bfcl"]["categories"][category]["accuracy"] == 1.0
    assert noop["success"]["successes"] == 0
    with RunReader(tmp_path / "oracle") as reader:
        record = reader.record(f"{picked[0]}#0")
    assert record is not None
    turns = {s.annotations["user_turn"] for s in record.trajectory.steps}
    assert turns == set(range(len(upstream.load_answers(category)[picked[0]])))
    users = [m for m in record.trajectory.transcript() if m.role == "user"]
    assert len(users) == len(turns)


def test_scripted_plays_through_the_engine_agree_with_the_checker(tmp_path: Path) -> None:
    import bfcl_test_agents

    entry = upstream.load_entries("multi_turn_miss_param")[0]
    truth = upstream.load_answers("multi_turn_miss_param")[entry["id"]]
    task_id = str(entry["id"])
    params = backends.method_parameters(list(entry["involved_classes"]))
    agent = "python:bfcl_test_agents:scripted"
    wanted = ("correct", "acting_instead_of_asking", "calls_a_turn_late", "missing_call")
    for kind, decoded in [(k, d) for k, d in corpus(entry, truth) if k in wanted]:
        bfcl_test_agents.PLAYS[task_id] = [
            [
                [(c.tool, c.args) for c in (multi.parse_call(t, params, entry) for t in step)]
                for step in turn
            ]
            for turn in decoded
        ]
        summary = _run("bfcl:multi_turn_miss_param", agent, tmp_path / kind, [task_id])
        expected = int(upstream_verdict(decoded, truth, entry))
        assert summary["success"]["successes"] == expected, kind


def test_a_driven_agent_is_refused_with_the_reason(tmp_path: Path) -> None:
    entry = upstream.load_entries("multi_turn_base")[0]
    with pytest.raises(SpecError, match=r"has 4 user turns; agent .* owns its loop"):
        _run("bfcl:multi_turn_base", "python:bfcl_test_agents:driven", tmp_path, [entry["id"]])


def test_held_back_functions_are_offered_from_their_turn() -> None:
    entry = upstream.load_entries("multi_turn_miss_func")[0]
    task = next(t for t in _suite("multi_turn_miss_func").tasks if t.id == entry["id"])
    ((turn, names),) = entry["missed_function"].items()
    assert task.hidden_tools(0) == set(names) == task.hidden_tools(int(turn) - 1)
    assert task.hidden_tools(int(turn)) == set()
    assert task.user_turns[int(turn) - 1].content == multi.ADDED_FUNCTIONS_PROMPT


def test_every_multi_turn_tool_schema_is_valid_json_schema_and_runs_a_backend() -> None:
    from jsonschema import Draft202012Validator

    seen: set[str] = set()
    for category in multi.MULTI_TURN_CATEGORIES:
        for task in _suite(category).tasks:
            for tool in task.tools:
                assert not isinstance(tool, str) and tool.handler == backends.HANDLER
                key = tool.model_dump_json()
                if key not in seen:
                    seen.add(key)
                    Draft202012Validator.check_schema(tool.parameters)


def test_replaying_from_a_later_turn_rebuilds_the_backends_and_still_passes(
    tmp_path: Path,
) -> None:
    from toolproof.engine import replay_step

    entry = upstream.load_entries("multi_turn_miss_func")[0]
    task_id = str(entry["id"])
    _run("bfcl:multi_turn_miss_func", "oracle", tmp_path / "run", [task_id])
    with RunReader(tmp_path / "run") as reader:
        first = reader.record(f"{task_id}#0")
    assert first is not None and first.score.passed
    steps = first.trajectory.steps
    cut = next(i for i, s in enumerate(steps) if s.annotations["user_turn"] == 3)  # miss_func turn
    record = asyncio.run(replay_step(tmp_path / "run", task_id, cut, "oracle", tmp_path / "again"))
    assert record.score.passed, record.score.checks[0].detail
    assert record.trajectory.parent == f"{first.trajectory.episode_id}@{cut}"
    calls = [c.name for s in record.trajectory.steps[cut:] for c in s.message.tool_calls]
    assert "sort" in calls  # the held-back tool, offered again from its turn


def test_hostile_calls_on_a_backend_world_are_the_agents_errors(tmp_path: Path) -> None:
    entry = upstream.load_entries("multi_turn_miss_func")[0]
    summary = _run(
        "bfcl:multi_turn_miss_func",
        "python:bfcl_test_agents:hostile_multi",
        tmp_path,
        [str(entry["id"])],
    )
    assert summary["success"]["successes"] == 0 and summary["episodes"]["infra_errors"] == 0
    with RunReader(tmp_path) as reader:
        record = reader.record(f"{entry['id']}#0")
    assert record is not None and record.trajectory.termination is Termination.COMPLETED
    kinds = [r.error_kind for r in record.trajectory.steps[0].results]
    assert kinds == ["unknown_tool", "invalid_arguments", "tool_error", None, "unknown_tool"]
    mkdir = record.trajectory.steps[0].results[2].content
    assert mkdir.startswith("error: Error during execution: ")
    assert "Invalid character" in record.trajectory.steps[0].results[3].content  # BFCL's own
    assert "multi_turn_checker" in record.score.checks[0].detail
