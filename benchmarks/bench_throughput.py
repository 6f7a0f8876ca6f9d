"""Throughput at concurrency: 100 / 500 / 1,000 episodes in flight, model latency 100-500 ms.

Episodes of the core task ``stock-sum`` (3 model calls each). Each model call waits a
latency drawn uniformly from 100-500 ms, seeded per (epoch, turn), so every mode and
repetition waits the same and the ideal time is known exactly: the sum of every
episode's waits divided by the number in flight (or the longest episode, if longer).
The share of ideal is ideal time / measured episode phase (the start of the run proper
to the last stored episode). Every mode runs the ``toolproof run`` command itself in a
fresh process (its progress lines and summary table printed, to a file, as by default)
with an in-process agent that waits (``benchmarks/_throughput_agent.py``, a ``python:``
agent):

* ``defaults`` (**the headline**): ``--parallel N`` and nothing else: what a user who
  types ``toolproof run ... --parallel 1000`` gets, whatever the run then chooses itself
  (worker processes, where the agent's loop runs);
* ``flags`` (the second row): the same with ``--workers <cores> --agent-arg loop=harness``
  (a worker process per core, the agent on the harness's loop: no thread hops);
* ``one-process``: ``--workers 1`` (one process, the agent on its own thread);
  ``harness``: ``--workers 1 --agent-arg loop=harness``: the engine's own cost;
* ``sdk``: the ``openai:`` adapter (official SDK, httpx) against the scripted model
  server in its own process, which waits the same latencies; ``sdk-workers`` with a
  worker process per core (neither in the default modes).

Runs are interleaved (mode by mode, level by level, repetition after repetition) and
each figure is the median of ``--reps`` with the range beside it. Beside wall time: CPU
time per episode of the run proper (``Runner.run``: the command's process and its worker
processes) and of the whole process (launch to exit, imports included); peak memory of the
command's process and of its largest worker (``RUSAGE_CHILDREN``), and, for modes with
workers, parent + workers x largest as an upper bound of the total. The machine's cores
and load average are printed with them.

    python benchmarks/bench_throughput.py [--episodes 3000] [--levels 100 500 1000] [--reps 3]
        [--modes defaults flags one-process harness sdk]

Target (issue #34): at defaults, 1,000 in flight, at least 80% of ideal on an idle
2-core machine.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _common import Load, bench_env, chosen, median, run_cli, spread  # noqa: E402
from _throughput_agent import TURNS, latency  # noqa: E402

AGENT = "python:_throughput_agent:StockSum"
MODES = ["defaults", "flags", "one-process", "harness", "sdk", "sdk-workers"]

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
    ScriptedReply(tool_calls=[ScriptedToolCall(name="submit_answer", arguments={"answer": 42})]),
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


def mode_args(mode: str, workers: int, base_url: str) -> list[str]:
    """The command-line options of a mode, beyond the suite, task, epochs and --parallel."""
    if mode.startswith("sdk"):
        args = ["--agent", "openai:scripted", "--agent-arg", f"base_url={base_url}"]
        args += ["--agent-arg", "api_key=test", "--agent-arg", "timeout=120"]
        return args + (["--workers", str(workers)] if mode == "sdk-workers" else [])
    args = ["--agent", AGENT]
    if mode == "flags":
        args += ["--workers", str(workers), "--agent-arg", "loop=harness"]
    elif mode == "one-process":
        args += ["--workers", "1"]
    elif mode == "harness":
        args += ["--workers", "1", "--agent-arg", "loop=harness"]
    return args


def one_run(mode: str, episodes: int, level: int, workers: int, base_url: str, tmp: Path) -> dict:
    """One ``toolproof run`` in a fresh process; its figures."""
    run_dir = Path(tempfile.mkdtemp(dir=tmp)) / "run"
    args = ["run", "core", "--task", "stock-sum", "--epochs", str(episodes)]
    args += ["--parallel", str(level), "--out", str(run_dir)]
    run = run_cli([*args, *mode_args(mode, workers, base_url)], bench_env(HERE), timed=True)
    from toolproof.results import RunReader

    with RunReader(run_dir) as reader:
        summary = reader.summary() or {}
    return {
        "phase_s": run.inside["phase_s"],
        "cpu_s": run.inside["timed_cpu_s"],
        "process_cpu_s": run.cpu_s,
        "process_wall_s": run.wall_s,
        "peak_mb": run.inside["self_rss_mb"],
        "child_peak_mb": run.inside["children_rss_mb"],
        "passed": summary["success"]["successes"],
        "episodes": summary["episodes"]["finished"],
        "chose": chosen(run.stdout + run.stderr),
    }


def main() -> None:
    """Run the modes, interleaved, and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3000)
    parser.add_argument("--levels", type=int, nargs="+", default=[100, 500, 1000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="for flags")
    parser.add_argument(
        "--modes", nargs="+", default=["defaults", "flags", "one-process", "harness"], choices=MODES
    )
    args = parser.parse_args()
    load = Load()
    print(
        f"{args.episodes} episodes x {TURNS} calls, latency uniform 100-500 ms; modes "
        f"{', '.join(args.modes)}; {args.reps} interleaved repetitions",
        flush=True,
    )
    port = free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    results: dict[tuple[str, int], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        server = None
        if any(m.startswith("sdk") for m in args.modes):
            server = subprocess.Popen(
                [sys.executable, "-c", SERVER, str(port), str(HERE)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=bench_env(),
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
                        row = one_run(mode, args.episodes, level, args.workers, base_url, tmp)
                        row["load"] = load.sample()
                        results.setdefault((mode, level), []).append(row)
                        print(
                            f"  rep {rep + 1} {mode:>12} {level:>5} in flight: "
                            f"{row['phase_s']:.1f} s, cpu {row['cpu_s']:.1f} s, "
                            f"load {row['load']:.1f}",
                            flush=True,
                        )
        finally:
            if server is not None:
                server.communicate(input="", timeout=30)
    print(load.line())
    print(
        f"\n{'mode':>12} {'flight':>6} {'phase s':>17} {'share of ideal':>17} "
        f"{'CPU ms/episode':>18} {'process CPU ms/ep':>18} {'peak MB':>8} {'worker MB':>9} "
        f"{'passed':>7}"
    )
    for (mode, level), rows in results.items():
        ideal = ideal_s(args.episodes, level, mode)
        n = args.episodes
        print(
            f"{mode:>12} {level:>6} {spread([r['phase_s'] for r in rows], '.1f'):>17} "
            f"{spread([ideal / r['phase_s'] for r in rows], '.0%'):>17} "
            f"{spread([r['cpu_s'] / n for r in rows], '.2f', 1000):>18} "
            f"{spread([r['process_cpu_s'] / n for r in rows], '.2f', 1000):>18} "
            f"{median([r['peak_mb'] for r in rows]):>8.0f} "
            f"{median([r['child_peak_mb'] for r in rows]):>9.0f} "
            f"{min(r['passed'] for r in rows):>7}"
        )
    print(
        "ideal = episodes' waits / in flight; worker MB: the largest child process's peak "
        "(for modes with workers the total is at most peak MB + workers x worker MB; without "
        "workers, a helper forked from the run, whose shared pages count)"
    )
    for (mode, level), rows in results.items():
        if mode == "defaults":
            print(f"defaults at {level} in flight: {rows[0]['chose']}")


if __name__ == "__main__":
    main()
