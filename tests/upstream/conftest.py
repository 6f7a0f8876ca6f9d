"""Upstream benchmark tests run only where the upstream package is installed (CI installs it)."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def _installed(distribution: str) -> bool:
    try:
        metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip BFCL tests, with the install command, when bfcl-eval is missing."""
    if _installed("bfcl-eval"):
        return
    skip = pytest.mark.skip(
        reason="bfcl-eval not installed: pip install --no-deps 'bfcl-eval==2026.3.23' filelock"
    )
    for item in items:
        nodeid = item.nodeid.replace("\\", "/")
        if "tests/upstream/test_bfcl" in nodeid and "test_bfcl_metrics" not in nodeid:
            item.add_marker(skip)
