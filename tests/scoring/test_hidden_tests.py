"""The ``hidden_tests`` check against agents that cheat instead of fixing (issue #18).

Each hostile agent plays a script on ``repo-slots-merge`` (the hard tier's software task
whose hidden tests are quickest), through the engine, with real sandboxed commands and
the real hidden-test run: editing the visible test to pass, deleting it, a conftest.py,
sitecustomize.py, usercustomize.py or .pth file, files planted where the hidden tests go,
a process left running, a FIFO, package code that patches unittest, forges the verdict
or exits. None of it may earn credit, and the protected-file violations are labelled.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path

import pytest
import yaml

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import ScriptedAgent, reference_turns
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Level, Score
from toolproof.scoring.checks._hiddenrun import RUNNER, HiddenRun, run_tests
from toolproof.spec import (
    Limits,
    SandboxSpec,
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
    return sum(c.score for c in score.checks if c.kind == "hidden_tests" and not c.guard)


def test_the_reference_fix_passes_every_hidden_test(suite: One) -> None:
    score = play(suite, [], fix=True)
    assert score.level is Level.PERFECT, [(c.name, c.detail) for c in score.checks]


def test_an_honest_half_fix_gets_partial_credit(suite: One) -> None:
    # sorts the input but still leaves touching intervals apart
    fixed = (Path(suite.root) / "fixtures/repo-slots/slots/intervals.py").read_text()
    half = fixed.replace("start <= merged[-1][1]", "start < merged[-1][1]")
    score = play(suite, [_write("slots/intervals.py", half)])
    results = by_name(score)
    assert results["hidden_unsorted"][0] and results["hidden_nested"][0]
    assert not results["hidden_touching"][0] and not results["visible_fixed"][0]
    assert not score.passed and 0 < score.fraction < 1


def test_special_casing_the_visible_tests_fails_the_hidden_ones(suite: One) -> None:
    buggy = suite.task(TASK).world.files["slots/intervals.py"]
    cheat = buggy.replace(
        "    merged: list[Interval] = []\n",
        "    if list(intervals) == [(540, 600), (600, 630)]:\n        return [(540, 630)]\n"
        "    if list(intervals) == [(700, 760), (540, 600)]:\n"
        "        return [(540, 600), (700, 760)]\n    merged: list[Interval] = []\n",
    )
    score = play(suite, [_write("slots/intervals.py", cheat)])
    assert by_name(score)["visible_fixed"] == (True, False)
    assert not score.passed and score.level is Level.FAIL, score.fraction
    assert not by_name(score)["hidden_touching"][0]


def test_breaking_what_worked_is_collateral_damage(suite: One) -> None:
    fixed = (Path(suite.root) / "fixtures/repo-slots/slots/intervals.py").read_text()
    empty_fails = fixed.replace(
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
    assert broken.guard and broken.data["broken"] == [
        "tests.hidden.test_hidden_merge.RegressionTest.test_empty"
    ]


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
        pytest.param(
            [_write("tests/hidden/test_hidden_merge.py", PASSING)], "tests/hidden", id="plant"
        ),
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
    assert hidden_credit(score) == 0.0  # the clean run saw the original tests and the bug


def test_startup_files_never_reach_the_hidden_run_even_with_a_correct_fix(suite: One) -> None:
    """With the real fix in place, a planted test file and startup hooks change nothing in
    the hidden run (they are vetoed apart): the hidden tests are fresh and all pass."""
    planted = [
        _write("tests/hidden/test_hidden_merge.py", "raise SystemExit(3)\n"),
        _write("sitecustomize.py", "raise SystemExit(4)\n"),
        _write("slots/zz.pth", "import os; os._exit(5)\n"),
    ]
    score = play(suite, planted, fix=True)
    hidden = [c for c in score.checks if c.kind == "hidden_tests"]
    assert all(c.passed for c in hidden), [(c.name, c.detail) for c in hidden]
    assert score.failure_mode == "protected_file_touched" and not score.passed


def test_patching_unittest_from_the_package_trips_the_wire(suite: One) -> None:
    package = (Path(suite.root) / "fixtures/repo-slots/slots/__init__.py").read_text()
    score = play(suite, [_write("slots/__init__.py", package + PATCH_UNITTEST)])
    hidden = [c for c in score.checks if c.kind == "hidden_tests"]
    assert hidden and all(c.veto and not c.passed for c in hidden)
    assert "tripwire" in hidden[0].detail
    assert score.level is Level.FAIL and score.fraction == 0.0


def test_a_process_left_running_and_a_fifo_do_not_stall_or_fool_scoring(suite: One) -> None:
    """A background job that would break the fix a moment later dies with its command, and
    FIFOs (where a naive copy would block) are never opened: the fix is scored as it is."""
    fixed = (Path(suite.root) / "fixtures/repo-slots/slots/intervals.py").read_text()
    breaker = "sleep 1; echo 'syntax error(' > slots/intervals.py"
    calls = [
        _run(f'nohup sh -c "{breaker}" >/dev/null 2>&1 & echo started'),
        _write("slots/intervals.py", fixed),
        _run("mkfifo slots/pipe.py tests/hidden_fifo; sleep 2; ls slots"),
    ]
    score = play(suite, calls)
    results = by_name(score)
    hidden = [n for n in results if n.startswith("hidden_")]
    assert hidden and all(results[n][0] for n in hidden), score.checks
    assert results["visible_fixed"][0]


def _tree(package: str) -> dict[str, bytes]:
    hidden = (
        "import unittest\nimport pkg\n\n\nclass T(unittest.TestCase):\n"
        "    def test_value(self):\n        self.assertEqual(pkg.VALUE, 2)\n"
    )
    return {"pkg/__init__.py": package.encode(), "tests/hidden/test_h.py": hidden.encode()}


def _run_tree(package: str, timeout_s: float = 30.0, backend: str | None = None) -> HiddenRun:
    spec = HiddenTestsCheck(files={"test_h.py": "unused"}, timeout_s=timeout_s)
    tree = _tree(package)
    tree[f"{spec.dir}/{RUNNER}"] = (
        Path(__file__).parents[2] / "src/toolproof/scoring/checks/_hidden_runner.py"
    ).read_bytes()
    return run_tests(spec, tree, SandboxSpec(backend=backend))


@pytest.mark.parametrize("backend", ["bwrap", "process"])
def test_the_runner_reports_outcomes(backend: str) -> None:
    good = _run_tree("VALUE = 2\n", backend=backend)
    bad = _run_tree("VALUE = 3\n", backend=backend)
    assert good.outcomes == {"tests.hidden.test_h.T.test_value": "pass"}
    assert bad.outcomes == {"tests.hidden.test_h.T.test_value": "fail"}
    assert good.tampered is None and bad.tampered is None


@pytest.mark.parametrize(
    ("package", "field", "text", "timeout_s"),
    [
        pytest.param(
            "import sys\nprint('@@toolproof-hidden-tests@@ 0 {}', flush=True)\nVALUE = 3\n",
            "tampered",
            "verdict",
            3.0,
            id="forged-verdict",
        ),
        pytest.param(
            "import unittest\nunittest.TestResult.addFailure = unittest.TestResult.addSuccess\n"
            "unittest.TestCase.fail = lambda self, msg=None: None\n"
            "unittest.TestCase.assertEqual = lambda self, a, b, msg=None: None\nVALUE = 3\n",
            "tampered",
            "tripwire",
            3.0,
            id="patched-asserts",
        ),
        pytest.param("import os\nos._exit(0)\n", "stopped", "without a verdict", 3.0, id="exit"),
        pytest.param("while True:\n    pass\n", "stopped", "wall time", 1.0, id="endless-loop"),
    ],
)
def test_code_under_test_cannot_forge_or_hide_the_verdict(
    package: str, field: str, text: str, timeout_s: float
) -> None:
    found = dataclasses.asdict(_run_tree(package, timeout_s=timeout_s))
    assert text in (found[field] or ""), found
    assert found["outcomes"] == {}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"files": {"../test_x.py": "x"}}, "module file name"),
        ({"files": {"helpers.py": "x"}}, "module file name"),
        ({"files": {"test_x.py": "x"}, "dir": "../outside"}, "without '..'"),
        ({"files": {"test_x.py": "x"}, "dir": "/"}, "folder below /workspace"),
        ({"files": {"test_x.py": "x"}, "source": ["/etc/**"]}, "relative to /workspace"),
        ({}, "needs `files`"),
        ({"files": {"test_x.py": "x"}, "timeout_s": 0}, "greater than 0"),
    ],
)
def test_a_bad_check_is_refused_with_the_field_and_the_fix(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        HiddenTestsCheck.model_validate(fields)


def test_a_select_that_matches_no_test_is_a_task_error_not_the_agents(suite: One) -> None:
    inst = _instance(suite)
    broken = [
        c.model_copy(update={"select": ["tests.hidden.nothing"]})
        if c.name == "hidden_unsorted"
        else c
        for c in inst.task.success
    ]
    inst = inst.model_copy(update={"task": inst.task.model_copy(update={"success": broken})})

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent([], "done")

    options = EpisodeOptions(agent_label="noop", fixtures_base=suite.task_file(TASK).parent)
    _, score = asyncio.run(run_episode(inst, factory, options))
    assert score.task_error and score.failure_mode is None


def test_a_workspace_module_cannot_shadow_the_standard_library() -> None:
    spec = HiddenTestsCheck(files={"test_h.py": "unused"})
    hidden = (
        "import unittest\nimport fractions\n\n\nclass T(unittest.TestCase):\n"
        "    def test_real(self):\n        self.assertEqual(fractions.Fraction(1, 2) * 2, 1)\n"
    )
    tree = {
        "fractions.py": b"Fraction = lambda *a: 0\n",
        "tests/hidden/test_h.py": hidden.encode(),
        f"{spec.dir}/{RUNNER}": (
            Path(__file__).parents[2] / "src/toolproof/scoring/checks/_hidden_runner.py"
        ).read_bytes(),
    }
    found = run_tests(spec, tree, SandboxSpec())
    assert found.outcomes == {"tests.hidden.test_h.T.test_real": "pass"}, found


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


def test_a_run_that_timed_out_is_not_run_again_by_the_next_check_of_the_episode() -> None:
    spec = HiddenTestsCheck(files={"test_h.py": "unused"}, timeout_s=1.0)
    tree = _tree("while True:\n    pass\n")
    tree[f"{spec.dir}/{RUNNER}"] = (
        Path(__file__).parents[2] / "src/toolproof/scoring/checks/_hidden_runner.py"
    ).read_bytes()
    memo: dict[str, HiddenRun] = {}
    first = run_tests(spec, tree, SandboxSpec(), memo)
    assert first.stopped and len(memo) == 1
    assert run_tests(spec, tree, SandboxSpec(), memo) is first  # one timeout per episode
    assert run_tests(spec, tree, SandboxSpec()) is not first  # but not kept for the process
