"""Hostile task files are refused as data: bounded reading, bounded numbers, safe paths.

Every refusal is a :class:`Problem` naming the file, the line and the field, never an
exception of another kind; the billion-laughs file is refused in bounded memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolproof.spec import Problem, SpecError, load_suite, load_task, validate_paths
from toolproof.spec._yamlsrc import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES, load_document
from toolproof_helpers import make_task, write_suite, write_yaml

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9)
)
"""The billion-laughs document: ten levels of nine aliases, 9**10 strings once expanded."""


def _refused(path: Path) -> Problem:
    """The one problem ``load_document`` reports for ``path``."""
    with pytest.raises(SpecError) as caught:
        load_document(path)
    (problem,) = caught.value.problems
    assert problem.file == path
    return problem


def test_a_billion_laughs_file_is_refused_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    problem = _refused(path)
    assert problem.line is not None and 2 <= problem.line <= 10
    assert f"more than {MAX_NODES:,} values" in problem.message and "aliases" in problem.message


def test_a_billion_laughs_file_stays_in_bounded_memory(tmp_path: Path) -> None:
    """In a child process capped at 1 GiB of address space, and its peak RSS measured."""
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB, encoding="utf-8")
    code = textwrap.dedent(
        f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from toolproof.spec import validate_paths
        from pathlib import Path
        problems = validate_paths([Path({str(path)!r})])
        # VmHWM: this program's own peak (ru_maxrss keeps the forking parent's, across exec)
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
        peak_mb = int(hwm.split()[1]) / 1024
        print(len(problems), int(peak_mb))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    count, peak_mb = map(int, done.stdout.split())
    assert count == 1
    assert peak_mb < 300, f"peak RSS {peak_mb} MiB"


def test_an_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("id: x\nlist: &a [1, *a]\n", encoding="utf-8")
    problem = _refused(path)
    assert problem.line == 2 and "refers to a node containing it" in problem.message


def test_modest_aliases_still_work(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("base: &b {stock: 7}\ncopy: *b\n", encoding="utf-8")
    data, _ = load_document(path)
    assert data == {"base": {"stock": 7}, "copy": {"stock": 7}}


def test_an_oversized_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("description: ")
        handle.write("x" * (MAX_FILE_BYTES + 1))
    problem = _refused(path)
    assert f"more than the {MAX_FILE_BYTES:,}" in problem.message and "fixtures" in problem.message


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 50_000])  # 50,000: past any recursive parser
def test_deep_nesting_is_refused_with_its_line(tmp_path: Path, suffix: str, depth: int) -> None:
    path = tmp_path / f"deep{suffix}"
    path.write_text('{"id": "deep",\n "x": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    problem = _refused(path)
    assert problem.line == 2
    assert f"more than {MAX_DEPTH} levels" in problem.message or "depth" in problem.message


def test_a_non_utf8_file_is_refused_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "latin.yaml"
    path.write_bytes(b"id: x\ndescription: caf\xe9\n")
    problem = _refused(path)
    assert problem.line == 2 and "not UTF-8" in problem.message


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    assert "not a regular file" in _refused(path).message


@pytest.mark.parametrize(
    ("suffix", "text", "line", "field", "fragment"),
    [
        (".yaml", "id: x\nseed: " + "9" * 5000 + "\n", 2, "seed", "has 5,000 digits"),
        (".yaml", "id: x\nw:\n  n: 10000000000000000000\n", 3, "w.n", "beyond ±"),
        (".yaml", "id: x\nw:\n  - .nan\n", 3, "w[0]", "not a finite number"),
        (".yaml", "id: x\nw: -.inf\n", 2, "w", "not a finite number"),
        (".yaml", "id: x\n" + "9" * 100 + ": key\n", 2, "", "digits"),
        (".json", '{"id": "x",\n "seed": ' + "9" * 5000 + "}", 2, "", "5,000 digits"),
        (".json", '{"id": "x",\n "w": NaN}', 2, "", "NaN is not a finite number"),
        (".json", '{"id": "x",\n "w": -Infinity}', 2, "", "not a finite number"),
        (".json", '{"id": "x",\n "w": 1e999}', 2, "", "not a finite number"),
    ],
)
def test_numbers_are_bounded(
    tmp_path: Path, suffix: str, text: str, line: int, field: str, fragment: str
) -> None:
    path = tmp_path / f"numbers{suffix}"
    path.write_text(text, encoding="utf-8")
    problem = _refused(path)
    assert (problem.line, fragment in problem.message) == (line, True), problem
    if field:
        assert problem.field == field


def _task_problems(path: Path, **fields: Any) -> list[Problem]:
    write_yaml(path, make_task(**fields))
    with pytest.raises(SpecError) as caught:
        load_task(path)
    return caught.value.problems


def test_a_template_cannot_compute_an_unbounded_number(tmp_path: Path) -> None:
    path = tmp_path / "stock.yaml"
    (problem,) = _task_problems(
        path,
        params={"n": {"value": 3}},
        success=[{"kind": "output", "number": "{{ 10 ** 300 }}"}],
    )
    assert problem.field == "success[0].number" and "beyond ±" in problem.message
    inf = _task_problems(path, success=[{"kind": "output", "number": "{{ float('inf') }}"}])
    assert "not a finite number" in inf[0].message


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"max_steps": -1}, "limits.max_steps"),
        ({"total_timeout_s": 1e300}, "limits.total_timeout_s"),
        ({"tool_timeout_s": "inf"}, "limits.tool_timeout_s"),
        ({"loop_threshold": 0}, "limits.loop_threshold"),
    ],
)
def test_limits_are_bounded(tmp_path: Path, limits: dict[str, Any], field: str) -> None:
    (problem,) = _task_problems(tmp_path / "stock.yaml", limits=limits)
    assert problem.field == field and problem.line is not None


def test_sandbox_sizes_and_fault_counts_are_bounded(tmp_path: Path) -> None:
    problems = _task_problems(
        tmp_path / "stock.yaml",
        sandbox={"memory_mb": 2**40, "wall_s": -5},
        faults=[{"tool": "get_stock", "calls": [0]}],
    )
    assert {p.field for p in problems} == {
        "sandbox.memory_mb",
        "sandbox.wall_s",
        "faults[0].calls[0]",
    }


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("/etc/cron.d/evil", "is absolute"),
        ("../outside.txt", "'..' component"),
        ("notes/../../x", "'..' component"),
        ("a//b", "empty or '.' component"),
        ("./a", "empty or '.' component"),
        ("dir/", "empty or '.' component"),
        ("a\0b", "NUL byte"),
        ("", "is empty"),
        ("x" * 300, "longer than 255 bytes"),
        ("d/" * 600 + "f", "longer than 1024 bytes"),
    ],
)
def test_world_files_keys_are_relative_workspace_paths(
    tmp_path: Path, key: str, fragment: str
) -> None:
    path = tmp_path / "stock.yaml"
    (problem,) = _task_problems(path, world={"files": {key: "x"}})
    lines = path.read_text(encoding="utf-8").splitlines()
    assert problem.file == path and problem.line == lines.index("  files:") + 2
    shown = key if key.isprintable() else repr(key)[1:-1]
    shown = shown if len(shown) <= 80 else shown[:77] + "..."  # a field name stays readable
    assert problem.field == f"world.files.{shown}" and fragment in problem.message


def test_check_file_paths_stay_in_the_workspace(tmp_path: Path) -> None:
    path = tmp_path / "stock.yaml"
    good = {"kind": "state", "files": {"/workspace/a.txt": "x", "b/c.txt": "y"}}
    write_yaml(path, make_task(success=[good]))
    load_task(path)
    (problem,) = _task_problems(
        path, success=[{"kind": "state", "files": {"/etc/shadow": {"exists": True}}}]
    )
    assert problem.field == "success[0].files./etc/shadow" and "is absolute" in problem.message


def _suite_with_fixtures(root: Path, fixtures: str) -> Path:
    write_suite(root, [make_task(world={"fixtures": fixtures})])
    return root / "tasks" / "stock.yaml"


@pytest.mark.parametrize(
    ("fixtures", "fragment"),
    [
        ("/etc", "is absolute"),
        ("../../../../../../../../etc", "outside the suite directory"),
        ("../..", "outside the suite directory"),
        ("missing", "is not a directory"),
    ],
)
def test_fixtures_come_only_from_inside_the_suite(
    tmp_path: Path, fixtures: str, fragment: str
) -> None:
    task = _suite_with_fixtures(tmp_path / "suite", fixtures)
    with pytest.raises(SpecError) as caught:
        load_suite(tmp_path / "suite")
    (problem,) = caught.value.problems
    assert (problem.file, problem.field) == (task, "world.fixtures")
    assert problem.line is not None and fragment in problem.message


def test_fixtures_inside_the_suite_load(tmp_path: Path) -> None:
    _suite_with_fixtures(tmp_path / "suite", "../projects/demo")
    demo = tmp_path / "suite" / "projects" / "demo"
    (demo / "src").mkdir(parents=True)
    (demo / "src" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (demo / "link.py").symlink_to("src/a.py")  # a relative link that stays inside
    assert load_suite(tmp_path / "suite").tasks[0].world.fixtures == "../projects/demo"


def test_a_symlinked_fixtures_dir_that_leads_out_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "host-secrets"
    outside.mkdir()
    (outside / "shadow").write_text("root:x", encoding="utf-8")
    _suite_with_fixtures(tmp_path / "suite", "data")
    (tmp_path / "suite" / "tasks" / "data").symlink_to(outside)
    (problem,) = validate_paths([tmp_path / "suite"])
    assert problem.field == "world.fixtures" and "outside the suite directory" in problem.message


@pytest.mark.parametrize("target", ["/etc/shadow", "../../../host-secrets/shadow"])
def test_a_link_inside_fixtures_that_leads_out_is_refused(tmp_path: Path, target: str) -> None:
    _suite_with_fixtures(tmp_path / "suite", "data")
    data = tmp_path / "suite" / "tasks" / "data"
    data.mkdir()
    (data / "shadow").symlink_to(target)
    (problem,) = validate_paths([tmp_path / "suite"])
    assert problem.field == "world.fixtures" and "leads out of the fixtures" in problem.message


def test_a_special_file_in_fixtures_is_refused(tmp_path: Path) -> None:
    _suite_with_fixtures(tmp_path / "suite", "data")
    data = tmp_path / "suite" / "tasks" / "data"
    data.mkdir()
    os.mkfifo(data / "pipe")
    (problem,) = validate_paths([tmp_path / "suite"])
    assert "pipe is not a regular file or directory" in problem.message


def test_sandbox_paths_are_checked(tmp_path: Path) -> None:
    write_suite(
        tmp_path / "suite",
        [
            make_task(
                sandbox={
                    "toolenv": "/etc/passwd",
                    "ro_binds": {"/etc": "/mnt/etc", "/opt/tools": "/workspace/tools"},
                }
            )
        ],
    )
    problems = validate_paths([tmp_path / "suite"])
    fields = {p.field: p.message for p in problems}
    assert "is absolute" in fields["sandbox.toolenv"]
    assert "may not be bound" in fields["sandbox.ro_binds./etc"]
    assert "may not be bound" in fields["sandbox.ro_binds./opt/tools"]  # hides the workspace
    assert all(p.line is not None for p in problems)


def test_a_suite_tasks_folder_outside_the_suite_is_refused(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", [make_task()])
    write_yaml(
        root / "suite.yaml", {**yaml.safe_load((root / "suite.yaml").read_text()), "tasks": "../.."}
    )
    (problem,) = validate_paths([root])
    assert (problem.file, problem.field) == (root / "suite.yaml", "tasks")
    assert "outside the suite directory" in problem.message


def test_builtin_suites_pass_the_hardened_checks() -> None:
    for name in ("core", "lint", "security", "repo-doctor"):
        assert validate_paths([Path(name)]) == [], name


def test_every_yaml_task_of_the_suites_round_trips_within_bounds(tmp_path: Path) -> None:
    """The bounds leave room: a built-in task ten times over is still accepted."""
    from toolproof.spec import builtin_suites_dir

    biggest = max((builtin_suites_dir() / "core" / "tasks").rglob("*.yaml"), key=os.path.getsize)
    data = yaml.safe_load(biggest.read_text(encoding="utf-8"))
    path = tmp_path / "many.yaml"
    path.write_text(yaml.safe_dump({f"copy{i}": data for i in range(10)}), encoding="utf-8")
    load_document(path)


def test_the_suite_yaml_example_of_the_docs_is_valid(tmp_path: Path) -> None:
    docs = Path(__file__).parents[2] / "docs" / "writing-tasks.md"
    text = docs.read_text(encoding="utf-8")
    block = text.split("# my-suite/suite.yaml\n", 1)[1].split("```", 1)[0]
    root = write_suite(tmp_path / "my-suite", [make_task()])
    (root / "suite.yaml").write_text(block, encoding="utf-8")
    suite = load_suite(root)
    assert suite.name == "my-suite" and suite.config.limits.max_steps == 30
    assert suite.config.policy is not None and suite.config.policy.forbid[0].regex


def test_placeholders_cannot_compute_an_unbounded_task(tmp_path: Path) -> None:
    """Each placeholder is small; together they would be gigabytes."""
    path = tmp_path / "stock.yaml"
    problems = _task_problems(
        path,
        params={"n": {"value": 1}},
        tags=["{{ 'x' * 9999 }}"] * 200,
    )
    assert any("more than 1,000,000 characters in all" in p.message for p in problems)


def test_a_task_file_linked_from_outside_the_suite_is_refused(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", [make_task()])
    outside = write_yaml(tmp_path / "elsewhere" / "other.yaml", make_task(id="other"))
    (root / "tasks" / "other.yaml").symlink_to(outside)
    (problem,) = validate_paths([root])
    assert problem.file == root / "tasks" / "other.yaml" and "outside the suite" in problem.message


def test_the_suite_digest_never_reads_through_a_link(tmp_path: Path) -> None:
    from toolproof.spec import suite_digest

    root = write_suite(tmp_path / "suite", [make_task()])
    before = suite_digest(root)
    (root / "kernel").symlink_to("/proc/kcore")  # would be read as a huge file
    (root / "zero").symlink_to("/dev/zero")
    after = suite_digest(root)
    assert after != before  # the links count, by where they point
    (root / "kernel").unlink()
    (root / "kernel").symlink_to("/proc/self/environ")
    assert suite_digest(root) != after


def test_json_task_files_get_lines_too(tmp_path: Path) -> None:
    path = tmp_path / "stock.json"
    task = make_task(world={"files": {"../x": "y"}})

    path.write_text(json.dumps(task, indent=2), encoding="utf-8")
    (problem,) = validate_paths([path])
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if '"../x"' in text)
    assert (problem.line, problem.field) == (line, "world.files.../x")


def test_a_task_loaded_twice_is_equal(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "stock.yaml", make_task())
    assert load_task(path) == load_task(path)
    assert load_task(path).source is not None


def test_a_check_regex_that_does_not_compile_is_a_file_line_problem(tmp_path: Path) -> None:
    path = tmp_path / "stock.yaml"
    (problem,) = _task_problems(path, success=[{"kind": "output", "regex": "(unclosed"}])
    assert problem.field == "success[0].regex" and problem.line is not None
    assert "regex '(unclosed' does not compile" in problem.message
