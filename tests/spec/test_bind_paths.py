"""A bind's host path is judged by one function (``paths.host_bind_problem``) on the path
every symlink leads to, at load, again before each episode (``effective_sandbox``) and,
for system paths, again as a sandbox mounts it (``sandbox._args.check_binds``): a link
into /etc or /run, a folder of runs, ``$HOME`` wherever it is, /tmp and the other shared
or secret places are refused with the file, the field and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.sandbox import SandboxError
from toolproof.sandbox._args import check_binds
from toolproof.spec import SpecError, paths, validate_paths
from toolproof.spec.paths import (
    FORBIDDEN_HOST_PATHS,
    SYSTEM_HOST_PATHS,
    host_bind_problem,
    ro_bind_problem,
)
from toolproof.spec.sandbox import SandboxSpec, effective_sandbox
from toolproof_helpers import make_task, write_suite

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))
SHELL = {
    "tools": ["get_stock", "run_command"],
    "world": {"records": {"products": {"A": {"name": "Bolt", "stock": 7}}}, "files": {"a": "a"}},
}


@pytest.fixture
def tmp_binds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let binds under /tmp pass (pytest's tmp_path is there), all else as it is."""
    allowed = tuple(p for p in paths.FORBIDDEN_HOST_PATHS if p != "/tmp")
    monkeypatch.setattr(paths, "FORBIDDEN_HOST_PATHS", allowed)


@pytest.mark.parametrize("root", FORBIDDEN_HOST_PATHS)
def test_every_forbidden_place_is_refused_as_written(root: str) -> None:
    for host in (root, f"{root}/x/y"):
        problem = ro_bind_problem(host, "/opt/x")
        assert problem is not None and "may not be bound" in problem, host


@pytest.mark.parametrize("host", ["/", "/tmp", "/tmp/data", "/var/tmp/x", "/opt/tools", "/mnt"])
def test_shared_and_scratch_places_are_refused(host: str) -> None:
    assert ro_bind_problem(host, "/opt/x") is not None


@pytest.mark.usefixtures("tmp_binds")
@pytest.mark.parametrize("target", ["/etc", "/etc/ssl", "/run", "/proc/self", "/", "/dev"])
def test_a_link_into_a_forbidden_place_is_refused(tmp_path: Path, target: str) -> None:
    link = tmp_path / "innocent"
    link.symlink_to(target)
    problem = ro_bind_problem(str(link), "/opt/x")
    assert problem is not None and "symlinks followed" in problem, problem


@pytest.mark.usefixtures("tmp_binds")
def test_a_link_through_a_parent_is_followed(tmp_path: Path) -> None:
    (tmp_path / "up").symlink_to("/etc")
    assert ro_bind_problem(str(tmp_path / "up" / "ssl"), "/opt/x") is not None


@pytest.mark.parametrize("host", ["/var/lock", "/usr/lib/ssl/private", "/usr/lib/ssl/certs"])
def test_host_links_into_system_paths_are_refused(host: str) -> None:
    """The red team's: on this kind of host these lead into /run and /etc."""
    real = os.path.realpath(host)
    if real == host or not os.path.exists(host):
        pytest.skip(f"{host} is not a link here")
    assert ro_bind_problem(host, "/opt/x") is not None


@pytest.mark.usefixtures("tmp_binds")
def test_home_is_refused_wherever_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "var-lib-jenkins"
    (home / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    problem = ro_bind_problem(str(home / "work"), "/opt/x")
    assert problem is not None and "home directory" in problem
    (tmp_path / "elsewhere").symlink_to(home / "work")
    assert ro_bind_problem(str(tmp_path / "elsewhere"), "/opt/x") is not None


@pytest.mark.usefixtures("tmp_binds")
@pytest.mark.parametrize("marker", ["run.db", "trajectories.jsonl", "summary.json"])
def test_run_folders_are_answer_keys(tmp_path: Path, marker: str) -> None:
    run = tmp_path / "project" / "runs" / "oracle"
    run.mkdir(parents=True)
    (run / marker).write_text("{}", encoding="utf-8")
    (run / "sub").mkdir()
    for host in (run, run.parent, tmp_path / "project", run / "sub"):
        problem = ro_bind_problem(str(host), "/opt/x")
        assert problem is not None and "a run folder" in problem, (host, problem)
    clean = tmp_path / "project" / "data"
    clean.mkdir()
    assert ro_bind_problem(str(clean), "/opt/x") is None


@pytest.mark.usefixtures("tmp_binds")
def test_validate_names_the_file_field_and_fix(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "r1"
    run.mkdir(parents=True)
    (run / "trajectories.jsonl").write_text("", encoding="utf-8")
    link = tmp_path / "lock"
    link.symlink_to("/run")
    binds = {str(tmp_path / "runs"): "/runs", str(link): "/l"}
    root = write_suite(tmp_path / "s", [make_task(**SHELL, sandbox={"ro_binds": binds})])
    problems = validate_paths([root])
    assert len(problems) == 2
    for problem in problems:
        assert problem.file is not None and problem.file.suffix == ".yaml"
        assert (problem.field or "").startswith("sandbox.ro_binds.") and problem.line
        assert "bind a directory" in problem.message


@pytest.mark.usefixtures("tmp_binds")
def test_a_link_swapped_after_validation_is_caught_before_the_episode_and_at_mount(
    tmp_path: Path,
) -> None:
    clean = tmp_path / "clean"
    clean.mkdir()
    link = tmp_path / "tools"
    link.symlink_to(clean)
    spec = SandboxSpec(ro_binds={str(link): "/opt/tools"})
    assert ro_bind_problem(str(link), "/opt/tools") is None
    held = effective_sandbox(None, None, spec)
    assert held.ro_binds == {str(clean): "/opt/tools"}  # the resolved path is what mounts
    link.unlink()
    link.symlink_to("/etc")
    with pytest.raises(SpecError, match=r"sandbox\.ro_binds"):
        effective_sandbox(None, None, spec)
    with pytest.raises(SandboxError, match="/etc"):
        check_binds({str(link): "/opt/tools"})


@pytest.mark.parametrize("root", SYSTEM_HOST_PATHS)
def test_a_sandbox_never_mounts_a_system_path(tmp_path: Path, root: str) -> None:
    if not os.path.exists(root):
        pytest.skip(f"no {root} here")
    link = tmp_path / "l"
    link.symlink_to(root)
    for host in (root, str(link)):
        with pytest.raises(SandboxError, match="may not be bound"):
            check_binds({host: "/opt/x"})


_TARGETS = ["/etc", "/run", "/", "/proc", "/usr", "/usr/share", "CLEAN", "RUN", "LINK"]


@pytest.mark.usefixtures("tmp_binds")
@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(_TARGETS), min_size=1, max_size=4), st.sampled_from(["", "/x"]))
def test_what_passes_resolves_outside_every_forbidden_place(
    tmp_path_factory: pytest.TempPathFactory, chain: list[str], tail: str
) -> None:
    """A chain of links (each to the next, the last to a target) passes only when the
    place it finally leads to is neither forbidden nor an answer key."""
    top = tmp_path_factory.mktemp("chain")
    (top / "clean").mkdir()
    (top / "run").mkdir()
    (top / "run" / "run.db").write_text("", encoding="utf-8")
    resolved = {"CLEAN": top / "clean", "RUN": top / "run", "LINK": top / "clean"}
    previous: Path | None = None
    for n, target in reversed(list(enumerate(chain))):
        link = top / f"l{n}"
        link.symlink_to(previous if previous is not None else resolved.get(target, target))
        previous = link
    assert previous is not None
    host = str(previous) + tail
    problem = host_bind_problem(host)
    real = os.path.realpath(host)
    bad = (
        real == "/"
        or any(Path(real).is_relative_to(p) for p in paths.FORBIDDEN_HOST_PATHS)
        or Path(real).is_relative_to(top / "run")
    )
    assert (problem is not None) == bad, (host, real, problem)
