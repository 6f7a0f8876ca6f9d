"""Fixtures of the HTML report tests (helpers: ``report_helpers.py``).

* ``core_runs``: the ``core`` suite run with ``oracle`` and ``random`` (session-wide);
* ``make_run``: a run directory written from crafted records (untrusted content);
* ``chromium``: a headless Debian Chromium driven by Playwright, or a skip that says
  what to install.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

if str(Path(__file__).parent) not in sys.path:  # report_helpers, whatever the import mode
    sys.path.insert(0, str(Path(__file__).parent))
from report_helpers import CHROMIUM_ARGS, chromium_path, core_runs_dir

from toolproof.metrics import summarize
from toolproof.results import EpisodeRecord, RunStore


@pytest.fixture(scope="session")
def core_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"oracle": run_dir, "random": run_dir}`` of the core suite, two epochs each."""
    root = core_runs_dir(tmp_path_factory)
    return {agent: root / f"core-{agent}" for agent in ("oracle", "random")}


@pytest.fixture
def make_run(tmp_path: Path) -> Callable[..., Path]:
    """``make_run(name, records, summary=True)`` writes a run directory of crafted records."""

    def make(name: str, records: list[EpisodeRecord], *, summary: bool = True) -> Path:
        run_dir = tmp_path / name
        meta: dict[str, Any] = {
            "config": {"agent": "crafted"},
            "track": "standard",
            "planned": len(records),
            "suite": {"name": "crafted", "version": "1", "seed": 0, "digest": "d"},
        }
        store = RunStore(run_dir)
        try:
            store.set_meta(meta)
            for r in records:
                store.append(r)
            if summary:
                store.finalize(summarize(records, meta))
        finally:
            store.close()
        return run_dir

    return make


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright's sync API); skips when either is missing."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("browser test: playwright is not installed (pip install playwright)")
    path = chromium_path()
    if path is None:
        pytest.skip("browser test: no chromium on PATH (apt-get install -y chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_ARGS, timeout=120_000)
        try:
            yield browser
        finally:
            browser.close()
