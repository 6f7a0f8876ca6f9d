"""Time to first page of ``toolproof view`` on a synthetic 20,000-episode run.

Builds a run directory through :class:`toolproof.results.RunStore` (no engine, no
agent: records are made up, deterministically), then:

* **from launch** (the headline): starts ``toolproof view RUNS --port P`` as a fresh
  process, ``--launches`` times, and times from process launch to the port accepting, to the
  run page's HTML, and to the first table row: the page's scripts and stylesheet and the
  first page of episodes (``/api/runs/synthetic/episodes?limit=50``, what the page's
  script asks for first) fetched as a browser would after the HTML; the viewer process's
  CPU time until then (``/proc/PID/stat``) is printed beside the wall time;
* in a thread (the viewer already up): the run page and its first API page, cold and
  warm, the filters and search, one episode, and the overview without ``overview.json``.

Usage::

    .venv/bin/python benchmarks/bench_viewer.py [--episodes 20000] [--launches 5] [--keep DIR]
        [--browser]

Targets: issue #34, the first table row within 1 s of launching ``toolproof view``;
issue #15, the first page and the run overview under a second in headless Chromium with
a cold viewer (``--browser``), filters and search under 100 ms. The run is finished as
``toolproof run`` finishes one: ``run.db``'s indexes and the stored overview
(``overview.json``); the overview is also timed without that file.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from _common import Load, bench_env, spread

from toolproof.metrics import summarize
from toolproof.results import EpisodeRecord, RunStore
from toolproof.viewer import running_viewer, write_overview
from toolproof.viewer._overview import OVERVIEW

CATEGORIES = ["normal", "adversarial", "ambiguous", "long_horizon"]
TYPES = ["single_tool", "multi_step", "conditional", "tool_learning", "recovery"]
LEVELS = ["perfect", "acceptable", "partial", "fail"]
FAILURE_MODES = ["wrong_answer", "wrong_tool", "collateral_damage", "gave_up", "loop"]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
QUERIES = [
    "passed=0",
    "level=partial&sort=duration_s&dir=desc",
    "category=adversarial&type=recovery&sort=cost_usd",
    "q=task-01",
    "q=wrong_answer&sort=n_steps&dir=desc",
    "q=task",
    "passed=0&q=task-01&sort=duration_s&dir=desc",
    "q=zz-no-such",
    "offset=19950",
]
TERMINATIONS = ["completed", "completed", "completed", "step_limit", "gave_up", "timeout"]


def _step(rng: random.Random, index: int, last: bool) -> dict[str, Any]:
    calls = (
        []
        if last
        else [
            {
                "id": f"call_{index}_{j}",
                "name": rng.choice(["read_file", "write_file", "get_stock"]),
                "arguments": {
                    "path": f"/workspace/f{rng.randrange(50)}.txt",
                    "n": rng.randrange(9),
                },
            }
            for j in range(rng.randrange(1, 3))
        ]
    )
    return {
        "index": index,
        "message": {
            "role": "assistant",
            "content": "done: 42" if last else None,
            "tool_calls": calls,
        },
        "results": [
            {
                "call_id": c["id"],
                "name": c["name"],
                "content": "ok " * rng.randrange(1, 40),
                "duration_s": rng.random() / 100,
            }
            for c in calls
        ],
        "usage": {
            "input_tokens": rng.randrange(200, 4000),
            "output_tokens": rng.randrange(10, 400),
            "cost_usd": rng.random() / 500,
        },
        "agent_s": rng.random() * 3,
        "tool_s": rng.random() / 10,
        "state_digest": f"{rng.getrandbits(128):032x}",
        "diff": {
            "records": {f"products.p{index}.stock": [rng.randrange(9), rng.randrange(9)]},
            "files_modified": [f"f{index}.txt"],
        }
        if calls and rng.random() < 0.5
        else None,
    }


def synthetic_record(rng: random.Random, task: int, epoch: int) -> EpisodeRecord:
    """A made-up but valid episode record."""
    level = rng.choice(LEVELS)
    passed = level in ("perfect", "acceptable")
    n_steps = rng.randrange(1, 8)
    steps = [_step(rng, i, i == n_steps - 1) for i in range(n_steps)]
    task_id = f"task-{task:04d}"
    return EpisodeRecord.model_validate(
        {
            "key": f"{task_id}#{epoch}",
            "task": {
                "id": task_id,
                "type": TYPES[task % len(TYPES)],
                "category": CATEGORIES[task % len(CATEGORIES)],
                "difficulty": 1 + task % 3,
                "domain": rng.choice(["files", "inventory", "orders"]),
            },
            "epoch": epoch,
            "seed": rng.getrandbits(32),
            "agent": "synthetic",
            "score": {
                "passed": passed,
                "level": level,
                "fraction": 1.0 if passed else rng.random(),
                "checks": [
                    {
                        "name": "state_ok",
                        "kind": "state",
                        "passed": passed,
                        "score": 1.0 if passed else 0.0,
                        "detail": "expected 3, found 2",
                    }
                ],
                "termination": "completed" if passed else rng.choice(TERMINATIONS),
                "tool_calls": sum(len(s["message"]["tool_calls"]) for s in steps),
                "failure_mode": None if passed else rng.choice(FAILURE_MODES),
            },
            "trajectory": {
                "episode_id": f"{task_id}#{epoch}",
                "task_id": task_id,
                "epoch": epoch,
                "seed": 0,
                "agent": "synthetic",
                "termination": "completed",
                "prompt": [{"role": "user", "content": f"Do task {task_id}."}],
                "steps": steps,
                "final_answer": "42",
                "started_at": "2026-01-01T00:00:00+00:00",
                "duration_s": rng.random() * 20,
            },
        }
    )


def build_run(run_dir: Path, episodes: int, epochs: int = 5, seed: int = 0) -> None:
    """Write a finished synthetic run of ``episodes`` episodes to ``run_dir``."""
    rng = random.Random(seed)
    meta = {
        "config": {"agent": "synthetic", "epochs": epochs},
        "track": "standard",
        "suite": {"name": "synthetic", "version": "1.0.0", "seed": seed},
        "planned": episodes,
    }
    store = RunStore(run_dir)
    try:
        store.set_meta(meta)
        records = [synthetic_record(rng, i // epochs, i % epochs) for i in range(episodes)]
        for record in records:
            store.append(record)
        store.finalize(summarize(records, meta))
    finally:
        store.close()
    write_overview(run_dir)  # as `toolproof run` does when a run finishes


def fetch(base: str, path: str) -> tuple[float, bytes]:
    """GET over a fresh connection with TCP_NODELAY, as a browser does; (seconds, body)."""
    url = urlsplit(base)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
    try:
        conn.connect()
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        if response.status != 200:
            raise RuntimeError(f"GET {path}: HTTP {response.status}: {body[:200]!r}")
    finally:
        conn.close()
    return time.perf_counter() - started, body


def _cpu_s(pid: int) -> float:
    """CPU time (user + system) of a running process so far, from ``/proc/PID/stat``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def launch_to_first_row(runs: Path) -> dict[str, float]:
    """Launch ``toolproof view`` and time it, as a person opening the run page would see
    it: seconds to the open port, to the page's HTML and to the first table row, and the
    viewer's CPU seconds until then."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    entry = "import sys; from toolproof.cli import main; sys.exit(main())"
    command = [sys.executable, "-c", entry, "view", str(runs), "--port", str(port)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        command, env=bench_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.perf_counter() - started > 120:
                    raise RuntimeError("toolproof view did not start") from None
                time.sleep(0.002)
        port_s = time.perf_counter() - started
        _, html = fetch(base, "/runs/synthetic")
        page_s = time.perf_counter() - started
        for asset in ("/static/app.css", "/static/app.js", "/static/charts.js", "/static/run.js"):
            fetch(base, asset)
        _, body = fetch(base, "/api/runs/synthetic/episodes?limit=50")
        row_s = time.perf_counter() - started
        cpu = _cpu_s(proc.pid)
        if not json.loads(body)["rows"] or b"synthetic" not in html:
            raise RuntimeError("the first page has no rows")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {"port_s": port_s, "page_s": page_s, "row_s": row_s, "cpu_s": cpu}


def browser_first_page(base: str) -> tuple[float, float] | None:
    """Seconds from navigation to the first table row, and to the overview (cards and
    charts) drawn, in headless Chromium; None without playwright or chromium."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return None
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            started = time.perf_counter()
            page.goto(f"{base}/runs/synthetic")
            page.wait_for_selector("#episodes tbody tr[data-key]", timeout=60_000)
            first_row = time.perf_counter() - started
            page.wait_for_selector("#charts[data-state=ready]", timeout=60_000)
            return first_row, time.perf_counter() - started
        finally:
            browser.close()


def main() -> None:
    """Build the run, start the viewer and print the time to first page."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20_000)
    parser.add_argument("--launches", type=int, default=5, help="launches of toolproof view")
    parser.add_argument("--keep", type=Path, help="Build the run in this folder and keep it.")
    parser.add_argument("--browser", action="store_true", help="Also time it in headless Chromium.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.keep or Path(tmp)
        run_dir = runs / "synthetic"
        started = time.perf_counter()
        if not (run_dir / "run.db").exists():
            build_run(run_dir, args.episodes)
            print(f"built {args.episodes} episodes in {time.perf_counter() - started:.1f} s")
        load = Load()
        launches = []
        for _ in range(args.launches):
            launches.append(launch_to_first_row(runs))
            load.sample()
        print(load.line())
        print(
            f"toolproof view, from launch ({args.launches} launches, {args.episodes} episodes), "
            "ms median (range):"
        )
        for key, label in (
            ("port_s", "port open"),
            ("page_s", "run page HTML"),
            ("row_s", "first table row (page, its scripts, first rows)"),
            ("cpu_s", "viewer CPU until the first row"),
        ):
            print(f"  {label:<48} {spread([r[key] for r in launches], '.0f', 1000)}")
        if args.browser:  # first, on a fresh viewer: nothing cached in memory yet
            with running_viewer(runs) as base:
                took = browser_first_page(base)
            if took is None:
                print("browser: skipped (playwright or chromium missing)")
            else:
                print(
                    f"browser, cold viewer: first table row after {1000 * took[0]:.0f} ms, "
                    f"overview drawn after {1000 * took[1]:.0f} ms"
                )
        with running_viewer(runs) as base:
            for label in ("cold", "warm"):
                html, _ = fetch(base, "/runs/synthetic")
                first, body = fetch(base, "/api/runs/synthetic/episodes?limit=50")
                page = json.loads(body)
                overview, _ = fetch(base, "/api/runs/synthetic")
                print(
                    f"{label}: run page HTML {1000 * html:.0f} ms + first page of episodes "
                    f"{1000 * first:.0f} ms ({len(page['rows'])} of {page['total']}) = "
                    f"time to first page {1000 * (html + first):.0f} ms; run overview "
                    f"(cards, charts) {1000 * overview:.0f} ms"
                )
            print("filters and search (median of 5, ms; matches):")
            for query in QUERIES:
                times = []
                for _ in range(5):
                    seconds, body = fetch(base, f"/api/runs/synthetic/episodes?{query}&limit=50")
                    times.append(seconds)
                total = json.loads(body)["total"]
                print(f"  {statistics.median(times) * 1000:6.1f}  {total:6d}  {query}")
            seconds, _ = fetch(base, "/api/runs/synthetic/episodes/task-0001%230")
            print(f"one episode (replay page data): {1000 * seconds:.0f} ms")
        (run_dir / OVERVIEW).unlink(missing_ok=True)  # as for a run finished elsewhere
        with running_viewer(runs) as base:
            seconds, _ = fetch(base, "/api/runs/synthetic")
            print(f"run overview without overview.json (computed, stored): {1000 * seconds:.0f} ms")


if __name__ == "__main__":
    main()
