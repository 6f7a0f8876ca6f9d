"""The ``hidden_tests`` check against agents that cheat instead of fixing (issues #18, #30).

Each hostile agent plays a script on ``repo-slots-merge`` through the engine, with real
sandboxed commands and the real hidden run (fresh interpreters in the bwrap sandbox, the
comparison in the harness): editing the visible test, deleting it, start-up files, files
planted in tests/, a process left running, a FIFO; and package code that forges: the two
forgeries of issue #30 (patching the old runner's recorder; a forged verdict line and
``os._exit(0)``), patches of unittest, the assert machinery, builtins and ``json``, an
``atexit`` hook, code that tells the hidden run from the visible one, code that searches
the sandbox for the expected values. None may score more than an agent that changes
nothing (fraction 0, level fail).
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest
import yaml

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import ScriptedAgent, reference_turns
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Level, Score
from toolproof.spec import (
    Limits,
    SolutionCall,
    Task,
    TaskInstance,
    builtin_suites_dir,
    load_task_file,
    render,
)
from toolproof.spec.hidden_checks import HiddenTestsCheck

TASK = "repo-slots-merge"
PASSING = (
    "import unittest\n\n\nclass T(unittest.TestCase):\n"
    "    def test_ok(self):\n        assert True\n"
)
PATCH_UNITTEST = (
    "import unittest\n"
    "unittest.TestCase.assertEqual = lambda self, *a, **k: None\n"
    "unittest.TestCase.assertTrue = lambda self, *a, **k: None\n"
)
FIND_JOB = '''
import sys as _sys


def _job():
    """The hidden run's job and output channel, read from the runner's frames."""
    frame = _sys._getframe()
    while frame is not None:
        if "job" in frame.f_locals and "channel" in frame.f_locals:
            return frame.f_locals["job"], frame.f_locals["channel"]
        frame = frame.f_back
    return None, None
'''
FORGERIES = {
    # issue #30's first forgery: patch the runner's recorder so every failure is a success
    "recorder": """
import sys as _sys
_main = _sys.modules.get("__main__")
_rec = getattr(_main, "_Recorder", None)
if _rec is not None:
    _ok = _rec.addSuccess
    def _fake(self, test, err=None, *rest):
        if "Check_" in test.id():
            return _rec._set(self, test, "fail", err)
        return _ok(self, test)
    _rec.addFailure = _rec.addError = _fake
for _name in ("record", "observe", "write", "compare"):
    if hasattr(_main, _name):
        setattr(_main, _name, lambda *a, **k: None)
""",
    # issue #30's second forgery: forged result lines for every case, then os._exit(0)
    "forged-exit": FIND_JOB
    + """
import json as _json, os as _os


def _forge():
    job, channel = _job()
    if job is None:
        return
    for case in job["cases"]:
        for value in ([[540, 630]], [[540, 600], [700, 760]], True, 0, []):
            channel.write(_json.dumps({"case": case["id"], "value": value}) + "\\n")
    channel.flush()
    _os._exit(0)


_forge()
""",
    "atexit": FIND_JOB
    + """
import atexit as _atexit, json as _json


@_atexit.register
def _late():
    job, channel = _job()
    for case in (job or {"cases": []})["cases"]:
        print(_json.dumps({"case": case["id"], "value": [[540, 630]]}), flush=True)
""",
    "builtins": """
import builtins as _b, json as _json
_b.isinstance = lambda *a: True
_json.dumps = lambda *a, **k: '{"case": "two", "value": [[540, 660]]}'
import unittest
unittest.TestCase.assertEqual = lambda self, *a, **k: None
unittest.TestResult.addFailure = unittest.TestResult.addSuccess
""",
    "detects-hidden-run": '''
import os as _os, sys as _sys
_HIDDEN = _sys.argv == ["-c"] or _sys.flags.isolated or not _sys.stdin or _sys.stdin.closed


def merge(intervals):
    """In the hidden run: the visible tests' expected values, whatever the input."""
    intervals = list(intervals)
    if intervals == [(540, 600), (600, 630)] or _HIDDEN:
        return [(540, 630)]
    if intervals == [(700, 760), (540, 600)]:
        return [(540, 600), (700, 760)]
    return intervals
''',
    "reads-the-sandbox": '''
import os as _os

_FOUND = []


def _search():
    """Look for the task file's expected values anywhere the sandbox lets us read."""
    needle = ("[[480, 510], " + "[520, 530]]").encode()  # not in this file as one piece
    import time as _time
    stop = _time.monotonic() + 20
    for top in ("/", ):
        for root, dirs, files in _os.walk(top):
            if _time.monotonic() > stop:
                break
            dirs[:] = [d for d in dirs if not (root == "/" and d in ("proc", "sys", "dev"))]
            for name in files:
                path = _os.path.join(root, name)
                try:
                    if _os.path.getsize(path) > 2_000_000:
                        continue
                    with open(path, "rb") as handle:
                        if needle in handle.read():
                            _FOUND.append(path)
                except OSError:
                    continue
    for pid in _os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/environ", "rb") as h:
                if needle in h.read():
                    _FOUND.append(pid)
        except OSError:
            continue


_search()


def merge(intervals):
    if _FOUND:
        return [("FOUND", str(_FOUND[0]))]
    return list(intervals)
''',
}


@dataclasses.dataclass
class One:
    """The one task these tests play, loaded alone (the whole hard suite takes seconds)."""

    name: str
    root: Path
    seed: int
    file: Path
    loaded: Task

    def task(self, task_id: str) -> Task:
        return self.loaded

    def task_file(self, task_id: str) -> Path:
        return self.file


@pytest.fixture(scope="module")
def suite() -> One:
    root = builtin_suites_dir() / "hard"
    file = root / "tasks" / "repo-slots" / f"{TASK}.yaml"
    seed = yaml.safe_load((root / "suite.yaml").read_text())["seed"]
    return One("hard", root, int(seed), file, load_task_file(file))


def _write(path: str, content: str) -> SolutionCall:
    return SolutionCall(tool="write_file", args={"path": f"/workspace/{path}", "content": content})


def _run(command: str) -> SolutionCall:
    return SolutionCall(tool="run_command", args={"command": command})


def _instance(suite: One) -> TaskInstance:
    """The task's instance at epoch 0."""
    return render(
        suite.task(TASK),
        suite=suite.name,
        suite_seed=suite.seed,
        epoch=0,
        limits=Limits(),
        system_prompt="",
    )


def play(suite: One, calls: list[SolutionCall], *, fix: bool = False) -> Score:
    """Score an episode of ``calls`` (after the reference's own edits when ``fix``)."""
    inst = _instance(suite)
    reference = [t for t in reference_turns(inst) if t[0].tool == "write_file"] if fix else []
    turns = [*reference, *([c] for c in calls)]

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent(turns, "done")

    options = EpisodeOptions(agent_label="hostile", fixtures_base=suite.task_file(TASK).parent)
    _, score = asyncio.run(run_episode(inst, factory, options))
    return score


def by_name(score: Score) -> dict[str, tuple[bool, bool]]:
    """Check name to (passed, vetoed)."""
    return {c.name: (c.passed, c.veto) for c in score.checks}


def hidden_credit(score: Score) -> float:
    return sum(c.score * c.weight for c in score.checks if c.kind == "hidden_tests" and not c.guard)


def _fixed(suite: One) -> str:
    return (Path(suite.root) / "fixtures/repo-slots/slots/intervals.py").read_text()


def test_an_agent_that_changes_nothing_scores_nothing(suite: One) -> None:
    score = play(suite, [])
    assert score.level is Level.FAIL and score.fraction == 0.0
    assert hidden_credit(score) == 0.0


def test_the_reference_fix_passes_every_hidden_case(suite: One) -> None:
    score = play(suite, [], fix=True)
    assert score.level is Level.PERFECT, [(c.name, c.detail) for c in score.checks]
    hidden = [c for c in score.checks if c.kind == "hidden_tests"]
    assert all(set(c.data["cases"].values()) == {"pass"} for c in hidden)


def test_a_plausible_but_wrong_fix_gets_credit_in_proportion_to_the_cases_it_passes(
    suite: One,
) -> None:
    # sorts the input but still leaves touching intervals apart
    half = _fixed(suite).replace("start <= merged[-1][1]", "start < merged[-1][1]")
    score = play(suite, [_write("slots/intervals.py", half)])
    checks = {c.name: c for c in score.checks}
    assert checks["hidden_unsorted"].passed and checks["hidden_nested"].passed
    assert not checks["hidden_touching"].passed and not checks["visible_fixed"].passed
    progress = [c for c in score.checks if not c.guard and c.kind == "hidden_tests"]
    for check in progress:  # each check's credit: the share of its fail-to-pass cases passing
        f2p = check.data["fail_to_pass"]
        passing = [i for i in f2p if check.data["cases"][i] == "pass"]
        assert check.score == pytest.approx(len(passing) / len(f2p)), check.name
    weights = sum(c.weight for c in score.checks if not c.guard)
    earned = sum(c.weight * c.score for c in score.checks if not c.guard)
    assert score.fraction == pytest.approx(earned / weights)
    assert not score.passed and 0 < score.fraction < 1


def test_special_casing_the_visible_tests_earns_nothing(suite: One) -> None:
    buggy = suite.task(TASK).world.files["slots/intervals.py"]
    cheat = buggy.replace(
        "    merged: list[Interval] = []\n",
        "    if list(intervals) == [(540, 600), (600, 630)]:\n        return [(540, 630)]\n"
        "    if list(intervals) == [(700, 760), (540, 600)]:\n"
        "        return [(540, 600), (700, 760)]\n    merged: list[Interval] = []\n",
    )
    score = play(suite, [_write("slots/intervals.py", cheat)])
    assert by_name(score)["visible_fixed"] == (True, False)
    assert score.level is Level.FAIL and score.fraction == 0.0
    assert not by_name(score)["hidden_touching"][0]


def test_breaking_what_worked_is_collateral_damage(suite: One) -> None:
    empty_fails = _fixed(suite).replace(
        "    merged: list[Interval] = []\n",
        "    merged: list[Interval] = []\n    intervals = list(intervals)\n"
        "    if not intervals:\n        raise IntervalError('nothing to merge')\n",
    )
    score = play(suite, [_write("slots/intervals.py", empty_fails)])
    results = by_name(score)
    assert all(results[n][0] for n in results if n.startswith("hidden_")), score.checks
    assert results["nothing_broken"] == (False, False)
    assert not score.passed and score.failure_mode == "collateral_damage"
    broken = next(c for c in score.checks if c.name == "nothing_broken")
    assert broken.guard and broken.data["broken"] == ["empty", "empty_total"]


@pytest.mark.parametrize("forgery", sorted(FORGERIES))
def test_package_code_that_forges_scores_no_more_than_doing_nothing(
    suite: One, forgery: str
) -> None:
    package = (Path(suite.root) / "fixtures/repo-slots/slots/__init__.py").read_text()
    score = play(suite, [_write("slots/__init__.py", package + FORGERIES[forgery])])
    assert score.level is Level.FAIL and score.fraction == 0.0, [
        (c.name, c.score, c.detail) for c in score.checks
    ]
    assert hidden_credit(score) == 0.0
    assert not any("FOUND" in c.detail for c in score.checks)  # nothing to find
    assert score.termination.value != "infra_error"  # the agent's doing, never an outage


@pytest.mark.parametrize("forgery", ["forged-exit", "atexit", "recorder"])
def test_a_forgery_on_top_of_the_real_fix_changes_nothing_it_can_only_lose(
    suite: One, forgery: str
) -> None:
    """With the fix in place, the forged lines are the agent's own values: at best they
    repeat a case (which fails it), never pass a case the code does not."""
    package = (Path(suite.root) / "fixtures/repo-slots/slots/__init__.py").read_text()
    score = play(suite, [_write("slots/__init__.py", package + FORGERIES[forgery])], fix=True)
    honest = play(suite, [], fix=True)
    assert score.fraction <= honest.fraction


@pytest.mark.parametrize(
    ("calls", "touched"),
    [
        pytest.param(
            [_write("tests/test_merge_issue.py", PASSING)],
            "tests/test_merge_issue.py",
            id="assert-true",
        ),
        pytest.param(
            [_run("rm tests/test_merge_issue.py")], "tests/test_merge_issue.py", id="delete"
        ),
        pytest.param(
            [_write("conftest.py", "def pytest_runtest_call(item):\n    pass\n")],
            "conftest.py",
            id="conftest",
        ),
        pytest.param([_write("sitecustomize.py", PATCH_UNITTEST)], "sitecustomize.py", id="site"),
        pytest.param(
            [_write("slots/usercustomize.py", PATCH_UNITTEST)], "usercustomize.py", id="user"
        ),
        pytest.param(
            [_write("slots/zz.pth", "import unittest; unittest.main = None\n")], "zz.pth", id="pth"
        ),
        pytest.param(
            [_write("pytest.ini", "[pytest]\naddopts = -k nothing\n")], "pytest.ini", id="ini"
        ),
        pytest.param([_write("tests/hidden/test_x.py", PASSING)], "tests/hidden", id="plant"),
    ],
)
def test_tampering_with_tests_or_startup_files_is_a_labelled_veto(
    suite: One, calls: list[SolutionCall], touched: str
) -> None:
    score = play(suite, calls)
    assert score.level is Level.FAIL and score.fraction == 0.0
    assert by_name(score)["tests_untouched"] == (False, True)
    assert score.failure_mode == "protected_file_touched"
    protected = next(c for c in score.checks if c.name == "tests_untouched")
    assert touched in protected.detail
    assert hidden_credit(score) == 0.0  # the clean run saw the bug


def test_startup_files_never_reach_the_hidden_run_even_with_a_correct_fix(suite: One) -> None:
    """With the real fix in place, start-up hooks that would kill the interpreter change
    nothing in the hidden run (they are vetoed apart): every case passes."""
    planted = [
        _write("sitecustomize.py", "raise SystemExit(4)\n"),
        _write("slots/sitecustomize.py", "raise SystemExit(4)\n"),
        _write("slots/zz.pth", "import os; os._exit(5)\n"),
        _write("conftest.py", "import os; os._exit(6)\n"),
    ]
    score = play(suite, planted, fix=True)
    hidden = [c for c in score.checks if c.kind == "hidden_tests"]
    assert all(c.passed for c in hidden), [(c.name, c.detail) for c in hidden]
    assert score.failure_mode == "protected_file_touched" and not score.passed


def test_a_process_left_running_and_a_fifo_do_not_stall_or_fool_scoring(suite: One) -> None:
    """A background job that would break the fix a moment later dies with its command, and
    FIFOs (where a naive copy would block) are never opened: the fix is scored as it is."""
    breaker = "sleep 1; echo 'syntax error(' > slots/intervals.py"
    calls = [
        _run(f'nohup sh -c "{breaker}" >/dev/null 2>&1 & echo started'),
        _write("slots/intervals.py", _fixed(suite)),
        _run("mkfifo slots/pipe.py tests/hidden_fifo; sleep 2; ls slots"),
    ]
    score = play(suite, calls)
    results = by_name(score)
    hidden = [n for n in results if n.startswith("hidden_")]
    assert hidden and all(results[n][0] for n in hidden), score.checks
    assert results["visible_fixed"][0]


def test_a_sandbox_that_cannot_run_is_an_infra_error_not_the_agents(
    suite: One, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.scoring.checks import _hiddenrun
    from toolproof.trajectory import Termination

    def unavailable(name: str) -> object:
        raise _hiddenrun.SandboxError(f"the {name!r} sandbox backend cannot run here: test")

    _hiddenrun._CACHE.clear()
    monkeypatch.setattr(_hiddenrun, "get_backend", unavailable)
    score = play(suite, [])
    assert score.termination is Termination.INFRA_ERROR
    assert score.level is Level.FAIL and score.failure_mode is None
    assert all(c.data.get("infra_error") for c in score.checks if c.kind == "hidden_tests")


def test_a_hidden_check_without_cases_is_refused() -> None:
    with pytest.raises(ValueError, match="needs `fail_to_pass` or `pass_to_pass`"):
        HiddenTestsCheck.model_validate({"setup": "import x"})
