"""The front door as a new user meets it: ``run`` takes a task file as ``validate`` does;
unknown agents, suites, tools and task fields get a "did you mean"; ``validate`` runs
each reference solution once and refuses a task whose own solution fails its checks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.spec._suggest import did_you_mean
from toolproof_helpers import CliResult, make_task, write_suite

Invoke = Callable[..., CliResult]


def test_run_takes_a_task_file_inside_a_suite(invoke: Invoke, tmp_path: Path) -> None:
    suite = write_suite(tmp_path / "mini", [make_task(), make_task(id="other")])
    result = invoke("run", suite / "tasks" / "stock.yaml", "-a", "oracle", "-o", tmp_path / "r")
    assert result.code == 0, result.err
    assert "stock" in result.out and "other" not in result.out  # only that task


def test_run_refuses_a_task_file_outside_a_suite_saying_why(invoke: Invoke, tmp_path: Path) -> None:
    lone = write_suite(tmp_path / "mini", [make_task()]) / "tasks" / "stock.yaml"
    moved = lone.rename(tmp_path / "stock.yaml")
    result = invoke("run", moved, "-a", "oracle", "-o", tmp_path / "r")
    assert result.code == 2
    assert "outside any suite" in result.err and "Traceback" not in result.err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["run", "cor", "-a", "oracle"], "did you mean 'core'"),
        (["run", "core", "-a", "oracl", "-t", "hello-file"], "did you mean 'oracle'"),
        (["run", "core", "-a", "opnai:gpt-4o", "-t", "hello-file"], "did you mean 'openai'"),
    ],
)
def test_unknown_names_get_a_did_you_mean(
    invoke: Invoke, tmp_path: Path, args: list[str], suggestion: str
) -> None:
    result = invoke(*args, "-o", tmp_path / "r", "-q")
    assert result.code == 2 and suggestion in result.err, result.err


def test_a_misspelt_tool_and_field_get_a_did_you_mean(invoke: Invoke, tmp_path: Path) -> None:
    tool = write_suite(tmp_path / "a", [make_task(tools=["get_stock", "adjust_stok"])])
    result = invoke("validate", tool)
    assert result.code == 2 and "did you mean 'adjust_stock'" in result.err, result.err
    field = make_task()
    field["difficuly"] = 2
    result = invoke("validate", write_suite(tmp_path / "b", [field]))
    assert result.code == 2 and "difficuly: is not a known field" in result.err
    assert "did you mean 'difficulty'?" in result.err


def test_validate_runs_the_reference_solution(invoke: Invoke, tmp_path: Path) -> None:
    wrong = make_task(success=[{"kind": "output", "number": 8}])  # the solution answers 7
    suite = write_suite(tmp_path / "mini", [wrong, make_task(id="other")])
    result = invoke("validate", suite)
    assert result.code == 2, result.out
    lines = [line for line in result.err.splitlines() if ": solution: " in line]
    assert len(lines) == 1 and "stock.yaml:" in lines[0], result.err
    assert "reference solution is not perfect" in lines[0]
    static = invoke("validate", "--no-solutions", suite)  # the static checks alone pass
    assert static.code == 0, static.err
    good = invoke("validate", write_suite(tmp_path / "good", [make_task()]))
    assert good.code == 0 and "reference solutions perfect" in good.out


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.text(max_size=40), st.lists(st.text(max_size=20), max_size=30))
def test_did_you_mean_is_a_clause_or_nothing(name: str, known: list[str]) -> None:
    text = did_you_mean(name, known)
    assert text == "" or (text.startswith("; did you mean ") and text.endswith("?"))
    if name in known and name:
        assert repr(name) in text


def test_new_task_creates_its_folder(invoke: Invoke, tmp_path: Path) -> None:
    target = tmp_path / "my-suite" / "tasks" / "pay-rent.yaml"
    result = invoke("new-task", target, "--kind", "change", "--domain", "banking")
    assert result.code == 0, result.err
    assert target.is_file()
    blocked = tmp_path / "file"
    blocked.write_text("x")
    result = invoke("new-task", blocked / "tasks" / "t.yaml")
    assert result.code == 2 and "cannot create the folder" in result.err


def test_an_oracle_run_warns_of_a_broken_solution(invoke: Invoke, tmp_path: Path) -> None:
    wrong = make_task(success=[{"kind": "output", "number": 8}])  # the solution answers 7
    suite = write_suite(tmp_path / "mini", [wrong])
    result = invoke("run", suite, "-a", "oracle", "-o", tmp_path / "r")
    assert "reference solution of 1 task(s) does not pass" in result.err, result.err
    assert "(stock)" in result.err
    fine = invoke(
        "run", write_suite(tmp_path / "ok", [make_task()]), "-a", "oracle", "-o", tmp_path / "r2"
    )
    assert fine.code == 0 and "reference solution" not in fine.err


def test_a_mis_indented_record_is_flagged(invoke: Invoke, tmp_path: Path) -> None:
    world = {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}, "B": {"stock": 3}}}
    suite = write_suite(tmp_path / "mini", [make_task(world=world)])
    result = invoke("validate", suite)
    assert result.code == 2, result.out
    line = next(x for x in result.err.splitlines() if "world.records.B" in x)
    assert "stock.yaml:" in line and "no tool of this task reads a collection 'B'" in line
    assert "indented one level too little" in line and "products" in line
    close = {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}, "product": {}}}
    result = invoke("validate", write_suite(tmp_path / "typo", [make_task(world=close)]))
    assert result.code == 2 and "did you mean 'products'?" in result.err


def test_a_collection_a_check_names_is_not_flagged(invoke: Invoke, tmp_path: Path) -> None:
    world = {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}, "audit": {}}}
    checks = [
        {"kind": "output", "number": 7},
        {"kind": "state", "records": {"audit.last": None}},
    ]
    suite = write_suite(tmp_path / "mini", [make_task(world=world, success=checks)])
    result = invoke("validate", "--no-solutions", suite)
    assert result.code == 0, result.err


def test_a_provided_suite_missing_a_module_names_it_and_the_install(
    invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof.spec import providers

    fake = providers.SuiteProvider(
        "toolproof_missing_dep:build_suite", "fakebench", "pip install fakebench tenacity"
    )
    monkeypatch.setitem(providers.PROVIDERS, "fakebench", fake)
    result = invoke("run", "fakebench:part", "-a", "oracle", "-o", tmp_path / "r")
    assert result.code == 2 and "Traceback" not in result.err, result.err
    assert "needs the module 'tenacity'" in result.err
    assert "pip install fakebench tenacity" in result.err


def test_list_says_when_a_provided_suite_misses_a_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolproof.cli import _listing
    from toolproof.spec import providers

    fake = providers.SuiteProvider("x:y", "pytest", "pip install pytest no-such-module-here")
    monkeypatch.setattr(providers, "PROVIDERS", {"fakebench": fake})
    monkeypatch.setitem(_listing._RUNTIME, "fakebench", ("json", "no_such_module_here"))
    lines: list[str] = []
    _listing._print_provided(lines.append)
    assert len(lines) == 1 and "installed, but missing no_such_module_here" in lines[0]
    assert "pip install pytest no-such-module-here" in lines[0]


def test_a_failed_cmd_agent_shows_its_exception_not_the_adapters_line(
    invoke: Invoke, tmp_path: Path
) -> None:
    script = tmp_path / "boom.py"
    script.write_text("def f():\n    raise ValueError('the real reason')\nf()\n")
    out = tmp_path / "r"
    agent = f"cmd:{sys.executable} {script}"
    result = invoke(
        "run", write_suite(tmp_path / "mini", [make_task()]), "-a", agent,
        "--sandbox", "process", "--run-commands-on-host", "-q", "-o", out,
    )  # fmt: skip
    assert result.code == 0, result.err
    shown = invoke("show", out, "--failures")
    assert "ValueError: the real reason" in shown.out, shown.out
    assert "cmd_agent.py" not in shown.out


def test_check_task_names_a_mis_indented_record_before_running(
    invoke: Invoke, tmp_path: Path
) -> None:
    world = {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}, "B": {"stock": 3}}}
    suite = write_suite(tmp_path / "mini", [make_task(world=world)])
    result = invoke("check-task", suite / "tasks" / "stock.yaml")
    assert result.code == 2 and "world.records.B" in result.err, result.err
    assert "indented one level too little" in result.err and "nothing was run" in result.err
