"""The hard tier's software tasks (``tasks/repo-*/``, issues #18 and #30): real Python
repositories with a bug report, visible failing tests and hidden cases judged by the
harness.

Their shape: hidden cases split into several groups of credit, each with fail-to-pass
cases; the visible tests' inputs as a required check of no weight; a pass-to-pass guard;
protected tests and start-up files; nothing changed outside the package; the hidden
inputs appear nowhere the agent can look; several tasks draw their facts from the seed.
``check-task`` fails a task whose fail-to-pass case passes on the unfixed code, or whose
pass-to-pass case fails (a real gate run on a broken copy, below). The quality gate on
every task (oracle perfect, noop / random / flawed fail, the F2P/P2P split) runs in
``test_proven.py``; the hostile agents in ``tests/scoring/test_hidden_tests.py``.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from toolproof.agents import EpisodeContext
from toolproof.agents.builtin.flawed import ScriptedAgent
from toolproof.engine.episode import EpisodeOptions, run_episode
from toolproof.scoring import Score
from toolproof.spec import Limits, SolutionCall, StateCheck, Suite, Task, load_suite, render
from toolproof.spec.hidden_checks import HiddenTestsCheck
from toolproof.spec.lint_checks import ProtectedCheck

STARTUP = {"**/conftest.py", "**/sitecustomize.py", "**/usercustomize.py", "**/*.pth"}


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite("hard")


def family(suite: Suite) -> list[Task]:
    return [t for t in suite.tasks if suite.task_file(t.id).parent.name.startswith("repo-")]


def hidden_checks(task: Task) -> list[HiddenTestsCheck]:
    return [c for c in task.success if isinstance(c, HiddenTestsCheck)]


def test_the_tier_has_its_tasks_over_several_repositories_some_seeded(suite: Suite) -> None:
    """At least 30 bug-fix tasks over at least 5 packages of different kinds (money, date and
    time, parsing, data structures, a CLI, a WSGI handler), three of them seeded."""
    tasks = family(suite)
    assert len(tasks) >= 30
    assert len({t.world.fixtures for t in tasks}) >= 5
    assert len([t for t in tasks if t.params]) >= 3


def test_each_task_is_judged_by_hidden_cases_and_guards_its_tests(suite: Suite) -> None:
    for task in family(suite):
        checks = hidden_checks(task)
        graded = [c for c in checks if c.name and c.name.startswith("hidden_")]
        assert len(graded) >= 3 and all(c.fail_to_pass for c in graded), task.id
        assert len({(c.setup, tuple(c.source)) for c in checks}) == 1, task.id
        visible = next(c for c in checks if c.name == "visible_fixed")
        assert visible.weight == 0 and visible.fail_to_pass, task.id  # required, no credit
        guard = next(c for c in checks if c.name == "nothing_broken")
        assert guard.pass_to_pass and not guard.fail_to_pass, task.id
        protected = [c for c in task.success if isinstance(c, ProtectedCheck)]
        assert protected and protected[0].veto, task.id
        assert "tests/**" in protected[0].paths and set(protected[0].paths) >= STARTUP, task.id
        state = [c for c in task.success if isinstance(c, StateCheck)]
        assert state and state[0].unchanged_elsewhere, task.id


def test_the_hidden_inputs_are_nowhere_the_agent_can_look(suite: Suite) -> None:
    for task in family(suite):
        fixtures = (suite.task_file(task.id).parent / str(task.world.fixtures)).resolve()
        seen = [p.read_text() for p in sorted(fixtures.rglob("*")) if p.is_file()]
        seen += list(task.world.files.values())
        seen.append(task.description)
        for check in hidden_checks(task):
            if not (check.name or "").startswith("hidden_"):
                continue
            for case in check.fail_to_pass:
                text = case.expr or ""
                assert not any(text in content for content in seen), (task.id, case.id)


def test_the_reference_fix_only_touches_the_package(suite: Suite) -> None:
    for task in family(suite):
        writes = [
            str(call.args["path"])
            for item in task.solution.calls
            for call in (item if isinstance(item, list) else [item])
            if call.tool == "write_file"
        ]
        state = next(c for c in task.success if isinstance(c, StateCheck))
        package = state.allow_changes[0].split("/")[0]
        assert writes and all(w.startswith(f"/workspace/{package}/") for w in writes), task.id


def _draft(tmp_path: Path, move: str) -> Path:
    """A copy of repo-slots-merge (with its fixtures) whose split is wrong: ``move`` is
    ``p2p`` (a pass-to-pass case listed as fail-to-pass) or ``f2p`` (the reverse)."""
    hard = Path(load_suite("hard").root)
    shutil.copytree(hard / "fixtures" / "repo-slots", tmp_path / "repo-slots")
    data = yaml.safe_load((hard / "tasks/repo-slots/repo-slots-merge.yaml").read_text())
    data["world"]["fixtures"] = "repo-slots"
    checks = {c["name"]: c for c in data["success"]}
    if move == "p2p":
        checks["hidden_total"]["fail_to_pass"].append(checks["nothing_broken"]["pass_to_pass"][0])
    else:
        checks["nothing_broken"]["pass_to_pass"].append(
            checks["hidden_touching"]["fail_to_pass"][0]
        )
    (tmp_path / "repo-slots-merge.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return tmp_path / "repo-slots-merge.yaml"


@pytest.mark.parametrize(
    ("move", "message"),
    [
        ("p2p", "hidden_total: fail-to-pass case(s) ['empty'] pass on the original code"),
        ("f2p", "nothing_broken: pass-to-pass case(s) ['two'] fail on the original code"),
    ],
)
def test_check_task_refuses_a_wrong_fail_to_pass_split(
    tmp_path: Path, move: str, message: str
) -> None:
    command = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]
    done = subprocess.run(
        [*command, "check-task", str(_draft(tmp_path, move))],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "hidden_cases: " + message in done.stdout, done.stdout


def _play_write(suite: Suite, task_id: str, path: str, content: str) -> Score:
    """Score an episode that writes ``content`` to ``path`` and stops (epoch 0)."""
    task = suite.task(task_id)
    inst = render(
        task,
        suite=suite.name,
        suite_seed=suite.config.seed,
        epoch=0,
        limits=Limits(),
        system_prompt="",
    )
    call = SolutionCall(tool="write_file", args={"path": f"/workspace/{path}", "content": content})

    def factory(ctx: EpisodeContext) -> ScriptedAgent:
        return ScriptedAgent([[call]], "done")

    options = EpisodeOptions(agent_label="partial", fixtures_base=suite.task_file(task_id).parent)
    _, score = asyncio.run(run_episode(inst, factory, options))
    return score


PLAUSIBLE = [
    pytest.param(
        "repo-shortlinks-validate",
        "shortlinks/urls.py",
        (
            '    return parts.scheme in ("http", "https") and bool(parts.hostname)',
            '    return parts.scheme in ("http", "https")',
        ),
        {"hidden_schemes", "hidden_api"},
        {"hidden_host"},
        id="scheme-but-not-host",
    ),
    pytest.param(
        "repo-tally-quoted",
        "tally/report.py",
        (
            "    reader = csv.reader(io.StringIO(text))",
            "    reader = (line.replace('\"', '').split(',') if line else []"
            " for line in text.splitlines())",
        ),
        {"hidden_quoted_amount"},
        {"hidden_escaped_quote"},
        id="quotes-dropped-commas-split",
    ),
]


@pytest.mark.parametrize(("task_id", "module", "edit", "passing", "failing"), PLAUSIBLE)
def test_a_plausible_but_wrong_fix_gets_credit_in_proportion_to_its_cases(
    suite: Suite,
    task_id: str,
    module: str,
    edit: tuple[str, str],
    passing: set[str],
    failing: set[str],
) -> None:
    fixture = Path(suite.root) / "fixtures" / task_id.split("-")[1].join(["repo-", ""])
    fixed = (fixture / module).read_text()
    assert fixed.count(edit[0]) == 1
    score = _play_write(suite, task_id, module, fixed.replace(*edit))
    checks = {c.name: c for c in score.checks}
    assert all(checks[n].passed for n in passing), [(n, checks[n].detail) for n in passing]
    assert not any(checks[n].passed for n in failing)
    for check in score.checks:
        if check.kind == "hidden_tests" and check.data.get("fail_to_pass"):
            f2p = check.data["fail_to_pass"]
            share = len([i for i in f2p if check.data["cases"][i] == "pass"]) / len(f2p)
            assert check.score == pytest.approx(share), check.name
    progress = [c for c in score.checks if not c.guard]
    earned = sum(c.weight * c.score for c in progress) / sum(c.weight for c in progress)
    assert score.fraction == pytest.approx(earned) and 0 < score.fraction < 1
    assert not score.passed
