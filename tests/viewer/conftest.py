"""Fixtures of the viewer tests (helpers are shared with the report tests).

* ``runs_dir``: a folder with the ``core`` suite run by ``oracle`` and ``random``;
* ``client``: Starlette's TestClient over the viewer of ``runs_dir``;
* ``chromium``: a headless Debian Chromium driven by Playwright, or a skip.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

if str(Path(__file__).parent.parent / "report") not in sys.path:  # report_helpers
    sys.path.insert(0, str(Path(__file__).parent.parent / "report"))
from report_helpers import CHROMIUM_ARGS, chromium_path, core_runs_dir
from starlette.testclient import TestClient

from toolproof.viewer import create_app


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``core-oracle`` and ``core-random``, two epochs each."""
    return core_runs_dir(tmp_path_factory)


@pytest.fixture
def client(runs_dir: Path) -> Iterator[TestClient]:
    """The viewer's API and pages, in process (Host 127.0.0.1, as a local browser sends)."""
    with TestClient(create_app(runs_dir), base_url="http://127.0.0.1") as test_client:
        yield test_client


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
