"""``run`` of some tasks loads only their files: from the index's record once the whole
suite passed every check (only while nothing it was checked with has changed), else the
files whose declared id may match (``load_suite(tasks=...)``); a run of every task loads
and checks it all, and only that records the suite."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from toolproof.engine import preflight
from toolproof.spec import SpecError
from toolproof.spec import index as suite_index
from toolproof.tools import tool
from toolproof_helpers import CliResult, make_task, write_suite, write_yaml


@pytest.fixture
def full_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every load of a suite from its files by the preflight (a recorded one makes none);
    files count as settled at once (the two-second rule has its own test)."""
    seen: list[str] = []
    real = preflight.load_suite

    def counting(name_or_path: Any, **kwargs: Any) -> Any:
        seen.append(str(name_or_path))
        return real(name_or_path, **kwargs)

    monkeypatch.setattr(preflight, "load_suite", counting)
    monkeypatch.setattr(suite_index, "SETTLED_NS", 0)
    return seen


def _suite(tmp_path: Path, n: int = 3) -> Path:
    return write_suite(tmp_path / "suite", [make_task(id=f"t{i}") for i in range(n)])


def _load(root: Path, index: Path, *tasks: str) -> list[str]:
    suite = preflight.load_checked_suite(root, tasks=tasks, index_file=index)
    return [t.id for t in suite.tasks]


def test_once_the_suite_passed_a_run_of_one_task_loads_only_that_file(
    tmp_path: Path, full_loads: list[str]
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    assert _load(root, index, "t1") == ["t1"]  # nothing recorded yet: its file alone
    assert not index.exists()  # a run of some tasks records nothing
    assert _load(root, index) == ["t0", "t1", "t2"]  # a run of all: checked and recorded
    assert len(full_loads) == 2
    entry = json.loads(index.read_text())["checked"][str(root.resolve())]
    assert entry["tasks"] == [
        ["t0", "tasks/t0.yaml"],
        ["t1", "tasks/t1.yaml"],
        ["t2", "tasks/t2.yaml"],
    ]
    suite = preflight.load_checked_suite(root, tasks=["t1", "t2"], index_file=index)
    assert [t.id for t in suite.tasks] == ["t1", "t2"] and len(full_loads) == 2
    full = preflight.load_checked_suite(root)
    assert suite.digest == full.digest  # the digest is still of every file
    assert suite.task_file("t2") == full.task_file("t2")
    assert _load(root, index) == ["t0", "t1", "t2"]  # no --task: everything, as ever


def test_an_edited_task_file_is_validated_again_with_file_and_line(
    tmp_path: Path, full_loads: list[str], invoke: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _suite(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    first: CliResult = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "a", "-q")
    assert first.code == 0, first.err
    again = invoke("run", root, "--agent", "oracle", "-t", "t1", "-o", tmp_path / "b", "-q")
    assert again.code == 0 and len(full_loads) == 1  # the second run used the record
    # A task the run does not select breaks: the run of t1 goes on, validate reports it.
    write_yaml(root / "tasks" / "t2.yaml", make_task(id="t2", difficulty="hard"))
    other = invoke("run", root, "--agent", "oracle", "-t", "t1", "-o", tmp_path / "c", "-q")
    assert other.code == 0 and len(full_loads) == 2, other.err
    checked = invoke("validate", root)
    assert checked.code == 2
    assert f"{root / 'tasks' / 't2.yaml'}:" in checked.out + checked.err
    # The selected task itself broken: its file and line, as a full load gives them.
    write_yaml(root / "tasks" / "t1.yaml", make_task(id="t1", difficulty="hard"))
    broken = invoke("run", root, "--agent", "oracle", "-t", "t1", "-o", tmp_path / "d", "-q")
    assert broken.code == 2
    assert f"{root / 'tasks' / 't1.yaml'}:" in broken.err and "difficulty" in broken.err
    assert "t2.yaml" not in broken.err


def test_a_file_added_after_indexing_is_seen(tmp_path: Path, full_loads: list[str]) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    _load(root, index)
    write_yaml(root / "tasks" / "dup.yaml", make_task(id="t0"))  # a second t0, misnamed
    with pytest.raises(SpecError, match=r"dup\.yaml:1: id"):
        _load(root, index, "t0")
    assert len(full_loads) == 2


def test_a_touched_file_or_another_registry_loads_it_all(
    tmp_path: Path, full_loads: list[str], restore_registries: None
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    _load(root, index)
    stamp = (root / "tasks" / "t2.yaml").stat()
    os.utime(root / "tasks" / "t2.yaml", ns=(stamp.st_atime_ns, stamp.st_mtime_ns - 10**10))
    _load(root, index, "t0")
    assert len(full_loads) == 2  # the record no longer holds: from the files
    _load(root, index)
    _load(root, index, "t0")
    assert len(full_loads) == 3  # recorded again

    @tool(toolkit="testkit_preflight")
    def preflight_echo(text: str) -> str:
        """Echo the text.

        Args:
            text: What to echo.
        """
        return text

    _load(root, index, "t0")  # a new tool (as a plug-in would register): checked again
    assert len(full_loads) == 4


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{not json",
        '{"version": 1, "suites": {}, "checked": ',  # truncated
        json.dumps({"version": 999, "checked": {}}),  # another version's index
        json.dumps(["checked"]),
    ],
)
def test_a_corrupt_truncated_or_foreign_index_loads_it_all(
    tmp_path: Path, full_loads: list[str], content: str
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    index.write_text(content)
    assert _load(root, index, "t0") == ["t0"]
    assert _load(root, index) == ["t0", "t1", "t2"]
    assert len(full_loads) == 2
    assert _load(root, index, "t0") == ["t0"] and len(full_loads) == 2  # rewritten: a record


@pytest.mark.parametrize(
    "tasks",
    [
        [["t0", "../../outside.yaml"]],  # a path out of the suite
        [["t0", "/etc/passwd"]],
        [["t0", "tasks/t1.yaml"]],  # another task's file
        [["t0", "tasks/missing.yaml"]],
        [["t0"]],
        "tasks/t0.yaml",
        [[0, "tasks/t0.yaml"]],
    ],
)
def test_a_tampered_record_is_not_believed(
    tmp_path: Path, full_loads: list[str], tasks: Any
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    _load(root, index)
    data = json.loads(index.read_text())
    data["checked"][str(root.resolve())]["tasks"] = tasks  # the fingerprint still matches
    (tmp_path / "outside.yaml").write_text(json.dumps(make_task(id="t0")))
    index.write_text(json.dumps(data))
    assert _load(root, index, "t0") == ["t0"]  # from its own file instead
    assert len(full_loads) == 2


def test_a_forged_fingerprint_of_a_broken_suite_gets_the_full_check(
    tmp_path: Path, full_loads: list[str]
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    write_yaml(root / "tasks" / "t2.yaml", make_task(id="t2", tools=["get_stock", "no_such_tool"]))
    with pytest.raises(SpecError, match="no tool 'no_such_tool'"):
        _load(root, index)
    assert not index.exists() or str(root.resolve()) not in json.loads(index.read_text()).get(
        "checked", {}
    )  # a suite with problems is never recorded
    fingerprint, _ = suite_index.checked_fingerprint(root, preflight.registries_digest())
    forged = {"t0": "tasks/t0.yaml"}
    suite_index.record_checked(index, root, "0" * 64, list(forged.items()))
    with pytest.raises(SpecError, match="no tool 'no_such_tool'"):
        _load(root, index, "t2")  # a record of another fingerprint is not this suite's
    assert fingerprint != "0" * 64


def test_files_younger_than_two_seconds_are_not_recorded(
    tmp_path: Path, full_loads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suite_index, "SETTLED_NS", 10**18)  # every file is "young"
    root, index = _suite(tmp_path), tmp_path / "index.json"
    _load(root, index)
    _load(root, index, "t0")
    assert len(full_loads) == 2


def test_custom_checks_from_outside_the_suite_keep_it_unrecorded(
    tmp_path: Path, full_loads: list[str]
) -> None:
    outside = {
        "kind": "custom",
        "function": "toolproof_test_checks:answer_is",
        "args": {"text": "7"},
    }
    task = make_task(id="t0", success=[{"kind": "output", "number": 7}, outside])
    root, index = write_suite(tmp_path / "suite", [task, make_task(id="t1")]), tmp_path / "i.json"
    assert _load(root, index) == ["t0", "t1"]  # valid: the module is on the path
    assert _load(root, index, "t1") == ["t1"]  # but not in the fingerprint: never recorded
    assert len(full_loads) == 2
    checks = root / "checks"
    checks.mkdir()
    (checks / "suite_checks.py").write_text("def answer_is(ctx, text='7'):\n    return True\n")
    task["success"][1]["function"] = "suite_checks:answer_is"  # in the suite: recorded
    write_yaml(root / "tasks" / "t0.yaml", task)
    _load(root, index)
    assert _load(root, index, "t1") == ["t1"] and len(full_loads) == 3


def test_a_run_records_the_same_config_and_scores_whichever_way_the_suite_loaded(
    tmp_path: Path, full_loads: list[str], invoke: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.results import RunReader

    root = _suite(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    seen = []
    for name in ("files", "recorded"):
        if name == "recorded":  # a run of every task records the checked suite
            every = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "all", "-q")
            assert every.code == 0, every.err
        result = invoke(
            "run", root, "--agent", "oracle", "-t", "t[12]", "-o", tmp_path / name, "-q"
        )
        assert result.code == 0, result.err
        with RunReader(tmp_path / name) as reader:
            meta = reader.meta()
            rows = sorted((r["task_id"], bool(r["passed"])) for r in reader.rows())
        seen.append((meta["config"], meta["suite"], rows))
    assert len(full_loads) == 2  # the second run of t1 and t2 loaded them from the record
    assert seen[0] == seen[1] and seen[0][2] == [("t1", True), ("t2", True)]
