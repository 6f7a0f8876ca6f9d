"""What every sandbox backend promises, as data, and how each promise is checked.

The mechanics differ per backend (``bwrap/``, ``_process``, ``_container``); the
promises do not. Each ``Promise`` says what holds, for which backends (every one, or
every *isolated* one: ``Sandbox.isolated``), and carries a check that runs real
commands through a backend's public ``exec`` and says what broke (None when the
promise held). ``tests/sandbox/test_contract.py`` runs every check against every
backend that can run on the machine; a new backend is held to the same list.
docs/isolation.md explains each promise and how each backend keeps it.

The checks need a sandbox on an empty workspace and a private scratch directory
outside it (for a host file no isolated command may see).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from toolproof.sandbox._base import Sandbox
from toolproof.sandbox._limits import ResourceLimits

__all__ = ["PROMISES", "Promise", "broken_promises"]

#: A check: the sandbox and a scratch directory outside its workspace -> what broke, or None.
Check = Callable[[Sandbox, Path], "str | None"]


@dataclass(frozen=True)
class Promise:
    """One thing a backend guarantees.

    Attributes:
        name: A short identifier (test ids, messages).
        statement: The promise in one sentence, as docs/isolation.md words it.
        isolated_only: True when only isolated backends make it (not ``process``).
        check: Runs commands through the sandbox; returns what broke, or None.
    """

    name: str
    statement: str
    isolated_only: bool
    check: Check


def _exact_results(box: Sandbox, _: Path) -> str | None:
    result = box.exec("printf out; printf err >&2; exit 3")
    got = (result.exit_code, result.stdout, result.stderr, result.limit_hit)
    return None if got == (3, "out", "err", None) else f"got {got!r}"


def _stdin(box: Sandbox, _: Path) -> str | None:
    fed, empty = box.exec("cat", stdin="abc\n"), box.exec("cat")
    if (fed.stdout, empty.stdout) != ("abc\n", ""):
        return f"stdin gave {fed.stdout!r}, no stdin gave {empty.stdout!r}"
    return None


def _workspace(box: Sandbox, _: Path) -> str | None:
    result = box.exec("echo contract > contract-made.txt && cat contract-made.txt")
    made = box.workspace / "contract-made.txt"
    try:
        text = made.read_text()
    except OSError as exc:
        return f"the file a command wrote is not in the workspace: {exc} ({result})"
    finally:
        made.unlink(missing_ok=True)
    return None if text == "contract\n" else f"the workspace file holds {text!r}"


def _wall_time(box: Sandbox, _: Path) -> str | None:
    result = box.exec("sleep 30 & sleep 30", limits=ResourceLimits(wall_s=1))
    if result.limit_hit != "wall_time" or result.duration_s > 20:
        return f"a command past its wall time ended as {result!r}"
    return None


def _output_cap(box: Sandbox, _: Path) -> str | None:
    result = box.exec("yes", limits=ResourceLimits(output_bytes=1000))
    if result.limit_hit != "output" or len(result.stdout) + len(result.stderr) > 1000:
        return f"a flood of output ended as limit {result.limit_hit!r}, {len(result.stdout)} chars"
    return None


def _no_network(box: Sandbox, _: Path) -> str | None:
    result = box.exec("cat /proc/net/dev")
    names = {line.split(":")[0].strip() for line in result.stdout.splitlines() if ":" in line}
    if not result.ok or not names <= {"lo"}:
        return f"network interfaces inside: {sorted(names)} ({result.stderr.strip()})"
    return None


def _no_privilege(box: Sandbox, _: Path) -> str | None:
    lines = box.exec("cat /proc/self/status").stdout.splitlines()
    status = [line.split() for line in lines if line.startswith(("CapEff:", "NoNewPrivs:"))]
    if status != [["CapEff:", "0000000000000000"], ["NoNewPrivs:", "1"]]:
        return f"the command's privileges: {status}"
    return None


def _host_hidden(box: Sandbox, scratch: Path) -> str | None:
    secret = scratch / "contract-host-secret"
    secret.write_text("host only\n")
    try:
        result = box.exec(["cat", str(secret)])
    finally:
        secret.unlink(missing_ok=True)
    return f"a host file outside the binds was read: {secret}" if "host only" in result.stdout \
        else None  # fmt: skip


def _fresh_tmp(box: Sandbox, _: Path) -> str | None:
    box.exec("echo left > /tmp/contract-left")
    if box.exec("test -e /tmp/contract-left").exit_code == 0:
        return "/tmp kept a file from the previous command"
    return None


def _clean_environment(box: Sandbox, _: Path) -> str | None:
    name = "TOOLPROOF_CONTRACT_HARNESS_ONLY"
    os.environ[name] = "harness"
    try:
        seen = box.exec(["sh", "-c", f'printf %s "${{{name}:-}}"']).stdout
    finally:
        del os.environ[name]
    return f"a harness variable reached the command: {name}={seen}" if seen else None


PROMISES: tuple[Promise, ...] = (
    Promise("exact_results", "A command's exit status, stdout and stderr come back exactly.",
            False, _exact_results),
    Promise("stdin", "stdin text is fed to the command; without it, the command reads "
            "nothing.", False, _stdin),
    Promise("workspace", "What a command writes in its workspace (its start directory) is in "
            "the host's workspace directory afterwards.", False, _workspace),
    Promise("wall_time", "A command past its wall time is killed with its whole tree and "
            "reported as limit 'wall_time'.", False, _wall_time),
    Promise("output_cap", "Output past output_bytes is cut and reported as limit 'output'.",
            False, _output_cap),
    Promise("no_network", "No network interface but loopback.", True, _no_network),
    Promise("no_privilege", "No capabilities and no new privileges: never host root.", True,
            _no_privilege),
    Promise("host_hidden", "Host files outside the workspace and the declared binds are not "
            "visible.", True, _host_hidden),
    Promise("fresh_tmp", "/tmp is new for every command.", True, _fresh_tmp),
    Promise("clean_environment", "The environment is built from scratch: the harness's "
            "variables never reach a command.", True, _clean_environment),
)  # fmt: skip


def broken_promises(box: Sandbox, scratch: Path) -> dict[str, str]:
    """Run every promise that applies to ``box``'s backend; name -> what broke.

    Args:
        box: A sandbox on an empty workspace (the checks write and remove a file there).
        scratch: A private host directory outside the workspace.
    """
    broken: dict[str, str] = {}
    for promise in PROMISES:
        if promise.isolated_only and not box.isolated:
            continue
        failure = promise.check(box, scratch)
        if failure is not None:
            broken[promise.name] = failure
    return broken
