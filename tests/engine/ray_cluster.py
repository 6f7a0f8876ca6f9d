"""A real two-node Ray cluster on this machine, for the tests: two ``ray start`` processes.

Each node is a ``ray start --block`` process in a session of its own, with one CPU,
on the loopback address 127.0.0.2 (Ray replaces 127.0.0.1 with the machine's outward
address; the rest of 127/8 is loopback too), with every port chosen free and its own
temporary folder, so it shares nothing with another Ray on the machine. Stopping kills
every process of both sessions (the raylets, GCS, agents and workers they started)
with SIGKILL and waits until none is left: nothing outlives the test, even a failed one.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

HOST = "127.0.0.2"
RAY = str(Path(sys.executable).parent / "ray")


def _free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind((HOST, 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def session_processes(sessions: set[int]) -> list[int]:
    """Live (not zombie) processes whose session id is one of ``sessions``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) not in sessions:
                    continue
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if stat.rpartition(")")[2].split()[0] != "Z":  # a zombie is dead, only unreaped
                found.append(int(entry))
    return found


def _kill_sessions(sessions: set[int], timeout: float = 30.0) -> list[int]:
    """SIGKILL every process of ``sessions`` until none is left; the ones that remain."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_processes(sessions)
        if not left or time.monotonic() > deadline:
            return left
        for pid in left:
            with suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)


def _node(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [RAY, "start", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def _ports(ports: list[int]) -> list[str]:
    names = (
        "node-manager-port",
        "object-manager-port",
        "dashboard-agent-listen-port",
        "dashboard-agent-grpc-port",
        "runtime-env-agent-port",
        "metrics-export-port",
    )
    return [f"--{name}={port}" for name, port in zip(names, ports, strict=True)]


@contextmanager
def two_node_cluster(
    timeout: float = 90.0, on_start: Callable[[set[int]], object] = lambda _: None
) -> Iterator[str]:
    """Start a head and a worker node (1 CPU each); yield the head's address.

    ``on_start`` is given the nodes' session ids once both processes are started.

    Raises:
        RuntimeError: a node did not come up in ``timeout`` seconds (with its log).
    """
    tmp = Path(tempfile.mkdtemp(prefix="tpray", dir="/tmp"))  # short: Ray's socket paths
    ports = _free_ports(13)
    env = {
        **os.environ,
        "RAY_USAGE_STATS_ENABLED": "0",
        "RAY_AUTH_MODE": "disabled",  # no token from ~/.ray: this cluster is the test's own
    }
    common = [
        "--num-cpus=1",
        f"--node-ip-address={HOST}",
        "--block",
        "--disable-usage-stats",
        "--object-store-memory=80000000",
        "--include-log-monitor=false",
    ]
    address = f"{HOST}:{ports[0]}"
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        nodes.append(
            _node(
                [
                    "--head",
                    f"--port={ports[0]}",
                    f"--temp-dir={tmp}",
                    "--include-dashboard=false",
                    *_ports(ports[1:7]),
                    *common,
                ],
                tmp / "head.log",
                env,
            )
        )
        # Started at once: the worker node waits for the head's GCS by itself.
        nodes.append(
            _node(
                [f"--address={address}", *_ports(ports[7:13]), *common],
                tmp / "worker.log",
                env,
            )
        )
        on_start({node.pid for node in nodes})
        deadline = time.monotonic() + timeout
        for node, log in zip(nodes, ("head.log", "worker.log"), strict=True):
            while "Ray runtime started" not in (tmp / log).read_text(errors="replace"):
                if node.poll() is not None or time.monotonic() > deadline:
                    text = (tmp / log).read_text(errors="replace")[-3000:]
                    raise RuntimeError(f"ray node did not start ({log}):\n{text}")
                time.sleep(0.2)
        yield address
    finally:
        sessions = {node.pid for node in nodes}
        left = _kill_sessions(sessions)
        for node in nodes:
            node.wait(timeout=10)
        subprocess.run(["rm", "-rf", str(tmp)], check=False)
        if left:
            raise RuntimeError(f"ray processes survived the cluster: {left}")


@contextmanager
def one_ray_at_a_time() -> Iterator[None]:
    """Hold the machine's Ray test lock: the test files that start Ray (a local instance,
    a two-node cluster) never run at once on different xdist workers, where on 2 cores the
    four Ray processes' start-up starved the cluster's actors."""
    import fcntl

    with open(Path(tempfile.gettempdir()) / "toolproof-ray-tests.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
