"""ResourceLimits: validation with readable errors, and the prlimit options."""

from __future__ import annotations

import re
import subprocess

import pytest

from toolproof.sandbox import ResourceLimits, SandboxError
from toolproof.sandbox._limits import sh_sets_rlimits


def test_defaults_match_the_documented_interface() -> None:
    limits = ResourceLimits()
    assert (limits.wall_s, limits.cpu_s, limits.memory_mb, limits.pids) == (30.0, 30.0, 1024, 128)
    assert (limits.file_size_mb, limits.workspace_mb, limits.output_bytes) == (64, 512, 1_000_000)


@pytest.mark.parametrize(
    ("field", "value"),
    [("wall_s", 0), ("wall_s", None), ("cpu_s", -1.0), ("pids", True), ("memory_mb", "1g"),
     ("output_bytes", float("inf"))],
)  # fmt: skip
def test_bad_values_name_the_field_and_value(field: str, value: object) -> None:
    with pytest.raises(SandboxError, match=rf"ResourceLimits\.{field} must be a positive"):
        ResourceLimits(**{field: value})  # type: ignore[arg-type]


def test_none_turns_optional_limits_off() -> None:
    limits = ResourceLimits(cpu_s=None, memory_mb=None, pids=None, file_size_mb=None)
    assert limits.prlimit_args(nproc=True, address_space=True) == []


def test_prlimit_args() -> None:
    limits = ResourceLimits(cpu_s=1.5, memory_mb=10, pids=7, file_size_mb=2)
    assert limits.prlimit_args(nproc=False, address_space=False) == [
        "--cpu=2:3",
        f"--fsize={2 * 1024 * 1024}",
    ]
    assert limits.prlimit_args(nproc=True, address_space=True)[2:] == [
        f"--as={10 * 1024 * 1024}",
        "--nproc=7",
    ]


def _limits_after(script: str) -> dict[str, tuple[str, str]]:
    """(soft, hard) per limit name, as /proc/self/limits shows them after ``script``."""
    run = subprocess.run(
        ["/bin/sh", "-c", f"{script} && exec cat /proc/self/limits"],
        capture_output=True, text=True, check=True, env={"PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    found = {}
    for line in run.stdout.splitlines():
        if match := re.match(r"(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)", line):
            found[match[1]] = (match[2], match[3])
    return found


def test_ulimit_script_sets_exactly_what_prlimit_would() -> None:
    if not sh_sets_rlimits():
        pytest.skip("this /bin/sh cannot set the limits exactly; prlimit is used instead")
    limits = ResourceLimits(cpu_s=2.5, memory_mb=300, pids=9, file_size_mb=3)
    found = _limits_after(limits.ulimit_script(nproc=True, address_space=True))
    assert found["Max cpu time"] == ("3", "4")  # as --cpu=3:4
    assert found["Max file size"] == (str(3 * 1024 * 1024),) * 2
    assert found["Max address space"] == (str(300 * 1024 * 1024),) * 2
    assert found["Max processes"] == ("9", "9")


def test_ulimit_script_leaves_out_what_is_not_asked_for() -> None:
    limits = ResourceLimits(cpu_s=None, memory_mb=10, pids=7, file_size_mb=None)
    assert limits.ulimit_script(nproc=False, address_space=False) == ""
    assert limits.ulimit_script(nproc=True, address_space=False) == "ulimit -p 7"
