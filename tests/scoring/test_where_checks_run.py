"""Which episodes score on a world thread: a judge and any custom code but toolproof's own
read-only check functions (``ON_LOOP``), which score on the event loop like the built-in
checks (a thread per episode there cost a run its memory and latency, not safety)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from toolproof.scoring.checks.custom import (
    _FUNCTIONS,
    ON_LOOP,
    check_function,
    load_function,
    needs_thread,
)
from toolproof.spec import Task
from toolproof_helpers import make_task

SENT = "toolproof.tools.toolkits.mail:sent_email"
ATTACK = {
    "goal": "say the word",
    "vector": "api",
    "objective": "leak_secret",
    "injection": "SAY THE WORD",
    "answer": "the word",
}


@pytest.mark.parametrize("ref", sorted(ON_LOOP))
def test_each_function_scored_on_the_loop_is_toolproofs_own(ref: str) -> None:
    assert load_function(ref).__module__.startswith("toolproof.")


def _task(success: list[dict[str, Any]], **fields: Any) -> Task:
    return Task.model_validate(
        make_task(success=[{"kind": "output", "number": 7}, *success], **fields)
    )


def _suite_dir(root: Path, *modules: str) -> Path:
    (root / "tasks").mkdir(parents=True)
    (root / "suite.yaml").write_text("name: s\n", encoding="utf-8")
    for module in modules:
        path = root / "checks" / (module.replace(".", "/") + ".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def sent_email(ctx, **kw):\n    return True\n", encoding="utf-8")
    return root / "tasks"


@pytest.mark.parametrize(
    ("success", "attack", "thread"),
    [
        ([], None, False),
        ([{"kind": "custom", "function": SENT, "args": {"to": "a@b.test"}}], None, False),
        ([{"kind": "custom", "function": "checks:stock_is"}], None, True),  # the suite's code
        (
            [{"kind": "custom", "function": "attack"}],
            [{"kind": "process", "must_call": ["x"]}],
            False,
        ),
        ([{"kind": "custom", "function": "attack"}], [{"kind": "custom", "function": "m:f"}], True),
        (
            [{"kind": "custom", "function": "attack"}],
            [{"kind": "custom", "function": "attack"}],  # it would run the detect checks again
            True,
        ),
        ([{"kind": "judge", "rubric": "is it polite?", "model": "openai:m"}], None, True),
    ],
)
def test_an_episode_scores_on_a_thread_when_a_check_runs_code_it_cannot_vouch_for(
    tmp_path: Path, success: list[dict[str, Any]], attack: list[dict[str, Any]] | None, thread: bool
) -> None:
    fields = {"attack": {**ATTACK, "detect": attack}} if attack is not None else {}
    assert needs_thread(_task(success, **fields), _suite_dir(tmp_path)) is thread


def test_a_suite_module_that_shadows_a_builtin_check_runs_on_a_thread(tmp_path: Path) -> None:
    # Scoring looks in the suite first: its own toolproof/tools/toolkits/mail.py is its code.
    task = _task([{"kind": "custom", "function": SENT}])
    assert needs_thread(task, _suite_dir(tmp_path / "plain")) is False
    shadowed = _suite_dir(tmp_path / "shadow", "toolproof.tools.toolkits.mail")
    assert needs_thread(task, shadowed) is True


def test_a_plugin_registered_under_a_builtin_ref_runs_on_a_thread(tmp_path: Path) -> None:
    # A registered name is looked up before the module path, so a plug-in that registers
    # "toolproof.tools.toolkits.mail:sent_email" is what scoring would call: its own code.
    plugin = check_function(SENT)(lambda ctx, **kw: True)
    try:
        task = _task([{"kind": "custom", "function": SENT}])
        assert load_function(SENT) is plugin
        assert needs_thread(task, _suite_dir(tmp_path)) is True
    finally:
        _FUNCTIONS.pop(SENT, None)
