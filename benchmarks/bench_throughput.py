"""Throughput at concurrency: episodes against a model that takes 200 ms per call.

2,000 episodes of the core task ``stock-sum`` (3 model calls each) through the
``openai:`` adapter against the scripted model server (its own process) with
200 ms latency per call, at several ``--parallel`` levels; then the same with
an in-process agent that waits 200 ms per turn (the engine alone, without the
SDK's and HTTP's CPU cost). For each level it prints model calls per second
against the ideal (concurrency / latency) over the episode phase (start to the last
stored episode), the harness process's peak memory, and the one-off final summary's time.

    python benchmarks/bench_throughput.py [--episodes 2000] [--latency 0.2] [--levels 100 500 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHILD = r"""
import asyncio, json, resource, sys, time
from pathlib import Path
from toolproof.engine import RunConfig, Runner
from toolproof.spec import load_suite, resolve_suite_path

base_url, episodes, parallel, run_dir = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
if base_url.startswith("oracle:"):  # the engine alone: the model's wait is simulated in-process
    agent, options = "oracle", {"delay_s": float(base_url.split(":")[1])}
else:
    agent, options = "openai:scripted", {"base_url": base_url, "api_key": "test", "timeout": 120}
config = RunConfig(suite=str(resolve_suite_path("core")), agent=agent, agent_options=options,
                   epochs=episodes, tasks=["stock-sum"], snapshots=False)
start = time.perf_counter()
last = [0.0]
def on_episode(record):
    last[0] = time.perf_counter()
runner = Runner(config, Path(run_dir), parallel=parallel, suite=load_suite("core"),
                on_episode=on_episode)
summary = asyncio.run(runner.run())
wall = time.perf_counter() - start
print(json.dumps({"wall_s": last[0] - start, "total_s": wall,
                  "passed": summary["success"]["successes"],
                  "episodes": summary["episodes"]["finished"],
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def script(latency: float) -> str:
    """The scripted model: two lookups at once, a calculation, the answer; each call waits."""
    return f"""\
per_conversation: true
replies:
  - latency_s: {latency}
    tool_calls:
      - {{name: get_stock, arguments: {{product_id: A}}}}
      - {{name: get_stock, arguments: {{product_id: B}}}}
  - latency_s: {latency}
    tool_calls:
      - {{name: calculate, arguments: {{expression: "15 + 27"}}}}
  - latency_s: {latency}
    content: A and B have 42 units together.
"""


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--levels", type=int, nargs="+", default=[100, 500, 1000])
    args = parser.parse_args()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    print(
        f"machine: {platform.machine()}, Python {platform.python_version()}; "
        f"{args.episodes} episodes x 3 calls, {1000 * args.latency:.0f} ms per call"
    )
    print(
        f"{'parallel':>8} {'wall s':>7} {'calls/s':>8} {'ideal':>7} {'share':>6} "
        f"{'peak MB':>8} {'passed':>7} {'+summary s':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "script.yaml"
        path.write_text(script(args.latency))
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolproof.testing",
                "--script",
                str(path),
                "--port",
                str(port),
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        sys.exit("the scripted model server did not start")
                    time.sleep(0.1)
            modes = [("openai SDK over HTTP", base_url), ("engine alone", f"oracle:{args.latency}")]
            for label, target in modes:
                print(label)
                for level in args.levels:
                    run_dir = Path(tmp) / f"run-{len(label)}-{level}"
                    command = [sys.executable, "-c", CHILD, target, str(args.episodes), str(level)]
                    out = subprocess.run(
                        [*command, str(run_dir)], check=True, capture_output=True, text=True
                    )
                    row = json.loads(out.stdout.strip().splitlines()[-1])
                    calls = 3 * row["episodes"]
                    rate = calls / row["wall_s"]
                    ideal = min(level, args.episodes) / args.latency
                    print(
                        f"{level:>8} {row['wall_s']:>7.1f} {rate:>8.0f} {ideal:>7.0f} "
                        f"{rate / ideal:>6.0%} {row['peak_mb']:>8.0f} {row['passed']:>7} "
                        f"{row['total_s'] - row['wall_s']:>10.1f}",
                        flush=True,
                    )
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
