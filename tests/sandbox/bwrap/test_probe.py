"""bwrap's availability probe works under any TMPDIR and names the real cause of a failure.

A harness with a private ``TMPDIR`` (mode 0700, as ``mktemp -d`` makes it) used to fail the
probe, because the sandbox user cannot reach it, and to blame user namespaces.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolproof.sandbox import SANDBOX_UID, SandboxError, _wsfs, get_backend, reachable_tmp
from toolproof.sandbox.bwrap import _backend as _bwrap

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox user exists for root only")


@pytest.fixture
def private_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """TMPDIR set to a mode-0700 directory owned by the harness (root in CI)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)  # tempfile caches its choice
    assert tempfile.gettempdir() == str(private)
    yield private


def _probe_now() -> tuple[str | None, str, frozenset[str]]:
    """The probe run afresh (it is cached per process)."""
    return _bwrap._probe.__wrapped__()  # type: ignore[attr-defined, no-any-return]


@root_only
def test_the_probe_passes_under_a_private_tmpdir(private_tmpdir: Path) -> None:
    if _bwrap._probe()[0] is not None:
        pytest.skip(f"bwrap unusable here anyway: {_bwrap._probe()[0]}")
    reason, _, _ = _probe_now()
    assert reason is None
    assert list(private_tmpdir.iterdir()) == []  # nothing was left in it, nor made there


@root_only
def test_a_sandbox_runs_under_a_private_tmpdir(private_tmpdir: Path) -> None:
    cls = get_backend("bwrap")
    if cls.unavailable_reason() is not None:
        pytest.skip(f"bwrap unusable here: {cls.unavailable_reason()}")
    workspace = Path(tempfile.mkdtemp(dir=private_tmpdir))  # behind the 0700 directory too
    (workspace / "in.txt").write_text("hello\n")
    with cls(workspace) as box:
        scratch = box._scratch_dir()
        assert not scratch.is_relative_to(private_tmpdir)  # a shared /tmp instead
        result = box.exec("cat in.txt; id -u; echo out > out.txt")
    assert result.ok, result
    assert result.stdout == "hello\n1000\n" and (workspace / "out.txt").read_text() == "out\n"


@root_only
def test_the_scratch_directory_avoids_an_unreachable_tmpdir(private_tmpdir: Path) -> None:
    owner = (SANDBOX_UID, SANDBOX_UID)
    chosen = reachable_tmp(owner)
    assert chosen is not None and chosen in _wsfs.SHARED_TMP
    assert _wsfs.unreachable_parent(Path(chosen), *owner) is None


def test_a_reachable_tmpdir_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = Path(tempfile.mkdtemp(dir="/tmp"))  # pytest's own folders are 0700
    try:
        shared.chmod(0o755)
        monkeypatch.setattr(tempfile, "tempdir", str(shared))
        assert reachable_tmp((SANDBOX_UID, SANDBOX_UID)) == str(shared)
        assert reachable_tmp(None) is None  # not root: the harness's own TMPDIR serves
    finally:
        shared.rmdir()


@root_only
def test_with_nowhere_to_go_the_reason_names_tmpdir(
    private_tmpdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_wsfs, "SHARED_TMP", ())
    with pytest.raises(SandboxError) as refused:
        reachable_tmp((SANDBOX_UID, SANDBOX_UID))
    message = str(refused.value)
    assert f"TMPDIR {str(private_tmpdir)!r}" in message and "TMPDIR=/tmp" in message
    if _bwrap._probe()[0] is None:  # the probe says the same, not "user namespaces"
        reason, _, _ = _probe_now()
        assert reason is not None and "TMPDIR" in reason and "namespace" not in reason


@pytest.mark.parametrize(
    ("stderr", "says"),
    [
        (
            "bwrap: Can't find source path /x/passwd: Permission denied",
            "cannot reach a directory bwrap binds",
        ),
        ("bwrap: Can't chdir to /workspace: Permission denied", "cannot reach a directory"),
        ("bwrap: setting up uid map: Permission denied", "user namespaces"),
        ("bwrap: No permissions to creating new namespace", "namespace"),
        ("bwrap: something else entirely", "to see why"),
    ],
)
def test_diagnose_names_the_cause(stderr: str, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_bwrap, "_USERNS_KNOBS", ())  # this host's settings aside
    assert says in _bwrap.diagnose(stderr, (SANDBOX_UID, SANDBOX_UID))


def test_diagnose_reads_the_kernel_setting_that_disables_user_namespaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    knob = tmp_path / "max_user_namespaces"
    knob.write_text("0\n")
    monkeypatch.setattr(_bwrap, "_USERNS_KNOBS", ((str(knob), "0", "sysctl -w fix=1"),))
    said = _bwrap.diagnose("bwrap: setting up uid map: Permission denied", None)
    assert "disabled" in said and str(knob) in said and "sysctl -w fix=1" in said
    assert "the harness's user" in said


def test_a_missing_bwrap_is_named_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_bwrap.shutil, "which", lambda name: None)
    reason, _, _ = _probe_now()
    assert reason is not None and "not installed" in reason and "apt-get install" in reason
