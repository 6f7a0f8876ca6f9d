"""ResourceLimits: validation with readable errors, and the prlimit options."""

from __future__ import annotations

import pytest

from toolproof.sandbox import ResourceLimits, SandboxError


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
