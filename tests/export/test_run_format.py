"""docs/run-format.md is generated from the models and a real run.db, and kept current."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from toolproof.export import _reference

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "run-format.md"


def test_the_page_is_current() -> None:
    assert PAGE.read_text(encoding="utf-8") == _reference.generate(), (
        "docs/run-format.md is stale: run python scripts/gen_run_format.py"
    )


def test_every_field_and_column_is_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for _, model in _reference.MODELS:
        for name in model.model_fields:
            assert f"| `{name}` |" in text, f"{model.__name__}.{name}"
    for table in ("meta", "episodes", "episodes_search"):
        assert f"### `{table}`" in text
    assert "| `traj_offset` |" in text and "| `score` |" in text


def test_a_field_without_a_meaning_fails_the_generation() -> None:
    class Newer(BaseModel):
        documented: int = Field(0, description="Has one.")
        bare: int = 0

    with pytest.raises(ValueError, match=r"Newer\.bare has no description"):
        _reference.model_table(Newer)


def test_a_column_without_a_note_fails_the_generation(monkeypatch: pytest.MonkeyPatch) -> None:
    notes = {k: dict(v) for k, v in _reference.COLUMN_NOTES.items()}
    del notes["episodes"]["cost_usd"]
    monkeypatch.setattr(_reference, "COLUMN_NOTES", notes)
    with pytest.raises(ValueError, match=r"episodes\.cost_usd has no note"):
        _reference.generate()


def test_the_script_checks_and_writes() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "gen_run_format.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
