"""``toolproof new-task``: every scaffold, once its marked lines are rewritten, passes
``toolproof check-task``; left as written it fails on the markers; bad paths exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.cli._new_task import SCAFFOLDS
from toolproof_helpers import CliResult, write_suite

Invoke = Callable[..., CliResult]


@pytest.mark.parametrize(("kind", "domain"), sorted(SCAFFOLDS))
def test_a_filled_in_scaffold_passes_the_gate(
    invoke: Invoke, tmp_path: Path, kind: str, domain: str
) -> None:
    suite = write_suite(tmp_path / "suite", [])
    (suite / "tasks").mkdir(exist_ok=True)
    path = suite / "tasks" / f"my-{kind}.yaml"
    made = invoke("new-task", path, "--kind", kind, "--domain", domain)
    assert made.code == 0, made.err
    assert f"toolproof check-task {path}" in made.out
    unfilled = invoke("check-task", path)
    assert unfilled.code == 1 and ": scaffold: " in unfilled.out
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("FILL IN: ", "Please "), encoding="utf-8")
    filled = invoke("check-task", path)
    assert filled.code == 0, (filled.out, filled.err)
    assert f"ok   my-{kind}:" in filled.out


def test_bad_paths_and_existing_files_exit_2(invoke: Invoke, tmp_path: Path) -> None:
    for bad in ("Bad Name.yaml", "task.txt", "../x/../.yaml"):
        result = invoke("new-task", tmp_path / bad)
        assert result.code == 2 and "TASK_ID.yaml" in result.err, (bad, result.err)
    (tmp_path / "no").write_text("a file, not a folder")
    assert invoke("new-task", tmp_path / "no" / "dir" / "t.yaml").code == 2
    path = tmp_path / "t.yaml"
    assert invoke("new-task", path).code == 0
    again = invoke("new-task", path)
    assert again.code == 2 and "--force" in again.err
    assert invoke("new-task", path, "--force", "--kind", "lookup").code == 0
    assert invoke("new-task", tmp_path / "u.yaml", "--domain", "nowhere").code == 2
