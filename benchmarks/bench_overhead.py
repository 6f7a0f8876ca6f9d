"""Harness overhead per step against Inspect AI: the timed region and the whole process.

Workload: the core task ``stock-sum``: two inventory lookups at once, a calculator call,
then the answer (3 model turns), scored. Set-ups:

* **toolproof**: the ``toolproof run`` command at its defaults (snapshots on, the agent on
  its own thread, whatever the run chooses by itself for ``--parallel``, progress and
  summary printed) with a ``python:``
  agent that reads the conversation each turn (``benchmarks/_overhead_agent.py``), as
  Inspect AI's model callable does: it counts its turns, reads the lookups' results to
  write the calculation and reads the calculation for the answer;
* **Inspect AI**: its ``mockllm`` model with a callable that reads the conversation and
  makes the same calls, scored on the answer (``benchmarks/_inspect/stock_sum.py``), in the
  Python given (default: this one, where ``inspect-ai`` is installed as an extra);
* optionally (``--oracle``) toolproof's built-in oracle agent on the harness's loop, and
  (``--openai``) the ``openai:`` adapter through the official SDK against the scripted model
  server at zero latency (its harness share: the run's wall time minus the time waiting on
  the model, which every step records; one episode in flight).

Each set-up is a fresh process, measured twice: the **timed region** (``Runner.run`` for
toolproof, the ``eval`` call for Inspect AI: the episodes, their scoring and storage) and the
**whole process** (launch to exit: interpreter start, imports, loading the task, the run,
writing results), wall and CPU time (user + system, worker processes included), with the
peak resident memory of the process and of its largest child. Both sides keep the same
number of episodes in flight (``--parallel``, Inspect's ``max_samples``). The set-ups run
interleaved (A B A B ...) for ``--rounds`` rounds at each size of ``--sizes``; every figure
is a median with the range of the rounds; with more than one size, the per-step *marginal*
cost (the least-squares slope of timed wall time over steps: fixed costs drop out) is
printed too. The machine's cores and load average are printed with the figures.

Also times ``toolproof --help`` against ``inspect --help`` (interleaved, medians).

    python benchmarks/bench_overhead.py [--episodes 200] [--sizes 200] [--rounds 3]
        [--parallel 64] [--inspect-python PATH] [--oracle] [--openai]

Target (issue #34): whole-process CPU per step at least 10x below Inspect AI's.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    Load,
    ProcessRun,
    bench_env,
    chosen,
    interleave,
    median,
    run_cli,
    run_process,
    spread,
)

HERE = Path(__file__).resolve().parent
INSPECT_SCRIPT = HERE / "_inspect" / "stock_sum.py"
READER = "python:_overhead_agent:StockSumReader"
SCRIPT = """\
per_conversation: true
replies:
  - tool_calls:
      - {name: get_stock, arguments: {product_id: A}}
      - {name: get_stock, arguments: {product_id: B}}
  - tool_calls:
      - {name: calculate, arguments: {expression: "15 + 27"}}
  - tool_calls:
      - {name: submit_answer, arguments: {answer: 42}}
"""


def inspect_python(given: str | None) -> Path:
    """A Python with inspect-ai: the one given, this one if it has it, else a virtual
    environment made once under .cache/bench/ (this needs the package registry)."""
    if given:
        return Path(given)
    probe = subprocess.run([sys.executable, "-c", "import inspect_ai"], capture_output=True)
    if probe.returncode == 0:
        return Path(sys.executable)
    venv = HERE.parent / ".cache" / "bench" / "inspect-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        print("making a virtual environment with inspect-ai (once) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "inspect-ai"], check=True)
    return python


def _steps_and_waits(run_dir: Path) -> tuple[int, float, int]:
    """Steps, seconds waiting on the agent, and episodes passed, of a finished run."""
    from toolproof.results import RunReader

    steps, agent_s = 0, 0.0
    with RunReader(run_dir) as reader:
        for record in reader.records():
            steps += len(record.trajectory.steps)
            agent_s += sum(s.agent_s for s in record.trajectory.steps)
        passed = int((reader.summary() or {})["success"]["successes"])
    return steps, agent_s, passed


def toolproof_run(
    tmp: Path,
    agent: str,
    agent_args: list[str],
    size: int,
    parallel: int,
    options: tuple[str, ...] | list[str] = (),
) -> Callable[[int], dict[str, Any]]:
    """A set-up: ``toolproof run`` of stock-sum ``size`` times, at the defaults (plus
    ``options``)."""

    def setup(n: int) -> dict[str, Any]:
        run_dir = tmp / f"{agent.replace(':', '_')}{'-'.join(options)}-{size}-{n}"
        args = ["run", "core", "--agent", agent, "--task", "stock-sum", "--epochs", str(size)]
        args += ["--parallel", str(parallel), "--out", str(run_dir)]
        for arg in agent_args:
            args += ["--agent-arg", arg]
        args += options
        run = run_cli(args, bench_env(HERE), timed=True)
        steps, agent_s, passed = _steps_and_waits(run_dir)
        row = _row(run, steps, passed, agent_s)
        row["chose"] = chosen(run.stdout + run.stderr)
        return row

    return setup


def _row(run: ProcessRun, steps: int, passed: int, agent_s: float = 0.0) -> dict[str, Any]:
    return {
        "steps": steps,
        "passed": passed,
        "agent_s": agent_s,
        "timed_wall_s": run.inside["timed_wall_s"],
        "timed_cpu_s": run.inside["timed_cpu_s"],
        "wall_s": run.wall_s,
        "cpu_s": run.cpu_s,
        "rss_mb": run.inside.get("self_rss_mb", run.max_rss_mb),
        "children_rss_mb": run.inside.get("children_rss_mb", 0.0),
    }


def inspect_run(python: Path, size: int, parallel: int) -> Callable[[int], dict[str, Any]]:
    """A set-up: Inspect AI's eval of the same workload, in a fresh process."""

    def setup(n: int) -> dict[str, Any]:
        run = run_process([str(python), str(INSPECT_SCRIPT), str(size), str(parallel)])
        if run.returncode != 0:
            sys.exit(f"Inspect AI failed ({run.returncode}): {run.stderr[-1500:]}")
        result = json.loads(run.stdout.strip().splitlines()[-1])
        run.inside = {"timed_wall_s": result["wall_s"], "timed_cpu_s": result["cpu_s"]}
        row = _row(run, int(result["turns"]), int(result["passed"]))
        row["rss_mb"] = run.max_rss_mb  # the eval process (Inspect AI starts no workers here)
        return row

    return setup


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_scripted_server(tmp: Path) -> tuple[subprocess.Popen[bytes], str] | None:
    """The scripted model server in its own process, as a model endpoint would be."""
    try:
        import openai  # noqa: F401  (the adapter needs it)
    except ImportError:
        print("  (openai adapter run skipped: pip install 'toolproof[openai]')")
        return None
    port = _free_port()
    script = tmp / "script.yaml"
    script.write_text(SCRIPT)
    command = [sys.executable, "-m", "toolproof.testing", "--script", str(script)]
    server = subprocess.Popen(
        [*command, "--port", str(port), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=bench_env(),
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=1):
                return server, base_url
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.terminate()
                print("  (openai adapter run skipped: the scripted server did not start)")
                return None
            time.sleep(0.1)


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of y over x: the marginal cost of one more x."""
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


LABELS = {
    "toolproof": "toolproof, python: agent reading the conversation",
    "one-process": "toolproof, the same with --workers 1",
    "oracle": "toolproof, built-in oracle",
    "openai": "toolproof, openai SDK -> scripted server (harness share)",
    "inspect": "Inspect AI, mockllm callable reading the conversation",
}


def main() -> None:
    """Run the rounds and print the tables."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200, help="episodes at the main size")
    parser.add_argument("--sizes", type=int, nargs="+", help="sizes (default: --episodes)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parallel", type=int, default=64, help="in flight, both sides")
    parser.add_argument("--inspect-python")
    parser.add_argument("--no-inspect", action="store_true", help="toolproof's side only")
    parser.add_argument("--oracle", action="store_true", help="also the built-in oracle")
    parser.add_argument(
        "--no-one-process", action="store_true", help="leave out the --workers 1 row"
    )
    parser.add_argument("--openai", action="store_true", help="also the openai adapter")
    args = parser.parse_args()
    n, par = args.episodes, args.parallel
    sizes = sorted(set(args.sizes or [n]) | {n})
    python = None if args.no_inspect else inspect_python(args.inspect_python)
    load = Load()
    rows: dict[tuple[str, int], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = start_scripted_server(tmp) if args.openai else None
        try:
            for size in sizes:
                setups: dict[str, Callable[[int], dict[str, Any]]] = {
                    "toolproof": toolproof_run(tmp, READER, [], size, par)
                }
                if python is not None:
                    setups["inspect"] = inspect_run(python, size, par)
                if not args.no_one_process:
                    setups["one-process"] = toolproof_run(
                        tmp, READER, [], size, par, ["--workers", "1"]
                    )
                if args.oracle:
                    setups["oracle"] = toolproof_run(tmp, "oracle", [], size, par)
                if server is not None and size == n:
                    base = f"base_url={server[1]}"
                    setups["openai"] = toolproof_run(
                        tmp, "openai:scripted", [base, "api_key=test"], size, 1
                    )
                for name, results in interleave(setups, args.rounds, load).items():
                    rows[(name, size)] = results
        finally:
            if server is not None:
                server[0].terminate()
                server[0].wait(timeout=30)
    print(load.line())
    print(
        f"stock-sum, {n} episodes, {par} in flight (openai: 1), {args.rounds} interleaved "
        "rounds; toolproof at its defaults (snapshots on); median (range) over the rounds"
    )
    print(
        f"\n{'per step (ms)':<58} {'timed wall':>17} {'timed CPU':>17} {'process wall':>17} "
        f"{'process CPU':>17} {'peak MB':>8} {'+child':>7} {'passed':>8}"
    )
    per_step: dict[str, dict[str, float]] = {}
    for name, label in LABELS.items():
        results = rows.get((name, n))
        if not results:
            continue

        def ms(key: str, rs: list[dict[str, Any]] = results, of: str = name) -> list[float]:
            # the openai set-up's harness share: its wall time less the model's
            cut = "agent_s" if key == "timed_wall_s" and of == "openai" else None
            return [1000 * (r[key] - (r[cut] if cut else 0.0)) / r["steps"] for r in rs]

        keys = ("timed_wall_s", "timed_cpu_s", "wall_s", "cpu_s")
        per_step[name] = {k: median(ms(k)) for k in keys}
        print(
            f"{label:<58} "
            + " ".join(f"{spread(ms(k), '.2f'):>17}" for k in keys)
            + f" {median([r['rss_mb'] for r in results]):>8.0f}"
            + f" {median([r['children_rss_mb'] for r in results]):>7.0f}"
            + f" {min(r['passed'] for r in results):>4}/{n}"
        )
    for name in ("toolproof", "one-process"):
        if rows.get((name, n)):
            print(f"  {LABELS[name]}: {rows[(name, n)][0]['chose']}")
    if len(sizes) > 1:
        print("marginal wall ms per step (slope over sizes, timed region):")
        for name, label in LABELS.items():
            points = [
                (r["steps"], r["timed_wall_s"]) for s in sizes for r in rows.get((name, s), [])
            ]
            if len({x for x, _ in points}) > 1:
                print(f"  {label:<58} {1000 * slope(points):.2f}")
    if "inspect" in per_step and "toolproof" in per_step:
        theirs, ours = per_step["inspect"], per_step["toolproof"]
        print(
            "\nInspect AI / toolproof, CPU per step: "
            f"timed region {theirs['timed_cpu_s'] / ours['timed_cpu_s']:.1f}x, "
            f"whole process {theirs['cpu_s'] / ours['cpu_s']:.1f}x (target: at least 10x); "
            f"wall per step: timed {theirs['timed_wall_s'] / ours['timed_wall_s']:.1f}x, "
            f"whole process {theirs['wall_s'] / ours['wall_s']:.1f}x"
        )
    if "inspect" in per_step and "one-process" in per_step:
        theirs, ours = per_step["inspect"], per_step["one-process"]
        print(
            "Inspect AI / toolproof --workers 1, CPU per step: "
            f"timed region {theirs['timed_cpu_s'] / ours['timed_cpu_s']:.1f}x, "
            f"whole process {theirs['cpu_s'] / ours['cpu_s']:.1f}x"
        )
    cli_times(python, args.rounds)


def cli_times(python: Path | None, rounds: int) -> None:
    """``toolproof --help`` against ``inspect --help``, interleaved."""
    ours = [sys.executable, "-c", "import sys; from toolproof.cli import main; sys.exit(main())"]
    setups: dict[str, Callable[[int], ProcessRun]] = {
        "toolproof": lambda _: run_process([*ours, "--help"], bench_env())
    }
    inspect_cli = None if python is None else python.parent / "inspect"
    if inspect_cli is not None and inspect_cli.exists():
        setups["inspect"] = lambda _: run_process([str(inspect_cli), "--help"])
    runs = interleave(setups, rounds)
    print(
        "CLI start-up (--help, interleaved, wall ms median (range)): "
        + ", ".join(
            f"{name} {spread([r.wall_s for r in rs], '.0f', 1000)}" for name, rs in runs.items()
        )
    )


if __name__ == "__main__":
    main()
