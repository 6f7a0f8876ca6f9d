"""The process's shared gateway: its limit set and its stop asked for without importing the
server, which a run that calls no model never needs (a tenth of a run's start-up)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from toolproof import gateway

SRC = Path(__file__).resolve().parents[2] / "src"

FRESH = """
import sys
from toolproof import gateway
gateway.limit_shared(3)
gateway.stop_shared()
print("toolproof.gateway._server" in sys.modules)
server = gateway.shared()
print(server.max_concurrent)
gateway.limit_shared(5)
print(server.max_concurrent, gateway.shared() is server)
"""


def test_the_limit_waits_for_the_gateway_and_then_reaches_it() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", FRESH], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["False", "3", "5 True"]


def test_the_limit_reaches_a_gateway_already_made() -> None:
    server = gateway.shared()
    before = server.max_concurrent
    try:
        gateway.limit_shared(7)
        assert server.max_concurrent == 7
        gateway.limit_shared(None)
        assert server.max_concurrent is None
    finally:
        gateway.limit_shared(before)
