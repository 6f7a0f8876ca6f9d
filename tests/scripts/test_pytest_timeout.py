"""The per-test timeout of pyproject.toml: a hanging test fails with its traceback, the run goes on.

A hang must cost CI one test's timeout, not the whole job: the project's ``timeout_method``
has to interrupt an awaited asyncio call, a wait on a subprocess and a blocked lock alike,
and leave the run (an xdist worker) alive for the next test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HANGS = """
import asyncio, subprocess, threading

async def test_awaits_forever():
    await asyncio.sleep(3600)

def test_waits_on_a_command_forever():
    subprocess.run(["sleep", "{token}"], check=False)

def test_blocks_on_a_lock_forever():
    lock = threading.Lock()
    lock.acquire()
    lock.acquire()

def test_the_run_goes_on():
    assert True
"""


PLUGINS = ["-p", "asyncio", "-p", "pytest_timeout"]
"""The two plug-ins the hanging tests need (autoload off: a fast start)."""


def test_the_project_sets_a_timeout(pytestconfig: pytest.Config) -> None:
    assert 0 < float(pytestconfig.getini("timeout")) <= 600
    assert pytestconfig.getini("timeout_method") == "signal"


def test_each_hang_fails_with_its_traceback_and_the_run_goes_on(
    tmp_path: Path, pytestconfig: pytest.Config
) -> None:
    token = f"3599.{os.getpid()}"  # a sleep nobody else runs
    (tmp_path / "test_hangs.py").write_text(HANGS.replace("{token}", token))
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_mode = auto\ntimeout = 0.5\n"
        f"timeout_method = {pytestconfig.getini('timeout_method')}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGINS],
        cwd=tmp_path,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        capture_output=True,
        text=True,
        timeout=120,  # the timeouts did not fire: fail here, not after an hour
        check=False,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "3 failed, 1 passed" in out, out
    # once per hang in its failure section (the short summary, cut to the terminal's width,
    # may repeat it or not)
    raised = re.findall(r"^E\s+Failed: Timeout \(>0\.5s\) from pytest-timeout", out, re.M)
    assert len(raised) == 3, out
    for name in ("awaits_forever", "waits_on_a_command_forever", "blocks_on_a_lock_forever"):
        assert f"FAILED test_hangs.py::test_{name}" in out, out
    assert "test_hangs.py:" in out  # the traceback points at the hanging line
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    assert f"sleep {token}" not in ps.stdout  # the hung command was killed with its test
