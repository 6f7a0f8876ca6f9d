"""Harness overhead per step and per episode, against Inspect AI, measured in one run.

Workload: the core task ``stock-sum`` — two inventory lookups at once, a
calculator call, then the answer (3 model turns, 3 tool calls), scored — in
three set-ups:

* toolproof, in-process scripted agent (the oracle makes exactly these calls):
  everything measured is harness;
* toolproof, ``openai:`` adapter through the official SDK against the scripted
  model server at zero latency: the harness overhead is the wall time minus the
  time spent waiting on the model, which every step records (run sequentially so
  the two add up);
* Inspect AI, its ``mockllm`` model scripted to make the same calls, with a scorer
  on the answer (``benchmarks/_inspect/stock_sum.py``), in its own virtual
  environment.

Fairness: toolproof runs at its default settings (per-step snapshots on); both
sides keep the same number of episodes in flight (``--parallel``, Inspect's
``max_samples``); the set-ups run interleaved (A B C A B C ...) for ``--rounds``
rounds at each of three sizes (n/4, n/2, n episodes), so load drifts hit all
alike; every figure is a median over the rounds with its range, with CPU time
(this process for toolproof, the eval process for Inspect AI) beside wall time;
and the per-step *marginal* cost (the least-squares slope of time over steps across
the three sizes: fixed set-up costs drop out) is printed beside the per-step average
at n. The machine's core count and load are printed with the figures.

Also times ``toolproof --help`` against ``inspect --help`` (interleaved, medians).

    python benchmarks/bench_overhead.py [--episodes 200] [--rounds 5] [--inspect-python PATH]

Without ``--inspect-python`` a virtual environment with ``inspect-ai`` is made
once under ``.cache/bench/`` (this needs the package registry).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
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
    """Run stock-sum ``episodes`` times at toolproof's defaults (snapshots on); return wall
    and CPU time, steps, agent (model) time and episodes passed."""
    suite = load_suite("core")
    config = RunConfig(
        suite=str(resolve_suite_path("core")),
        agent=agent,
        agent_options=options,
        epochs=episodes,
        tasks=["stock-sum"],
    )
    with tempfile.TemporaryDirectory() as tmp:
        start, cpu_start = time.perf_counter(), time.process_time()
        summary = asyncio.run(
            Runner(config, Path(tmp) / "run", parallel=parallel, suite=suite).run()
        )
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        steps = agent_s = 0.0
        with RunReader(Path(tmp) / "run") as reader:
            for record in reader.records():
                steps += len(record.trajectory.steps)
                agent_s += sum(s.agent_s for s in record.trajectory.steps)
    return {
        "wall_s": wall,
        "cpu_s": cpu,
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


def inspect_run(python: Path, episodes: int, parallel: int) -> dict[str, float]:
    """Inspect AI on the same workload (wall and CPU time of its ``eval`` call)."""
    out = subprocess.run(
        [str(python), str(INSPECT_SCRIPT), str(episodes), str(parallel)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x: the marginal cost of one more x."""
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


def spread(values: list[float]) -> str:
    """Median and range, e.g. ``0.54 (0.50-0.61)``."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--parallel", type=int, default=64, help="in flight, both sides")
    parser.add_argument("--inspect-python")
    parser.add_argument(
        "--no-inspect", action="store_true", help="toolproof's side only (no Inspect AI here)"
    )
    args = parser.parse_args()
    python = None if args.no_inspect else inspect_python(args.inspect_python)
    n, par = args.episodes, args.parallel
    sizes = [max(4, n // 4), max(8, n // 2), n]
    loads = [os.getloadavg()[0]]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; stock-sum at sizes {sizes}, {args.rounds} interleaved "
        f"rounds, {par} in flight, toolproof with snapshots on (its default)"
    )
    # (set-up, size) -> per round: ms per step wall, ms per step CPU; and (steps, s) points
    per_step: dict[tuple[str, int], list[tuple[float, float]]] = {}
    points: dict[str, list[tuple[float, float]]] = {}
    passed: dict[str, str] = {}
    have_http = True
    for _ in range(args.rounds):
        for size in sizes:
            runs: dict[str, dict[str, float] | None] = {
                "toolproof": run_toolproof("oracle", {}, size, par),
                "inspect": None if python is None else inspect_run(python, size, par),
            }
            if have_http and size == n:
                runs["openai"] = scripted_openai(size)
                have_http = runs["openai"] is not None
            for name, run in runs.items():
                if run is None:
                    continue
                steps = run.get("steps") or run["turns"]
                wall = run["wall_s"] - run.get("agent_s", 0.0)  # openai: the harness share
                per_step.setdefault((name, size), []).append(
                    (1000 * wall / steps, 1000 * run["cpu_s"] / steps)
                )
                points.setdefault(name, []).append((steps, wall))
                passed[name] = f"{int(run['passed'])}/{size}"
            loads.append(os.getloadavg()[0])
    print(f"load average (1 min) while measuring: {min(loads):.2f}-{max(loads):.2f}")
    labels = {
        "toolproof": "toolproof, in-process scripted agent (all harness)",
        "openai": "toolproof, openai SDK -> scripted server, harness share",
        "inspect": "Inspect AI, mockllm (all harness)",
    }
    print(f"per step at n={n}: wall ms median (range), CPU ms median (range); marginal ms/step")
    medians: dict[str, float] = {}
    cpu_medians: dict[str, float] = {}
    for name, label in labels.items():
        rows = per_step.get((name, n))
        if not rows:
            continue
        walls, cpus = [r[0] for r in rows], [r[1] for r in rows]
        medians[name] = statistics.median(walls)
        cpu_medians[name] = statistics.median(cpus)
        marginal = f"{1000 * slope(points[name]):.2f}" if name != "openai" else "(one size only)"
        print(
            f"  {label:<58} {spread(walls)}  CPU {spread(cpus)}  marginal {marginal}  "
            f"passed {passed[name]}"
        )
    if "inspect" in medians and "toolproof" in medians:
        print(
            f"Inspect AI / toolproof per step (in-process agents): "
            f"{medians['inspect'] / medians['toolproof']:.1f}x average, "
            f"{slope(points['inspect']) / slope(points['toolproof']):.1f}x marginal, "
            f"{cpu_medians['inspect'] / cpu_medians['toolproof']:.1f}x CPU"
        )
    if "inspect" in medians and "openai" in medians:
        print(
            f"Inspect AI / toolproof harness share through the OpenAI SDK: "
            f"{medians['inspect'] / medians['openai']:.1f}x"
        )
    ours_cmd = [sys.executable, "-c", "from toolproof.cli import main; main()", "--help"]
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(cli_time(ours_cmd, 1))
        if python is not None:
            theirs.append(cli_time([str(python.parent / "inspect"), "--help"], 1))
    inspect_cli = f", Inspect AI {statistics.median(theirs):.3f}s" if theirs else ""
    print(
        f"CLI start-up (--help, interleaved, median of {args.rounds}): toolproof "
        f"{statistics.median(ours):.3f}s{inspect_cli}"
    )


def cli_time(command: list[str], repeats: int = 5) -> float:
    """Median wall time of a command, in seconds."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


if __name__ == "__main__":
    main()
