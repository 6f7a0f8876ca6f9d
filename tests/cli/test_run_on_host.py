"""--run-commands-on-host: the one way commands run unisolated (invariant 9).

Without it, `run`, `check-task` and `validate` refuse a task's or suite's
``backend: process``, ``--sandbox process`` and a ``cmd:`` agent's ``sandbox=process``,
and a host where bwrap cannot run refuses the run instead of falling back.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from toolproof.results import RunReader
from toolproof.sandbox import get_backend
from toolproof.tools.toolkits import shell
from toolproof_helpers import FIXTURES, CliResult

SUITE = FIXTURES / "sandbox-suite"
TASK = "shell-make-file"


def _process_suite(tmp_path: Path, where: str) -> Path:
    """The sandbox fixture suite with ``backend: process`` in one task or in suite.yaml."""
    root = tmp_path / "suite"
    shutil.copytree(SUITE, root)
    path = root / ("suite.yaml" if where == "suite" else f"tasks/{TASK}.yaml")
    data = yaml.safe_load(path.read_text())
    data["sandbox"] = {**(data.get("sandbox") or {}), "backend": "process"}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return root


@pytest.mark.parametrize("where", ["task", "suite"])
def test_a_process_backend_in_a_file_is_refused_without_the_option(
    invoke: Callable[..., CliResult], tmp_path: Path, where: str
) -> None:
    root = _process_suite(tmp_path, where)
    named = "suite.yaml" if where == "suite" else f"{TASK}.yaml"
    for refused in (
        invoke("validate", root),
        invoke("run", root, "-a", "oracle", "--task", TASK, "-o", tmp_path / "r1"),
    ):
        assert refused.code == 2, refused.err
        assert named in refused.err and "sandbox.backend" in refused.err
        assert "--run-commands-on-host" in refused.err
    assert not (tmp_path / "r1").exists()  # nothing was run


def test_with_the_option_the_task_runs_in_the_stronger_sandbox(
    invoke: Callable[..., CliResult], tmp_path: Path
) -> None:
    """The option lets the file load; the run's isolated default still wins over the
    task's process (the stronger of the two), where bwrap works."""
    root = _process_suite(tmp_path, "task")
    done = invoke(
        "run", root, "-a", "oracle", "--task", TASK, "--run-commands-on-host", "-q",
        "-o", tmp_path / "r",
    )  # fmt: skip
    assert done.code == 0, done.err
    with RunReader(tmp_path / "r") as reader:
        (record,) = reader.records()
        assert reader.meta()["config"]["run_commands_on_host"] is True
    bwrap = get_backend("bwrap").available()
    assert record.score.passed and record.isolated is bwrap
    assert ("NOT isolated" in done.err) is not bwrap


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (("--sandbox", "process"), "--sandbox"),
        (("-a", "cmd:echo hi", "--agent-arg", "sandbox=process"), "--agent-arg sandbox"),
    ],
)
def test_an_unisolated_run_level_choice_needs_the_option(
    invoke: Callable[..., CliResult], tmp_path: Path, args: tuple[str, ...], hint: str
) -> None:
    argv = ["run", "core", "--task", "hello-file", *args, "-o", tmp_path / "r"]
    if "-a" not in args:
        argv[1:1] = []
        argv += ["-a", "oracle"]
    refused = invoke(*argv)
    assert refused.code == 2, refused.err
    assert hint in refused.err and "--run-commands-on-host" in refused.err
    assert not (tmp_path / "r").exists()


def test_without_bwrap_the_run_refuses_instead_of_falling_back(
    invoke: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bwrap = get_backend("bwrap")
    monkeypatch.setattr(bwrap, "unavailable_reason", classmethod(lambda cls: "no bwrap here"))
    shell._host_default.cache_clear()
    try:
        refused = invoke("run", SUITE, "-a", "oracle", "--task", TASK, "-o", tmp_path / "n")
        assert refused.code == 2, refused.err
        assert "no bwrap here" in refused.err and "--run-commands-on-host" in refused.err
        assert not (tmp_path / "n").exists()
        done = invoke(
            "run", SUITE, "-a", "oracle", "--task", TASK, "--run-commands-on-host", "-q",
            "-o", tmp_path / "y",
        )  # fmt: skip
        assert done.code == 0, done.err
        assert "NOT isolated" in done.err and "no bwrap here" in done.err
        with RunReader(tmp_path / "y") as reader:
            (record,) = reader.records()
            assert reader.meta()["config"]["sandbox"] == "process"
        assert record.isolated is False and record.score.passed
    finally:
        shell._host_default.cache_clear()


def test_check_task_takes_the_option(invoke: Callable[..., CliResult], tmp_path: Path) -> None:
    root = _process_suite(tmp_path, "task")
    task = root / "tasks" / f"{TASK}.yaml"
    refused = invoke("check-task", task)
    assert refused.code == 2 and "--run-commands-on-host" in refused.err
    ran = invoke("check-task", task, "--run-commands-on-host")
    assert "--run-commands-on-host" not in ran.err and "sandbox.backend" not in ran.err
    assert f"{TASK}:" in ran.out  # it ran the gate (its verdict is the gate's business)


def test_a_resume_asks_for_the_option_again(
    invoke: Callable[..., CliResult], tmp_path: Path
) -> None:
    """The person decides at every invocation: a run kept on the host is not resumed there
    without the option (nor does the option slip into a run started without it)."""
    run_dir = tmp_path / "r"
    first = invoke(
        "run", SUITE, "-a", "oracle", "--task", TASK, "--sandbox", "process",
        "--run-commands-on-host", "-q", "-o", run_dir,
    )  # fmt: skip
    assert first.code == 0, first.err
    refused = invoke("run", "--resume", run_dir, "-q")
    assert refused.code == 2 and "--run-commands-on-host" in refused.err
    again = invoke("run", "--resume", run_dir, "--run-commands-on-host", "-q")
    assert again.code == 0, again.err


def test_without_bwrap_check_task_refuses_or_runs_on_the_host_when_told(
    invoke: Callable[..., CliResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bwrap = get_backend("bwrap")
    monkeypatch.setattr(bwrap, "unavailable_reason", classmethod(lambda cls: "no bwrap here"))
    shell._host_default.cache_clear()
    task = SUITE / "tasks" / f"{TASK}.yaml"
    try:
        refused = invoke("check-task", task)
        assert refused.code == 2, refused.err
        assert "no bwrap here" in refused.err and "--run-commands-on-host" in refused.err
        ran = invoke("check-task", task, "--run-commands-on-host")
        assert ran.code in (0, 1) and f"{TASK}:" in ran.out, ran.err
        # The gate ran on the host: the oracle solved it there (this fixture's only finding
        # is a static one, facts_vary, which is the fixture's, not the sandbox's).
        assert "oracle" not in ran.out and "infra" not in ran.out, ran.out
    finally:
        shell._host_default.cache_clear()
