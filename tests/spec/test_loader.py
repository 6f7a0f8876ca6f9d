"""Loading task files and suites: valid input loads, every mistake is a ``file:line`` problem."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.spec import (
    OutputCheck,
    Problem,
    SpecError,
    StateCheck,
    builtin_suite_names,
    load_suite,
    load_task,
    resolve_suite_path,
    suite_digest,
    validate_paths,
)
from toolproof_helpers import FIXTURES, make_task, write_suite, write_yaml

BROKEN = sorted((FIXTURES / "broken").glob("*.yaml"))
_EXPECT = re.compile(r"^# expect: (\d+): ([^:]*): (.+)$")


def _expectations(path: Path) -> list[tuple[int, str, str]]:
    """The ``# expect: LINE: FIELD: TEXT`` comments at the top of a broken fixture."""
    found = []
    for line in path.read_text().splitlines():
        match = _EXPECT.match(line)
        if match:
            found.append((int(match.group(1)), match.group(2), match.group(3)))
    return found


def _problems(path: Path) -> list[Problem]:
    with pytest.raises(SpecError) as info:
        load_task(path)
    return info.value.problems


def test_a_valid_task_loads_rendered_for_epoch_0(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "stock.yaml", make_task())
    task = load_task(path)
    assert task.id == "stock"
    assert task.tools == ["get_stock", "adjust_stock"]
    assert isinstance(task.success[0], OutputCheck)
    assert task.success[0].number == 7
    assert task.world.records["products"]["A"]["stock"] == 7
    assert task.solution.calls[0].tool == "get_stock"  # type: ignore[union-attr]


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_every_broken_fixture_names_file_line_field(path: Path) -> None:
    expected = _expectations(path)
    assert expected, f"{path.name} declares no '# expect:' lines"
    problems = _problems(path)
    for line, field, text in expected:
        matches = [p for p in problems if p.line == line and p.field == field and text in p.message]
        assert matches, f"no problem {line}: {field}: {text!r} in {[str(p) for p in problems]}"
        prefix = f"{path}:{line}: {field}: " if field else f"{path}:{line}: "
        assert str(matches[0]).startswith(prefix)


def test_problems_render_without_a_traceback_style_repr() -> None:
    problem = Problem(Path("tasks/calc.yaml"), 14, "success[0].equals", "must be a string")
    assert str(problem) == "tasks/calc.yaml:14: success[0].equals: must be a string"
    assert str(Problem(None, None, "agent", "unknown agent 'x'")) == "agent: unknown agent 'x'"
    error = SpecError([problem, Problem(Path("a.yaml"), None, "", "cannot read file")])
    assert str(error).splitlines() == [str(problem), "a.yaml: cannot read file"]


def test_invalid_json_names_the_line() -> None:
    (problem,) = _problems(FIXTURES / "broken" / "broken-json.json")
    assert problem.line == 6
    assert "invalid JSON" in problem.message


def test_a_missing_file_is_a_problem_not_an_oserror(tmp_path: Path) -> None:
    (problem,) = _problems(tmp_path / "nope.yaml")
    assert problem.file == tmp_path / "nope.yaml"
    assert "cannot read file" in problem.message


def test_unknown_and_mistyped_fields_in_nested_models(tmp_path: Path) -> None:
    task = make_task(
        limits={"max_step": 3},
        faults=[{"tool": "get_stock", "error": "explode"}],
    )
    path = write_yaml(tmp_path / "stock.yaml", task)
    problems = {p.field: p for p in _problems(path)}
    assert "is not a known field" in problems["limits.max_step"].message
    assert "explode" in problems["faults[0].error"].message
    text = path.read_text().splitlines()
    assert "max_step" in text[problems["limits.max_step"].line - 1]  # type: ignore[operator]


def test_templates_in_typed_fields_render_to_their_types() -> None:
    task = load_task(FIXTURES / "tasks" / "templated.yaml")
    assert task.limits.max_steps == 6  # "{{ steps }}" with steps = 4 + 2
    assert task.difficulty in (1, 2)
    output, state = task.success
    assert isinstance(output, OutputCheck) and isinstance(state, StateCheck)
    assert isinstance(output.number, float)
    assert output.tolerance == 0.5
    (path,) = state.records
    assert re.fullmatch(r"products\.[AB]\.stock", path)
    assert state.records[path] == output.number
    # The template is kept as written, for rendering other epochs.
    assert task.template["limits"] == {"max_steps": "{{ steps }}"}


def test_json_task_files_load_like_yaml() -> None:
    task = load_task(FIXTURES / "tasks" / "json-task.json")
    assert task.id == "json-task"
    assert task.template["params"] == {"pid": {"choice": ["A", "B"]}}
    answer = task.solution.answer
    assert answer in ("3 units", "4 units")


def test_json_task_problems_name_the_file_and_field(tmp_path: Path) -> None:
    path = tmp_path / "stock.json"
    path.write_text(json.dumps(make_task(difficulty=9)))
    (problem,) = _problems(path)
    assert problem.file == path
    assert problem.field == "difficulty"
    assert "less than or equal to 3" in problem.message


def test_a_toolkit_wildcard_allows_any_solution_tool(tmp_path: Path) -> None:
    task = make_task(tools=["inventory.*"])
    task["solution"]["calls"].append({"tool": "set_price", "args": {"product_id": "A", "price": 1}})
    assert load_task(write_yaml(tmp_path / "stock.yaml", task)).id == "stock"


def test_inline_tools_count_as_task_tools(tmp_path: Path) -> None:
    inline = {"name": "lookup", "description": "Look it up.", "responses": [{"result": 7}]}
    task = make_task(tools=[inline])
    task["solution"]["calls"] = [{"tool": "lookup"}]
    assert load_task(write_yaml(tmp_path / "stock.yaml", task)).tools[0].name == "lookup"  # type: ignore[union-attr]


def test_duplicate_check_names_are_refused(tmp_path: Path) -> None:
    checks = [
        {"kind": "output", "name": "n", "number": 7},
        {"kind": "output", "name": "n", "contains": ["7"]},
    ]
    (problem,) = _problems(write_yaml(tmp_path / "stock.yaml", make_task(success=checks)))
    assert problem.field == "success"
    assert "two checks named 'n'" in problem.message


def test_a_template_that_breaks_only_for_some_draws_is_caught(tmp_path: Path) -> None:
    # pid "B" has no stock to divide by: rendering fails for the epochs that draw it.
    task = make_task(
        params={"pid": {"choice": ["A", "B"]}, "stock": {"expr": "7 if pid == 'A' else 0"}},
        success=[{"kind": "output", "number": "{{ 14 / stock }}"}],
    )
    (problem,) = _problems(write_yaml(tmp_path / "stock.yaml", task))
    assert problem.field == "success[0].number"
    assert "division by zero" in problem.message


def test_load_suite_loads_every_task_with_the_suite_seed(suite_dir: Callable[..., Path]) -> None:
    root = suite_dir([make_task(), make_task(id="other")], seed=5)
    suite = load_suite(root)
    assert suite.name == "mini"
    assert [t.id for t in suite.tasks] == ["other", "stock"]
    assert suite.config.seed == 5
    assert suite.task_file("stock") == root / "tasks" / "stock.yaml"
    assert suite.digest == suite_digest(root)
    with pytest.raises(KeyError, match="no task 'nope'"):
        suite.task("nope")


def test_load_suite_reports_all_broken_files_at_once(suite_dir: Callable[..., Path]) -> None:
    root = suite_dir([make_task(difficulty=0), make_task(id="other", colour="red")])
    with pytest.raises(SpecError) as info:
        load_suite(root)
    files = sorted(p.file.name for p in info.value.problems if p.file is not None)
    assert files == ["other.yaml", "stock.yaml"]


def test_duplicate_ids_in_a_suite_are_refused(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", [])
    write_yaml(root / "tasks" / "a" / "stock.yaml", make_task())
    write_yaml(root / "tasks" / "b" / "stock.yaml", make_task())
    with pytest.raises(SpecError) as info:
        load_suite(root)
    (problem,) = info.value.problems
    assert problem.file == root / "tasks" / "b" / "stock.yaml"
    assert problem.field == "id"
    assert (
        "duplicate of" in problem.message
        and str(root / "tasks" / "a" / "stock.yaml") in problem.message
    )


def test_a_bad_suite_yaml_names_its_field(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", [make_task()], name="Bad Name", limits={"max_steps": 0})
    with pytest.raises(SpecError) as info:
        load_suite(root)
    fields = {p.field for p in info.value.problems}
    assert fields == {"name", "limits.max_steps"}
    assert all(p.file == root / "suite.yaml" and p.line for p in info.value.problems)


def test_suite_digest_changes_with_any_file(suite_dir: Callable[..., Path]) -> None:
    root = suite_dir([make_task()])
    before = suite_digest(root)
    (root / "tasks" / "stock.yaml").write_text(
        (root / "tasks" / "stock.yaml").read_text() + "\n# edit\n"
    )
    assert suite_digest(root) != before


def test_resolve_suite_path_accepts_names_dirs_and_suite_yaml(
    suite_dir: Callable[..., Path],
) -> None:
    root = suite_dir([make_task()])
    assert resolve_suite_path(root) == root
    assert resolve_suite_path(root / "suite.yaml") == root
    assert "core" in builtin_suite_names()
    assert (resolve_suite_path("core") / "suite.yaml").is_file()
    with pytest.raises(SpecError, match=r"no suite 'nope'.*core"):
        resolve_suite_path("nope")


def test_validate_paths_covers_suites_names_and_task_files(tmp_path: Path) -> None:
    good = write_suite(tmp_path / "good", [make_task()])
    assert validate_paths([good, good / "suite.yaml", good / "tasks" / "stock.yaml"]) == []
    assert validate_paths([Path("core")]) == []  # a built-in name, as `run core` takes it
    loose = tmp_path / "loose"
    write_yaml(loose / "stock.yaml", make_task())
    write_yaml(loose / "broken.yaml", make_task(id="broken", type="magic"))
    problems = validate_paths(sorted(loose.iterdir()))
    assert [(p.file, p.field) for p in problems] == [(loose / "broken.yaml", "type")]
    assert validate_paths(sorted((FIXTURES / "tasks").glob("*.yaml"))) == []


def test_a_folder_without_suite_yaml_says_what_is_missing(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    write_yaml(loose / "stock.yaml", make_task())
    (problem,) = validate_paths([loose])
    assert problem.file == loose / "suite.yaml"
    assert "no suite.yaml" in problem.message and "name, version and canary" in problem.message
    assert f"toolproof validate {loose}/*.yaml" in problem.message
    with pytest.raises(SpecError, match=r"no suite\.yaml"):
        load_suite(loose)  # `run` says the same


def test_validate_paths_reports_every_broken_fixture() -> None:
    problems = validate_paths(sorted((FIXTURES / "broken").iterdir()))
    files = {p.file.name for p in problems if p.file is not None}
    assert files == {p.name for p in (FIXTURES / "broken").iterdir()}


def test_every_builtin_suite_loads() -> None:
    for name in builtin_suite_names():
        suite = load_suite(name)
        assert suite.tasks, name
        for task in suite.tasks:
            assert task.solution.answer or task.solution.calls, task.id
