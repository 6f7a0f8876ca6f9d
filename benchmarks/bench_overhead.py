"""Harness overhead per step and per episode, against Inspect AI, measured in one run.

Workload: the core task ``stock-sum`` — two inventory lookups at once, a
calculator call, then the answer (3 model turns, 3 tool calls) — over 200
episodes, in three set-ups:

* toolproof, in-process scripted agent (the oracle makes exactly these calls):
  everything measured is harness;
* toolproof, ``openai:`` adapter through the official SDK against the scripted
  model server at zero latency: the harness overhead is the wall time minus the
  time spent waiting on the model, which every step records (run sequentially so
  the two add up);
* Inspect AI, its ``mockllm`` model scripted to make the same calls
  (``benchmarks/_inspect/stock_sum.py``), in its own virtual environment.

Also times ``toolproof --help`` against ``inspect --help``.

    python benchmarks/bench_overhead.py [--episodes 200] [--inspect-python PATH]

Without ``--inspect-python`` a virtual environment with ``inspect-ai`` is made
once under ``.cache/bench/`` (this needs the package registry).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from toolproof.engine import RunConfig, Runner
from toolproof.results import RunReader
from toolproof.spec import load_suite, resolve_suite_path

ROOT = Path(__file__).resolve().parent.parent
INSPECT_SCRIPT = ROOT / "benchmarks" / "_inspect" / "stock_sum.py"


def inspect_python(given: str | None) -> Path:
    """A Python with inspect-ai installed (made once under .cache/bench/ if not given)."""
    if given:
        return Path(given)
    venv = ROOT / ".cache" / "bench" / "inspect-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        print("making a virtual environment with inspect-ai (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "inspect-ai"], check=True)
    return python


def run_toolproof(
    agent: str, options: dict[str, object], episodes: int, parallel: int
) -> dict[str, float]:
    """Run stock-sum ``episodes`` times; return wall time, steps and agent (model) time."""
    suite = load_suite("core")
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent=agent,
        agent_options=options,
        epochs=episodes,
        tasks=["stock-sum"],
        snapshots=False,
    )
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        summary = asyncio.run(
            Runner(config, Path(tmp) / "run", parallel=parallel, suite=suite).run()
        )
        wall = time.perf_counter() - start
        steps = agent_s = 0.0
        with RunReader(Path(tmp) / "run") as reader:
            for record in reader.records():
                steps += len(record.trajectory.steps)
                agent_s += sum(s.agent_s for s in record.trajectory.steps)
    return {
        "wall_s": wall,
        "steps": steps,
        "agent_s": agent_s,
        "passed": summary["success"]["successes"],
    }


SCRIPT = """\
per_conversation: true
replies:
  - tool_calls:
      - {name: get_stock, arguments: {product_id: A}}
      - {name: get_stock, arguments: {product_id: B}}
  - tool_calls:
      - {name: calculate, arguments: {expression: "15 + 27"}}
  - content: A and B have 42 units together.
"""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def scripted_openai(episodes: int) -> dict[str, float] | None:
    """toolproof through the openai adapter against the scripted server (None if unavailable).

    The server runs in its own process (``python -m toolproof.testing``), as a real
    model endpoint would, so its work does not compete with the harness for the GIL.
    """
    try:
        import openai  # noqa: F401  (the adapter needs it)
    except ImportError:
        print("  (openai adapter run skipped: pip install 'toolproof[openai]')")
        return None
    port = _free_port()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.yaml"
        script.write_text(SCRIPT)
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolproof.testing",
                "--script",
                str(script),
                "--port",
                str(port),
                "--quiet",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base_url = f"http://127.0.0.1:{port}/v1"
            deadline = time.monotonic() + 30
            while True:
                try:
                    with urllib.request.urlopen(f"{base_url}/models", timeout=1):
                        break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        print("  (openai adapter run skipped: the scripted server did not start)")
                        return None
                    time.sleep(0.1)
            return run_toolproof(
                "openai:scripted", {"base_url": base_url, "api_key": "test"}, episodes, 1
            )
        finally:
            server.terminate()
            server.wait(timeout=30)


def inspect_run(python: Path, episodes: int) -> dict[str, float]:
    """Inspect AI on the same workload."""
    out = subprocess.run(
        [str(python), str(INSPECT_SCRIPT), str(episodes)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def cli_time(command: list[str], repeats: int = 5) -> float:
    """Median wall time of a command, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--inspect-python")
    args = parser.parse_args()
    python = inspect_python(args.inspect_python)
    n = args.episodes
    machine = f"{platform.machine()}, Python {platform.python_version()}"
    print(f"machine: {machine}; {n} episodes of stock-sum")

    local = run_toolproof("oracle", {}, n, 64)
    local_step = 1000 * local["wall_s"] / local["steps"]
    print(
        f"toolproof, in-process agent:  {1000 * local['wall_s'] / n:6.2f} ms/episode, "
        f"{local_step:5.2f} ms/step  ({int(local['passed'])}/{n} passed)"
    )

    http = scripted_openai(n)
    overhead_step = None
    if http is not None:
        harness = http["wall_s"] - http["agent_s"]
        overhead_step = 1000 * harness / http["steps"]
        print(
            f"toolproof, openai SDK over HTTP: {1000 * http['wall_s'] / n:6.2f} ms/episode wall, "
            f"model wait {1000 * http['agent_s'] / http['steps']:.2f} ms/step, "
            f"harness overhead {overhead_step:.2f} ms/step, {1000 * harness / n:.2f} ms/episode  "
            f"({int(http['passed'])}/{n} passed)"
        )

    inspect = inspect_run(python, n)
    inspect_step = 1000 * inspect["wall_s"] / inspect["turns"]
    print(
        f"Inspect AI, mockllm:          {1000 * inspect['wall_s'] / n:6.2f} ms/episode, "
        f"{inspect_step:5.2f} ms/step  ({int(inspect['passed'])}/{n} passed)"
    )
    ratio = inspect_step / local_step
    print(f"ratio, Inspect AI / toolproof per step (in-process agents): {ratio:.1f}x")
    if overhead_step:
        print(
            f"ratio, Inspect AI / toolproof harness overhead per step:  "
            f"{inspect_step / overhead_step:.1f}x"
        )

    script = Path(sys.executable).parent / "toolproof"
    ours = cli_time(
        [str(script), "--help"]
        if script.exists()
        else [sys.executable, "-m", "toolproof", "--help"]
    )
    theirs = cli_time([str(python.parent / "inspect"), "--help"])
    print(
        f"CLI start-up (--help, median of 5): toolproof {ours:.2f}s, Inspect AI {theirs:.2f}s, "
        f"ratio {theirs / ours:.1f}x"
    )


if __name__ == "__main__":
    main()
