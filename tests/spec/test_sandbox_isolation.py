"""Invariant 9: isolation is the run's decision. A task or suite may ask for a stronger
sandbox, never a weaker one; running commands unisolated needs --run-commands-on-host.

Hostile task and suite files try every field that could weaken the sandbox; each is
refused (with file, line, field and fix) or comes out as the stronger value.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.engine.preflight import check_target
from toolproof.spec import SpecError, load_suite, validate_paths
from toolproof.spec.sandbox import (
    RUN_CEILINGS,
    SANDBOX_DEFAULTS,
    UNISOLATED_BACKENDS,
    SandboxSpec,
    effective_sandbox,
)
from toolproof_helpers import make_task, write_suite, write_yaml

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "0")) or 60

SHELL = {
    "tools": ["get_stock", "run_command"],
    "world": {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}}, "files": {"a": "a"}},
}
"""What a task needs for its sandbox to matter: a workspace and the command tool."""


def _problems(root: Path) -> dict[str, str]:
    """Every problem of the suite at ``root``, by field (``validate``'s view)."""
    _, problems = check_target(root)
    return {p.field or "": p.message for p in problems}


@pytest.mark.parametrize(
    "field",
    ["network", "seccomp", "user", "uid", "privileged", "capabilities", "cap_add",
     "writable", "rw_binds", "binds", "mounts", "devices", "no_new_privs", "isolated",
     "unshare", "share_net", "hostname"],
)  # fmt: skip
def test_fields_the_backend_owns_are_not_in_the_format(tmp_path: Path, field: str) -> None:
    """Network, seccomp, user, capabilities, writable paths: never a task's to set."""
    root = write_suite(tmp_path / "s", [make_task(**SHELL, sandbox={field: True})])
    with pytest.raises(SpecError) as refused:
        load_suite(root)
    (problem,) = refused.value.problems
    assert problem.field == f"sandbox.{field}" and "is not a known field" in problem.message
    assert problem.file is not None and problem.line is not None


@pytest.mark.parametrize("name", sorted(RUN_CEILINGS))
@pytest.mark.parametrize("where", ["task", "suite"])
def test_a_limit_may_not_be_switched_off(tmp_path: Path, name: str, where: str) -> None:
    task = make_task(**SHELL, **({"sandbox": {name: 0}} if where == "task" else {}))
    suite = {"sandbox": {name: 0}} if where == "suite" else {}
    root = write_suite(tmp_path / "s", [task], **suite)
    with pytest.raises(SpecError) as refused:
        load_suite(root)
    (problem,) = refused.value.problems
    assert problem.field == f"sandbox.{name}" and problem.line is not None
    assert "0 would switch this limit off" in problem.message
    assert f"up to {RUN_CEILINGS[name]:g}" in problem.message  # the fix


@pytest.mark.parametrize("name", sorted(RUN_CEILINGS))
def test_a_limit_may_not_pass_the_runs_ceiling(tmp_path: Path, name: str) -> None:
    over = RUN_CEILINGS[name] * 2
    root = write_suite(tmp_path / "s", [make_task(**SHELL, sandbox={name: over})])
    with pytest.raises(SpecError) as refused:
        load_suite(root)
    (problem,) = refused.value.problems
    assert problem.field == f"sandbox.{name}"
    assert "above the run's ceiling" in problem.message
    assert f"at most {RUN_CEILINGS[name]:g}" in problem.message


def test_a_task_cannot_loosen_its_suites_limits(tmp_path: Path) -> None:
    """The stronger of the two: a task asking for more than its suite gets the suite's."""
    task = make_task(**SHELL, sandbox={"wall_s": 600, "memory_mb": 256, "pids": 4000})
    root = write_suite(
        tmp_path / "s", [task], sandbox={"wall_s": 60, "memory_mb": 2048, "pids": 64}
    )
    suite = load_suite(root)
    settings_ = effective_sandbox(None, suite.config.sandbox, suite.tasks[0].sandbox)
    assert (settings_.wall_s, settings_.memory_mb, settings_.pids) == (60, 256, 64)


def test_process_in_a_task_is_refused_by_validate(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "s", [make_task(**SHELL, sandbox={"backend": "process"})])
    _, problems = check_target(root)
    (problem,) = problems
    assert problem.file == root / "tasks" / "stock.yaml" and problem.line is not None
    assert problem.field == "sandbox.backend"
    assert "without isolation" in problem.message and "--run-commands-on-host" in problem.message
    assert "bwrap" in problem.message  # the isolated fix
    assert check_target(root, commands_on_host=True)[1] == []  # the person said so


def test_process_in_a_suite_is_refused_by_validate(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "s", [make_task(**SHELL)], sandbox={"backend": "process"})
    fields = _problems(root)
    assert "--run-commands-on-host" in fields["sandbox.backend"]
    _, problems = check_target(root)
    assert problems[0].file == root / "suite.yaml"
    assert check_target(root, commands_on_host=True)[1] == []


def test_a_task_file_alone_is_checked_too(tmp_path: Path) -> None:
    path = write_yaml(tmp_path / "stock.yaml", make_task(**SHELL, sandbox={"backend": "process"}))
    (problem,) = check_target(path)[1]
    assert problem.file == path and problem.field == "sandbox.backend"


def test_an_unvalidated_process_task_still_runs_isolated() -> None:
    """Built in code, past validate: the stronger value, the host's isolated default."""
    task = SandboxSpec(backend="process", wall_s=5)
    assert effective_sandbox(None, None, task).backend is None
    assert effective_sandbox("bwrap", SandboxSpec(backend="process"), task).backend == "bwrap"
    assert effective_sandbox(None, None, task, commands_on_host=True).backend == "process"
    assert effective_sandbox("process", None, None).backend == "process"  # the run's own
    assert effective_sandbox("process", None, SandboxSpec(backend="bwrap")).backend == "bwrap"


def test_limits_made_in_code_are_held_to_the_ceiling() -> None:
    """``model_construct`` skips validation; the one function still holds the ceilings."""
    loose = SandboxSpec.model_construct(wall_s=0, memory_mb=10**9, pids=None)
    held = effective_sandbox(None, None, loose)
    assert held.wall_s == RUN_CEILINGS["wall_s"] and held.memory_mb == RUN_CEILINGS["memory_mb"]
    assert held.limit("pids") == SANDBOX_DEFAULTS["pids"]


@pytest.fixture
def tmp_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let binds under /tmp pass, where pytest's tmp_path is: a task may not bind /tmp
    (tests/spec/test_bind_paths.py holds that); these tests judge the answer-key rules."""
    from toolproof.spec import paths

    allowed = tuple(p for p in paths.FORBIDDEN_HOST_PATHS if p != "/tmp")
    monkeypatch.setattr(paths, "FORBIDDEN_HOST_PATHS", allowed)


def _git_clone_of_toolproof(root: Path) -> Path:
    """A git repository laid out like a clone of toolproof (src/toolproof/suites/...)."""
    (root / "src" / "toolproof" / "suites" / "core").mkdir(parents=True)
    (root / "src" / "toolproof" / "suites" / "core" / "suite.yaml").write_text("name: core\n")
    (root / "scripts").mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


@pytest.mark.parametrize(
    "bound",
    ["suite-root", "inside-the-suite", "a-clone", "in-a-clones-suites", "holds-a-clone", "package"],
)
@pytest.mark.usefixtures("tmp_binds")
def test_ro_binds_that_show_answer_keys_are_refused(tmp_path: Path, bound: str) -> None:
    import toolproof

    clone = _git_clone_of_toolproof(tmp_path / "outer" / "clone")
    root = tmp_path / "s"
    host = {
        "suite-root": root,
        "inside-the-suite": root / "tasks",
        "a-clone": clone,
        "in-a-clones-suites": clone / "src" / "toolproof" / "suites" / "core",
        "holds-a-clone": tmp_path / "outer",
        "package": Path(toolproof.__file__).parent / "suites",
    }[bound]
    task = make_task(**SHELL, sandbox={"ro_binds": {str(host.resolve()): "/opt/data"}})
    write_suite(root, [task])
    problems = validate_paths([root])
    (problem,) = problems
    assert (problem.field or "").startswith("sandbox.ro_binds.") and problem.line is not None
    assert "answer keys" in problem.message and "bind a directory" in problem.message


@pytest.mark.usefixtures("tmp_binds")
def test_a_clone_shows_its_history_in_the_message(tmp_path: Path) -> None:
    clone = _git_clone_of_toolproof(tmp_path / "clone")
    task = make_task(**SHELL, sandbox={"ro_binds": {str(clone.resolve()): "/opt/c"}})
    (problem,) = validate_paths([write_suite(tmp_path / "s", [task])])
    assert "holds the git repository" in problem.message and ".git" in problem.message


@pytest.mark.usefixtures("tmp_binds")
def test_a_directory_in_a_clone_outside_its_keys_may_be_bound(tmp_path: Path) -> None:
    """It shows neither the .git nor a suite (a virtualenv made in a clone, say)."""
    clone = _git_clone_of_toolproof(tmp_path / "clone")
    (clone / "scripts" / "tool.sh").write_text("echo hi\n")
    task = make_task(**SHELL, sandbox={"ro_binds": {str(clone / "scripts"): "/opt/s"}})
    assert validate_paths([write_suite(tmp_path / "s", [task])]) == []


@pytest.mark.usefixtures("tmp_binds")
def test_a_plain_directory_may_be_bound(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "table.csv").write_text("a,b\n")
    task = make_task(**SHELL, sandbox={"ro_binds": {str(data): "/opt/data"}})
    assert validate_paths([write_suite(tmp_path / "s", [task])]) == []


@pytest.mark.usefixtures("tmp_binds")
def test_the_suites_own_binds_are_checked(tmp_path: Path) -> None:
    clone = _git_clone_of_toolproof(tmp_path / "clone")
    root = write_suite(
        tmp_path / "s", [make_task(**SHELL)], sandbox={"ro_binds": {str(clone): "/opt/c"}}
    )
    (problem,) = validate_paths([root])
    assert problem.file == root / "suite.yaml" and "answer keys" in problem.message


_LIMIT = st.one_of(st.none(), st.integers(min_value=1, max_value=64))
_BACKEND = st.sampled_from([None, "bwrap", "process", "podman", "docker"])


def _layer(data: dict[str, Any]) -> SandboxSpec | None:
    return None if data is None else SandboxSpec(**data)


_LAYER = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {"backend": _BACKEND, **{name: _LIMIT for name in RUN_CEILINGS}},
    ),
)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(run=_BACKEND, suite=_LAYER, task=_LAYER, on_host=st.booleans())
def test_the_effective_sandbox_is_never_weaker_than_any_layer(
    run: str | None,
    suite: dict[str, Any] | None,
    task: dict[str, Any] | None,
    on_host: bool,
) -> None:
    layers = [_layer(d) for d in (suite, task)]
    got = effective_sandbox(run, layers[0], layers[1], commands_on_host=on_host)
    for name, ceiling in RUN_CEILINGS.items():
        given_values = [getattr(la, name) for la in layers if la is not None]
        given_values = [v for v in given_values if v is not None]
        value = getattr(got, name)
        if given_values:
            assert value == min(given_values) and value <= ceiling
        else:
            assert value is None and got.limit(name) == SANDBOX_DEFAULTS[name]
    named = [la.backend for la in layers if la is not None and la.backend is not None]
    if got.backend in UNISOLATED_BACKENDS:  # only the run's own choice, or with the option
        assert run in UNISOLATED_BACKENDS or on_host
        assert all(b in UNISOLATED_BACKENDS for b in [*named, *([run] if run else [])])
    isolated = [b for b in [*reversed(named), run] if b and b not in UNISOLATED_BACKENDS]
    if isolated:
        assert got.backend == isolated[0]  # the most specific isolated one


def test_a_hostile_sandbox_section_from_yaml_never_loosens(tmp_path: Path) -> None:
    """One file with everything at once: each weakening is named, nothing else slips by."""
    hostile = {
        "backend": "process",
        "wall_s": 0,
        "cpu_s": 10**7,
        "memory_mb": 0,
        "pids": 0,
        "ro_binds": {"/etc": "/etc2", "/root": "/r"},
    }
    root = write_suite(tmp_path / "s", [make_task(**SHELL, sandbox=hostile)])
    text = (root / "tasks" / "stock.yaml").read_text()
    assert yaml.safe_load(text)["sandbox"]["backend"] == "process"
    with pytest.raises(SpecError) as refused:
        load_suite(root)
    fields = {p.field for p in refused.value.problems}
    assert {"sandbox.wall_s", "sandbox.cpu_s", "sandbox.memory_mb", "sandbox.pids"} <= fields


_NAMES = st.sampled_from(["a", "b", "toolproof", "suites", "spec", "src", ".git"])
_TREE = st.lists(st.tuples(st.lists(_NAMES, min_size=1, max_size=4), st.booleans()), max_size=8)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(tree=_TREE, pick=st.integers(min_value=0, max_value=64))
def test_a_bind_is_refused_exactly_when_it_shows_an_answer_key(
    tree: list[tuple[list[str], bool]], pick: int
) -> None:
    """Random trees of directories, some with a suite.yaml: the bind is refused iff a key
    (a suite, a ``toolproof`` folder with ``suites`` or ``spec``) is at, below or above it."""
    import tempfile

    from toolproof.spec._answer_keys import answer_key_problem

    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp) / "top"
        top.mkdir()
        for parts, suite in tree:
            folder = top.joinpath(*parts)
            folder.mkdir(parents=True, exist_ok=True)
            if suite:
                (folder / "suite.yaml").write_text("name: x\n")
        folders = sorted(p for p in top.rglob("*") if p.is_dir()) or [top]
        bound = folders[pick % len(folders)]

        def key(folder: Path) -> bool:
            return (folder / "suite.yaml").is_file() or (
                folder.name == "toolproof"
                and ((folder / "suites").is_dir() or (folder / "spec").is_dir())
            )

        around = [bound, *[p for p in bound.parents if p.is_relative_to(top)]]
        below = [  # a .git below is judged by its work tree (and hidden by the sandbox)
            p for p in bound.rglob("*") if p.is_dir() and ".git" not in p.relative_to(bound).parts
        ]
        expected = any(key(p) for p in [*around, *below])
        assert (answer_key_problem(bound) is not None) is expected, bound


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(
    env=st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3),
    binds=st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=2),
)
def test_sandbox_strings_are_ones_the_os_can_hold_or_refused(
    env: dict[str, str], binds: dict[str, str]
) -> None:
    """A NUL byte, a lone surrogate or a bad env name is refused when the task loads (the
    field named); what is accepted, a command can start with (no start failure later)."""
    from pydantic import ValidationError

    try:
        spec = SandboxSpec(env=env or None)
    except ValidationError as exc:
        assert "env" in str(exc)
    else:
        for key, value in (spec.env or {}).items():
            assert key and "=" not in key
            for text in (key, value):
                assert b"\0" not in os.fsencode(text)
                text.encode("utf-8")
    try:
        SandboxSpec.model_validate({"ro_binds": binds or None})
    except ValidationError as exc:
        assert "ro_binds" in str(exc)
    else:
        assert all("\0" not in k + v for k, v in binds.items())


def test_a_nul_in_a_tasks_sandbox_env_is_refused_at_load(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "s", [make_task(**SHELL, sandbox={"env": {"X": "a\0b"}})])
    with pytest.raises(SpecError) as refused:
        load_suite(root)
    (problem,) = refused.value.problems
    assert problem.field == "sandbox.env" and "NUL byte" in problem.message
    assert problem.file is not None
