"""CSV and Parquet: one row per episode with every score and its checks."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest

from toolproof.export import ExportError, export_run
from toolproof.export._table import COLUMNS

from .runs import HOSTILE


def _csv(run: Path) -> list[dict[str, str]]:
    buffer = io.BytesIO()
    export_run(run, "csv", buffer)
    text = buffer.getvalue().decode("utf-8")
    reader = csv.DictReader(io.StringIO(text, newline=""))
    assert reader.fieldnames == [name for name, _, _ in COLUMNS]
    return list(reader)


def test_csv_has_one_row_per_episode_with_scores_and_checks(varied_run: Path) -> None:
    rows = {row["key"]: row for row in _csv(varied_run)}
    assert sorted(rows) == ["alpha#0", "alpha#1", "beta#0", "delta#0", "eps#0", "gamma#0"]
    good = rows["alpha#0"]
    assert (good["passed"], good["level"], good["fraction"]) == ("true", "perfect", "1.0")
    assert (good["input_tokens"], good["output_tokens"], good["cost_usd"]) == (
        "280",
        "35",
        "0.0021",
    )
    assert (good["steps"], good["tool_calls"], good["suite"]) == ("2", "2", "demo")
    bad = rows["alpha#1"]
    assert (bad["passed"], bad["level"], bad["fraction"]) == ("false", "fail", "0.25")
    assert bad["failure_mode"] == "wrong_value"
    assert (bad["checks_passed"], bad["checks_total"]) == ("1", "2")
    checks = json.loads(bad["checks"])
    assert [(c["name"], c["passed"], c["score"]) for c in checks] == [
        ("stock_updated", False, 0.0),
        ("said_sku", True, 1.0),
    ]
    assert checks[0]["detail"] == HOSTILE  # agent text survives quoting intact
    assert bad["final_answer"] == HOSTILE
    assert bad["cost_usd"] == ""  # unpriced is empty, never 0
    assert rows["beta#0"]["infra_error"] == "true"
    assert rows["beta#0"]["attempts"] == "3"
    assert rows["gamma#0"]["task_error"] == "true"
    assert rows["eps#0"]["termination"] == "agent_error"


def test_parquet_holds_the_same_rows_typed(varied_run: Path, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "run.parquet"
    with path.open("wb") as fh:
        assert export_run(varied_run, "parquet", fh) == (6, [])
    table = pq.read_table(path)
    assert table.column_names == [name for name, _, _ in COLUMNS]
    rows = {row["key"]: row for row in table.to_pylist()}
    assert rows["alpha#0"]["passed"] is True
    assert rows["alpha#0"]["cost_usd"] == pytest.approx(0.0021)
    assert rows["alpha#1"]["cost_usd"] is None
    assert rows["alpha#1"]["fraction"] == 0.25
    assert [c["name"] for c in rows["alpha#1"]["checks"]] == ["stock_updated", "said_sku"]
    assert rows["alpha#1"]["checks"][0]["detail"] == HOSTILE
    assert str(table.schema.field("epoch").type) == "int64"


def test_parquet_without_pyarrow_names_the_extra(
    varied_run: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ExportError, match=r"pip install 'toolproof\[parquet\]'"):
        export_run(varied_run, "parquet", io.BytesIO())


def test_an_unknown_format_lists_the_valid_ones(varied_run: Path) -> None:
    with pytest.raises(ExportError, match="valid: csv, inspect, junit, otel, parquet"):
        export_run(varied_run, "xlsx", io.BytesIO())


def test_a_damaged_trajectory_is_left_out_and_named(varied_run: Path) -> None:
    path = varied_run / "trajectories.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0][:40] + b"\n"  # alpha#0's line cut short
    path.write_bytes(b"".join(lines))
    buffer = io.BytesIO()
    count, damaged = export_run(varied_run, "csv", buffer)
    assert (count, damaged) == (5, ["alpha#0"])
    assert "alpha#0" not in buffer.getvalue().decode()
