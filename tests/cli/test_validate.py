"""``toolproof validate``: hostile and wrong task files get ``file:line: field: message`` and
exit 2, never a traceback; and ``validate`` accepts exactly what ``run`` accepts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof_helpers import CliResult, make_task, write_suite, write_yaml

Invoke = Callable[..., CliResult]


def _said(result: CliResult, file: Path, field: str, fragment: str) -> str:
    """The ``FILE:LINE: FIELD: MESSAGE`` line about ``field`` (after exit 2, no traceback)."""
    assert result.code == 2, (result.out, result.err)
    assert "Traceback" not in result.err and "Traceback" not in result.out
    prefix = f"{file}:"
    for line in result.err.splitlines():
        line = line.removeprefix("error: ")  # run's handler prefixes the first line
        head, _, rest = line.partition(": ")
        number = head.removeprefix(prefix)
        if (
            head.startswith(prefix)
            and number.isdigit()
            and rest.startswith(f"{field}: " if field else "")
        ):
            assert fragment in rest, line
            return line
    raise AssertionError(f"no {file}:LINE: {field}: line in\n{result.err}")


def test_builtin_names_validate_as_run_takes_them(invoke: Invoke) -> None:
    for name in ("core", "lint", "security", "repo-doctor"):
        result = invoke("validate", name)
        assert result.code == 0, result.err
        assert "valid" in result.out and "task(s) checked" in result.out


def test_an_alias_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n"
            for i in range(9)
        ),
        encoding="utf-8",
    )
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from toolproof.cli import main\n"
        "try:\n"
        "    main(sys.argv[1:])\n"
        "finally:\n"
        # VmHWM: this program's own peak (ru_maxrss keeps the forking parent's, across exec)
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0]\n"
        "    peak = int(hwm.split()[1]) // 1024\n"
        "    print('peak', peak, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", code, "validate", str(bomb)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    result = CliResult(done.returncode, done.stdout, done.stderr)
    _said(result, bomb, "", "once its aliases (*name) are expanded")
    peak = int(done.stderr.rsplit("peak", 1)[1])
    assert peak < 400, f"validate peaked at {peak} MiB"


@pytest.mark.parametrize(
    ("text", "line", "field", "fragment"),
    [
        ("id: x\nseed: " + "7" * 5000 + "\n", 2, "seed", "5,000 digits"),
        ("id: x\nlimits:\n  total_timeout_s: .nan\n", 3, "limits.total_timeout_s", "finite"),
        ("id: x\nlimits:\n  max_steps: -3\n", 3, "limits.max_steps", "greater than"),
        ("id: x\n" + "a: " + "[" * 200 + "]" * 200 + "\n", 2, "", "levels deep"),
    ],
)
def test_hostile_documents_get_a_line_and_exit_2(
    invoke: Invoke, tmp_path: Path, text: str, line: int, field: str, fragment: str
) -> None:
    path = tmp_path / "x.yaml"
    path.write_text(text, encoding="utf-8")
    said = _said(invoke("validate", path), path, field, fragment)
    assert said.startswith(f"{path}:{line}: ")


def test_a_huge_file_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_text("description: " + "x" * (2 << 20), encoding="utf-8")
    result = invoke("validate", path)
    assert result.code == 2 and f"{path}: the file is" in result.err


@pytest.mark.parametrize(
    ("world", "field", "fragment"),
    [
        ({"fixtures": "/etc"}, "world.fixtures", "is absolute"),
        ({"fixtures": "../../../../../../etc"}, "world.fixtures", "outside the suite directory"),
        ({"files": {"/etc/passwd": "x"}}, "world.files./etc/passwd", "is absolute"),
        ({"files": {"../../escape.txt": "x"}}, "world.files.../../escape.txt", "'..' component"),
    ],
)
def test_paths_that_leave_the_suite_or_workspace_are_refused(
    invoke: Invoke, tmp_path: Path, world: dict[str, object], field: str, fragment: str
) -> None:
    root = write_suite(tmp_path / "suite", [make_task(world=world)])
    task = root / "tasks" / "stock.yaml"
    _said(invoke("validate", root), task, field, fragment)
    _said(invoke("validate", task), task, field, fragment)  # a single file: the same checks
    run = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "run", "-q")
    _said(run, task, field, fragment)  # and run refuses it before it starts
    assert not (tmp_path / "run").exists()


def test_a_symlinked_fixtures_dir_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", [make_task(world={"fixtures": "data"})])
    (root / "tasks" / "data").symlink_to("/etc")
    _said(invoke("validate", root), root / "tasks" / "stock.yaml", "world.fixtures", "outside")


def test_a_single_file_gets_the_tool_checks(invoke: Invoke, tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "stock.yaml", make_task(tools=["get_stock", "teleport"]))
    _said(invoke("validate", path), path, "tools[1]", "no tool 'teleport'")


def test_a_wrong_solution_argument_is_found_before_a_run(invoke: Invoke, tmp_path: Path) -> None:
    task = make_task(
        solution={"calls": [{"tool": "get_stock", "args": {"product": "A"}}], "answer": "7"}
    )
    root = write_suite(tmp_path / "suite", [task])
    file = root / "tasks" / "stock.yaml"
    line = _said(invoke("validate", root), file, "solution.calls[0].args", "get_stock would refuse")
    assert "product_id" in line and "'product'" in line
    _said(invoke("validate", file), file, "solution.calls[0].args", "get_stock would refuse")
    run = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "run", "-q")
    _said(run, file, "solution.calls[0].args", "get_stock would refuse")


def test_a_templated_solution_argument_is_checked_as_rendered(
    invoke: Invoke, tmp_path: Path
) -> None:
    task = make_task(
        params={"qty": {"choice": [1, 2]}},
        tools=["get_stock", "adjust_stock"],
        solution={
            "calls": [{"tool": "adjust_stock", "args": {"product_id": "A", "delta": "x{{ qty }}"}}],
            "answer": "7",
        },
    )
    path = write_yaml(tmp_path / "stock.yaml", task)
    result = invoke("validate", path)
    _said(result, path, "solution.calls[0].args", "adjust_stock would refuse")


def test_an_unimportable_custom_check_is_a_task_error(invoke: Invoke, tmp_path: Path) -> None:
    checks = [
        {"kind": "output", "number": 7},
        {"kind": "custom", "function": "toolproof_no_such_module:check"},
        {"kind": "custom", "function": "toolproof_test_checks:no_such_function"},
        {"kind": "custom", "function": "not_registered_anywhere"},
    ]
    root = write_suite(tmp_path / "suite", [make_task(success=checks)])
    file = root / "tasks" / "stock.yaml"
    result = invoke("validate", root)
    _said(result, file, "success[1].function", "cannot import 'toolproof_no_such_module'")
    _said(result, file, "success[2].function", "has no attribute 'no_such_function'")
    _said(result, file, "success[3].function", "no check function 'not_registered_anywhere'")


def test_a_custom_check_module_in_the_suite_directory_is_found(
    invoke: Invoke, tmp_path: Path
) -> None:
    checks = [
        {"kind": "output", "number": 7},  # validate runs the solution: it must pass
        {"kind": "custom", "function": "suite_local_checks_p4:always"},
    ]
    root = write_suite(tmp_path / "suite", [make_task(success=checks)])
    (root / "suite_local_checks_p4.py").write_text(
        "def always(ctx):\n    return True\n", encoding="utf-8"
    )
    result = invoke("validate", root)
    assert result.code == 0, result.err
    assert str(root) not in sys.path  # the suite directory was on the path only while checked


def test_a_folder_without_suite_yaml_says_what_is_missing(invoke: Invoke, tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    write_yaml(loose / "stock.yaml", make_task())
    result = invoke("validate", loose)
    assert result.code == 2 and "Traceback" not in result.err
    assert f"{loose / 'suite.yaml'}: no suite.yaml" in result.err
    assert "name, version and canary" in result.err and f"{loose}/*.yaml" in result.err
    run = invoke("run", loose, "--agent", "oracle", "-o", tmp_path / "run", "-q")
    assert run.code == 2 and f"{loose / 'suite.yaml'}: no suite.yaml" in run.err


def test_an_unknown_name_is_refused_like_run_refuses_it(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("validate", "nosuch")
    assert result.code == 2 and "no suite 'nosuch'" in result.err and "core" in result.err


def test_a_custom_check_module_that_raises_or_exits_is_a_task_error(
    invoke: Invoke, tmp_path: Path
) -> None:
    checks = [
        {"kind": "custom", "function": "p4_raises_on_import:check"},
        {"kind": "custom", "function": "p4_exits_on_import:check"},
    ]
    root = write_suite(tmp_path / "suite", [make_task(success=checks)])
    (root / "p4_raises_on_import.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    (root / "p4_exits_on_import.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    result = invoke("validate", root)
    file = root / "tasks" / "stock.yaml"
    _said(result, file, "success[0].function", "RuntimeError: boom")
    _said(result, file, "success[1].function", "raised SystemExit")
