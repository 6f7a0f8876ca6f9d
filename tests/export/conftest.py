"""The varied run every export test reads (see ``runs.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .runs import varied_records, write_run


@pytest.fixture
def varied_run(tmp_path: Path) -> Path:
    """A run folder with one episode of each kind an export tells apart."""
    return write_run(tmp_path / "run", varied_records())
