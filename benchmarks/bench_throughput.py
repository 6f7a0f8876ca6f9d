"""Throughput at concurrency: 100 / 500 / 1,000 episodes in flight, model latency 100-500 ms.

Episodes of the core task ``stock-sum`` (3 model calls each). Each model call waits a
latency drawn uniformly from 100-500 ms, seeded per (epoch, turn), so every mode and
repetition waits the same and the ideal time is known exactly: the sum of every
episode's waits divided by the number in flight (or the longest episode, if longer).
The share of ideal is ideal time / measured episode phase (start to the last stored
episode). Modes:

* ``engine``: an in-process agent that waits (``benchmarks/_throughput_agent.py``), a
  ``python:`` agent at its defaults (its own thread and loop per episode): in one process
  (``--workers 1``) and, as ``engine-workers``, with a worker process per core.
* ``harness``: the same agent with ``--agent-arg loop=harness`` (on the harness's loop, no
  thread hops): the engine's own cost; ``harness-workers`` with a worker process per core.
* ``sdk``: the ``openai:`` adapter (official SDK, httpx) against the scripted model
  server in its own process, which waits the same latencies; ``sdk-workers`` with a
  worker process per core (not in the default modes).

Runs are interleaved (mode by mode, level by level, repetition after repetition) and
each figure is the median of ``--reps`` with the range beside it; CPU time of the run
(this process from the start of ``Runner.run``, plus its worker processes, their
start-up included; not the imports) per episode is printed beside wall time, with the core
count and the load average before and after. ``--profile-sdk`` profiles one SDK run
and prints where its CPU goes (SDK / httpx / pydantic / asyncio / toolproof).

    python benchmarks/bench_throughput.py [--episodes 3000] [--levels 100 500 1000] [--reps 3]
        [--modes engine engine-workers harness harness-workers sdk]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _throughput_agent import TURNS, latency  # noqa: E402

CHILD = r"""
import asyncio, cProfile, json, pstats, resource, sys, time
from pathlib import Path
from toolproof.engine import RunConfig, Runner
from toolproof.spec import load_suite, resolve_suite_path

target, episodes, parallel, workers, run_dir, profile = sys.argv[1:7]
episodes, parallel, workers = int(episodes), int(parallel), int(workers)
if target == "engine":
    agent, options = "python:_throughput_agent:StockSum", {}
elif target == "harness":
    agent, options = "python:_throughput_agent:StockSum", {"loop": "harness"}
else:
    agent, options = "openai:scripted", {"base_url": target, "api_key": "test", "timeout": 120}
config = RunConfig(suite=str(resolve_suite_path("core")), agent=agent, agent_options=options,
                   epochs=episodes, tasks=["stock-sum"])
suite = load_suite("core")
last = [0.0]
def on_episode(record):
    last[0] = time.perf_counter()
runner = Runner(config, Path(run_dir), parallel=parallel, suite=suite, on_episode=on_episode,
                executor_options={"workers": workers})
profiler = cProfile.Profile() if profile == "1" else None
def used():
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
c0 = time.process_time()
u0 = used()
start = time.perf_counter()
if profiler:
    profiler.enable()
summary = asyncio.run(runner.run())
if profiler:
    profiler.disable()
    shares = {}
    GROUPS = (
        ("openai SDK", ("/openai/",)),
        ("httpx/httpcore/anyio", ("/httpx/", "/httpcore/", "/anyio/", "/h11/")),
        ("pydantic", ("/pydantic",)),
        ("toolproof", ("/toolproof/",)),
        ("asyncio/selectors/ssl", ("/asyncio/", "selectors", "/ssl")),
        ("json", ("/json/",)),
    )
    for (path, _, _), row in pstats.Stats(profiler).stats.items():
        tottime = row[2]
        for key, marks in GROUPS:
            if any(m in path for m in marks):
                break
        else:
            key = "other (stdlib, builtins)"
        shares[key] = shares.get(key, 0.0) + tottime
    total = sum(shares.values())
    print("PROFILE " + json.dumps({k: v / total for k, v in shares.items()}))
wall = time.perf_counter() - start
cpu = used() - u0  # the run, worker processes (their start-up included), not this one's imports
self_cpu = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"phase_s": last[0] - start, "total_s": wall, "cpu_s": cpu,
                  "parent_cpu_s": time.process_time() - c0,
                  "passed": summary["success"]["successes"],
                  "episodes": summary["episodes"]["finished"],
                  "peak_mb": self_cpu.ru_maxrss / 1024}))
"""

SERVER = r"""
import dataclasses, itertools, sys
from toolproof.testing import ModelServer, ScriptedReply, ScriptedToolCall, sequence_policy
sys.path.insert(0, sys.argv[2])
from _throughput_agent import latency

replies = [
    ScriptedReply(tool_calls=[ScriptedToolCall(name="get_stock", arguments={"product_id": "A"}),
                              ScriptedToolCall(name="get_stock", arguments={"product_id": "B"})]),
    ScriptedReply(
        tool_calls=[ScriptedToolCall(name="calculate", arguments={"expression": "15 + 27"})]
    ),
    ScriptedReply(content="A and B have 42 units together."),
]
inner = sequence_policy(replies, per_conversation=True)
count = itertools.count()
def policy(request):
    # every request of the run waits the next latency of one seeded sequence
    return dataclasses.replace(inner(request), latency_s=latency(next(count), 0))
with ModelServer(policy, port=int(sys.argv[1])) as server:
    print("ready", flush=True)
    sys.stdin.read()
"""


def ideal_s(episodes: int, level: int, mode: str) -> float:
    """The shortest possible episode phase: total wait over the slots, or the longest episode.

    The in-process agent waits ``latency(epoch, turn)``; the scripted server gives the
    run's requests the sequence ``latency(n, 0)`` in arrival order.
    """
    if mode.startswith("sdk"):
        waits = [latency(n, 0) for n in range(TURNS * episodes)]
        return sum(waits) / min(level, episodes)
    per_episode = [sum(latency(e, t) for t in range(TURNS)) for e in range(episodes)]
    return max(sum(per_episode) / min(level, episodes), max(per_episode))


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def child(target: str, episodes: int, level: int, workers: int, tmp: Path, profile: bool) -> dict:
    """One run in a fresh process; its figures."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    run_dir = tempfile.mkdtemp(dir=tmp)
    command = [sys.executable, "-c", CHILD, target, str(episodes), str(level), str(workers)]
    out = subprocess.run(
        [*command, run_dir, "1" if profile else "0"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    lines = out.stdout.strip().splitlines()
    row: dict = json.loads(lines[-1])
    for line in lines:
        if line.startswith("PROFILE "):
            row["profile"] = json.loads(line[len("PROFILE ") :])
    return row


def spread(values: list[float], fmt: str) -> str:
    """``median (min-max)``."""
    med = statistics.median(values)
    return f"{med:{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--levels", type=int, nargs="+", default=[100, 500, 1000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument(
        "--modes",
        nargs="+",
        default=["engine", "engine-workers", "harness", "harness-workers", "sdk"],
        choices=["engine", "engine-workers", "harness", "harness-workers", "sdk", "sdk-workers"],
    )
    parser.add_argument("--profile-sdk", action="store_true")
    args = parser.parse_args()
    cores = os.cpu_count()
    print(
        f"machine: {platform.machine()}, {cores} cores, Python {platform.python_version()}; "
        f"{args.episodes} episodes x {TURNS} calls, latency uniform 100-500 ms; "
        f"load average {os.getloadavg()[0]:.1f} at start"
    )
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    results: dict[tuple[str, int], list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = None
        if any(m.startswith("sdk") for m in args.modes) or args.profile_sdk:
            server = subprocess.Popen(
                [sys.executable, "-c", SERVER, str(port), str(HERE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
            )
            assert server.stdout is not None
            if server.stdout.readline().strip() != "ready":
                sys.exit("the scripted model server did not start")
            with urllib.request.urlopen(f"{base_url}/models", timeout=10):
                pass
        try:
            for rep in range(args.reps):
                for level in args.levels:
                    for mode in args.modes:
                        base = mode.split("-")[0]
                        target = base_url if base == "sdk" else base
                        workers = args.workers if mode.endswith("-workers") else 1
                        row = child(target, args.episodes, level, workers, tmp, False)
                        row["load"] = os.getloadavg()[0]
                        results.setdefault((mode, level), []).append(row)
                        print(
                            f"  rep {rep + 1} {mode:>15} {level:>5} in flight: "
                            f"{row['phase_s']:.1f} s, cpu {row['cpu_s']:.1f} s, "
                            f"load {row['load']:.1f}",
                            flush=True,
                        )
            print(
                f"\n{'mode':>15} {'flight':>6} {'phase s':>17} {'share of ideal':>18} "
                f"{'CPU ms/episode':>20} {'peak MB':>8} {'passed':>7} {'load':>9}"
            )
            for (mode, level), rows in results.items():
                ideal = ideal_s(args.episodes, level, mode)
                print(
                    f"{mode:>15} {level:>6} {spread([r['phase_s'] for r in rows], '.1f'):>17} "
                    f"{spread([ideal / r['phase_s'] for r in rows], '.0%'):>18} "
                    f"{spread([1000 * r['cpu_s'] / r['episodes'] for r in rows], '.2f'):>20} "
                    f"{statistics.median(r['peak_mb'] for r in rows):>8.0f} "
                    f"{min(r['passed'] for r in rows):>7} "
                    f"{spread([r['load'] for r in rows], '.1f'):>9}"
                )
            if args.profile_sdk:
                row = child(base_url, args.episodes, max(args.levels), 1, tmp, True)
                print("\nwhere the SDK path's CPU goes (share of profiled time, one run):")
                for key, share in sorted(row["profile"].items(), key=lambda kv: -kv[1]):
                    print(f"  {key:<28} {share:>6.1%}")
        finally:
            if server is not None:
                server.communicate(input="", timeout=30)
    print(f"load average {os.getloadavg()[0]:.1f} at the end; ideal = episodes' waits / in flight")


if __name__ == "__main__":
    main()
