"""The viewer serves its first page before it loads the rest (issue 34).

The first page of a run (the page, the first rows of its episode table, its overview)
needs the web framework and the run's rows only; the record models, metrics and
exporters are imported afterwards (``_server.warm``) or by the request that needs them.
These tests pin what the first page imports, in a fresh interpreter; the time it takes
belongs to ``benchmarks/bench_viewer.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from toolproof.viewer import write_overview
from toolproof.viewer._server import DEFERRED

SRC = Path(__file__).resolve().parents[2] / "src"
LATER = (
    "pydantic",
    "toolproof.results.record",
    "toolproof.scoring",
    "toolproof.metrics",
    "toolproof.export",
    "toolproof.engine",
    "toolproof.worlds",
    "toolproof.tools",
)
"""Modules the first page must not import."""

FIRST_PAGE = """
import json, sys, urllib.request
from pathlib import Path
from toolproof.viewer._server import running_viewer, warm

runs, run = Path(sys.argv[1]), sys.argv[2]
answers = {}
with running_viewer(runs, warm_after_s=None) as base:
    for path in (f"/runs/{run}", f"/api/runs/{run}/episodes?limit=50", f"/api/runs/{run}"):
        with urllib.request.urlopen(base + path, timeout=60) as response:
            answers[path] = [response.status, response.read().decode()]
    first = sorted(sys.modules)
    warm()
    later = sorted(sys.modules)
    key = json.loads(answers[f"/api/runs/{run}/episodes?limit=50"][1])["rows"][0]["key"]
    with urllib.request.urlopen(f"{base}/api/runs/{run}/episodes/{key.replace('#', '%23')}") as r:
        answers["episode"] = [r.status, r.read().decode()]
print(json.dumps({"answers": answers, "first": first, "later": later}))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC)}


def test_the_first_page_is_served_without_the_record_models(runs_dir: Path, tmp_path: Path) -> None:
    run = "core-oracle"
    shutil.copytree(runs_dir / run, tmp_path / run)
    write_overview(tmp_path / run)  # as `toolproof run` leaves a finished run
    done = subprocess.run(
        [sys.executable, "-c", FIRST_PAGE, str(tmp_path), run],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    answers = report["answers"]
    assert all(status == 200 for status, _ in answers.values()), answers
    assert run in answers[f"/runs/{run}"][1]
    rows = json.loads(answers[f"/api/runs/{run}/episodes?limit=50"][1])["rows"]
    assert rows and all(row["key"] for row in rows)
    assert json.loads(answers[f"/api/runs/{run}"][1])  # the stored overview
    first = set(report["first"])
    assert [m for m in LATER if m in first] == []
    later = set(report["later"])
    assert set(DEFERRED) <= later  # warm() loaded them all, so later pages do not wait
    episode = json.loads(answers["episode"][1])
    assert episode["steps"], "the episode page works once the models are loaded"


def test_every_deferred_module_exists() -> None:
    """A misspelt name in DEFERRED would be skipped silently by warm(): none is."""
    code = "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]"
    done = subprocess.run(
        [sys.executable, "-c", code, *DEFERRED],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_toolproof_view_serves_then_loads_the_rest(runs_dir: Path, tmp_path: Path) -> None:
    """The command itself: the page answers, and an episode (record models) answers too."""
    port = _free_port()
    command = [sys.executable, "-m", "toolproof", "view", str(runs_dir), "--port", str(port)]
    errors = tmp_path / "view.err"
    with errors.open("w") as err:
        proc = subprocess.Popen(command, env=_env(), stdout=subprocess.DEVNULL, stderr=err)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/runs/core-oracle", timeout=10) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None, errors.read_text()
                assert time.monotonic() < deadline, "toolproof view did not answer"
                time.sleep(0.1)
        url = f"{base}/api/runs/core-oracle/episodes?limit=1"
        with urllib.request.urlopen(url, timeout=60) as r:
            key = json.loads(r.read())["rows"][0]["key"]
        url = f"{base}/api/runs/core-oracle/episodes/{key.replace('#', '%23')}"
        with urllib.request.urlopen(url, timeout=60) as r:
            assert json.loads(r.read())["steps"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
