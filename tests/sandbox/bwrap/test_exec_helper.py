"""The spawner's exec helper: built once, kept private, and never starting anything as root.

The helper is a small C program the root spawner starts with ``posix_spawn``; these
tests run it directly (as root, as CI runs) and skip where there is no root or no
C compiler (the spawner then forks, which ``test_spawner`` covers).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.sandbox import SANDBOX_GID, SANDBOX_UID
from toolproof.sandbox.bwrap import _exec_helper

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "30"))
needs_root_and_cc = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("cc") is None,
    reason="the exec helper is built and used only by a root harness with a C compiler",
)


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty temporary directory for the build, and nothing built remembered yet."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    _exec_helper.exec_helper.cache_clear()
    _exec_helper.native_spawner.cache_clear()
    yield tmp_path / f"toolproof-exec-helper-{os.geteuid()}"
    _exec_helper.exec_helper.cache_clear()
    _exec_helper.native_spawner.cache_clear()


@pytest.fixture(scope="module")
def helper() -> str:
    """The helper as the spawner gets it."""
    if os.geteuid() != 0 or shutil.which("cc") is None:
        pytest.skip("the exec helper needs a root harness and a C compiler")
    path = _exec_helper.exec_helper()
    assert path is not None
    return path


def _run(
    helper: str, *args: str, keep: tuple[int, ...] = (), leak: tuple[int, ...] = ()
) -> tuple[int, str, str]:
    """Run the helper with an error pipe; (exit status, stdout, what the pipe said).

    ``keep`` are descriptors the helper is told to keep, ``leak`` more it inherits
    (every other one of this process is closed by ``subprocess`` first).
    """
    read, write = os.pipe()
    os.set_inheritable(write, True)
    try:
        proc = subprocess.run(
            [helper, str(write), *args], capture_output=True, text=True, timeout=30,
            env={"PATH": "/usr/bin:/bin"}, pass_fds=(write, *keep, *leak),
        )  # fmt: skip
    finally:
        os.close(write)
    with os.fdopen(read) as errors:
        return proc.returncode, proc.stdout, errors.read()


@needs_root_and_cc
def test_it_is_built_once_and_reused(fresh: Path) -> None:
    before = _exec_helper.builds
    first = _exec_helper.exec_helper()
    assert first is not None and _exec_helper.builds == before + 1
    _exec_helper.exec_helper.cache_clear()  # another process: the built file is reused
    assert _exec_helper.exec_helper() == first and _exec_helper.builds == before + 1
    info = os.lstat(first)
    assert info.st_uid == 0 and not info.st_mode & 0o022
    assert fresh.stat().st_mode & 0o777 == 0o700


@needs_root_and_cc
@pytest.mark.parametrize("hostile", ["open", "other owner", "link"])
def test_a_build_directory_someone_else_could_write_is_never_used(
    fresh: Path, hostile: str
) -> None:
    if hostile == "link":
        target = fresh.with_name("elsewhere")
        target.mkdir(mode=0o700)
        fresh.symlink_to(target)
    else:
        fresh.mkdir(mode=0o700)
        if hostile == "open":
            fresh.chmod(0o777)
        else:
            os.chown(fresh, SANDBOX_UID, SANDBOX_GID)
    before = _exec_helper.builds
    assert _exec_helper.exec_helper() is None
    assert _exec_helper.builds == before  # nothing compiled, nothing run from there


@needs_root_and_cc
@pytest.mark.parametrize("hostile", ["open", "planted"])
def test_the_c_spawner_is_built_and_trusted_the_same_way(fresh: Path, hostile: str) -> None:
    """The root harness runs the C spawner: the same private directory and checks."""
    if hostile == "open":
        fresh.mkdir(mode=0o700)
        fresh.chmod(0o777)
        before = _exec_helper.builds
        assert _exec_helper.native_spawner() is None and _exec_helper.builds == before
        return
    path = _exec_helper.native_spawner()
    assert path is not None and Path(path).parent == fresh
    assert Path(path).name.startswith("spawner-") and not os.lstat(path).st_mode & 0o022
    Path(path).chmod(0o777)  # writable by anyone: not trusted any more
    _exec_helper.native_spawner.cache_clear()
    before = _exec_helper.builds
    assert _exec_helper.native_spawner() == path and _exec_helper.builds == before + 1
    assert not os.lstat(path).st_mode & 0o022


@needs_root_and_cc
def test_a_planted_binary_is_rebuilt_not_run(fresh: Path) -> None:
    path = _exec_helper.exec_helper()
    assert path is not None
    Path(path).chmod(0o777)  # writable by anyone: not trusted any more
    _exec_helper.exec_helper.cache_clear()
    before = _exec_helper.builds
    assert _exec_helper.exec_helper() == path and _exec_helper.builds == before + 1
    assert not os.lstat(path).st_mode & 0o022


def test_the_helper_drops_root_sets_limits_and_closes_descriptors(helper: str) -> None:
    kept, leaked = os.open(os.devnull, os.O_RDONLY), os.open(os.devnull, os.O_RDONLY)
    try:
        script = "id -u; id -g; id -G; ulimit -St; ulimit -Ht; ulimit -f; ls /proc/self/fd; " \
                 "cat /proc/self/oom_score_adj; pwd"  # fmt: skip
        code, out, errors = _run(
            helper, str(SANDBOX_UID), str(SANDBOX_GID), "/usr", "1", str(kept), "2",
            "0", "9", "10",  # RLIMIT_CPU
            "1", str(8 * 1024 * 1024), str(8 * 1024 * 1024),  # RLIMIT_FSIZE
            "--", "sh", "-c", script, keep=(kept,), leak=(leaked,),
        )  # fmt: skip
    finally:
        os.close(kept)
        os.close(leaked)
    assert (code, errors) == (0, ""), errors
    lines = out.split()
    assert lines[:6] == [str(SANDBOX_UID), str(SANDBOX_GID), str(SANDBOX_GID), "9", "10",
                         str(8 * 2048)]  # fmt: skip
    fds = set(lines[6:-2]) - {"3"}  # the one ``ls`` opens
    assert fds == {"0", "1", "2", str(kept)}  # the leaked one and the error pipe are closed
    assert lines[-2:] == ["0", "/usr"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["0", "1000", "/", "0", "0", "--", "id"], "bad argument 0"),  # never root
        (["1000", "0", "/", "0", "0", "--", "id"], "bad argument 0"),
        (["1000", "1000", "/", "0", "0", "id", "x"], "bad argument -- PROGRAM"),
        (["1000", "1000", "/", "1", "2", "0", "--", "id"], "bad argument 2"),  # fd 2 kept
        (["1000", "1000", "/", "0", "1", "99", "1", "1", "--", "id"], "bad argument 99"),
        (["1000", "1000", "/", "0", "1", "0", "x", "1", "--", "id"], "bad argument x"),
        (["1000", "1000", "/no/such/dir", "0", "0", "--", "id"], "chdir /no/such/dir"),
        (["1000", "1000", "/", "0", "0", "--", "/no/such/program"], "exec /no/such/program"),
    ],
)
def test_a_bad_request_exits_127_saying_why(helper: str, args: list[str], said: str) -> None:
    code, out, errors = _run(helper, *args)
    number, _, step = errors.partition(":")  # ERRNO:STEP: WHY, the errno for the harness
    assert code == 127 and out == "" and number.isdigit() and step.startswith(said), errors


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(st.sampled_from(["0", "-1", "1", "3", "65536", "--", "x", "", "1000", "id"]),
                max_size=12))  # fmt: skip
def test_whatever_the_arguments_nothing_runs_as_root(helper: str, args: list[str]) -> None:
    code, out, _ = _run(helper, *args, "--", "id", "-u")
    assert code == 127 or (code == 0 and out.strip() not in ("", "0")), (args, code, out)
