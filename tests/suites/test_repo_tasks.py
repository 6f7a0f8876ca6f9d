"""The hard tier's software tasks (``tasks/repo-*/``, issue #18 item 5): real Python
repositories with a bug report, visible failing tests and hidden tests.

Their shape: hidden tests split into several groups of credit, the visible tests scored in
their original version, a collateral guard, protected tests and start-up files, nothing
changed outside the package; the hidden tests appear nowhere the agent can look; several
tasks draw their facts from the seed. The quality gate (oracle perfect, noop / random /
flawed fail) runs in ``test_proven.py``; the hostile agents in
``tests/scoring/test_hidden_tests.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from toolproof.spec import StateCheck, Suite, Task, load_suite
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


def test_eight_tasks_over_three_repositories_some_seeded(suite: Suite) -> None:
    tasks = family(suite)
    assert len(tasks) >= 8
    assert len({t.world.fixtures for t in tasks}) >= 3
    assert len([t for t in tasks if t.params]) >= 3


def test_each_task_is_judged_by_hidden_tests_and_guards_its_tests(suite: Suite) -> None:
    for task in family(suite):
        checks = hidden_checks(task)
        hidden = [c for c in checks if any(s.startswith("tests.hidden.") for s in c.select)]
        assert len(hidden) >= 5, task.id
        assert all(c.visible == ["tests/test_*.py"] and c.files for c in checks), task.id
        assert len({repr(sorted(c.files.items())) for c in checks}) == 1, task.id  # one run
        assert any(c.name == "nothing_broken" for c in checks), task.id
        protected = [c for c in task.success if isinstance(c, ProtectedCheck)]
        assert protected and protected[0].veto, task.id
        assert "tests/**" in protected[0].paths and set(protected[0].paths) >= STARTUP, task.id
        state = [c for c in task.success if isinstance(c, StateCheck)]
        assert state and state[0].unchanged_elsewhere, task.id


def test_the_hidden_tests_are_nowhere_the_agent_can_look(suite: Suite) -> None:
    for task in family(suite):
        fixtures = (suite.task_file(task.id).parent / str(task.world.fixtures)).resolve()
        seen = {p.relative_to(fixtures).as_posix(): p.read_text() for p in _files(fixtures)}
        seen.update(task.world.files)
        for check in hidden_checks(task):
            for name, text in check.files.items():
                assert not any(Path(rel).name == name for rel in seen), (task.id, name)
                body = text.split("\n", 3)[-1]
                assert not any(body in content for content in seen.values()), (task.id, name)
                assert name not in task.description, (task.id, name)


def _files(root: Path) -> list[Path]:
    return [p for p in sorted(root.rglob("*")) if p.is_file()]


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
