"""The viewer offers every export format as a download on a run's page."""

from __future__ import annotations

import csv
import io
import json
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import pytest
from starlette.testclient import TestClient

from toolproof.viewer import create_app

from .runs import varied_records, write_run


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    write_run(tmp_path / "runs" / "demo-run", varied_records())
    with TestClient(create_app(tmp_path / "runs"), base_url="http://127.0.0.1") as test_client:
        yield test_client


def test_the_run_page_links_every_format(client: TestClient) -> None:
    page = client.get("/runs/demo-run")
    assert page.status_code == 200
    for fmt in ("inspect", "otel", "csv", "parquet", "junit"):
        assert f'href="/api/runs/demo-run/export/{fmt}" download' in page.text


def test_each_download_is_the_export(client: TestClient, tmp_path: Path) -> None:
    answer = client.get("/api/runs/demo-run/export/csv")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/csv")
    assert 'filename="demo-run.csv"' in answer.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(answer.text, newline="")))
    assert len(rows) == 6 and {r["key"] for r in rows} >= {"alpha#0", "beta#0"}

    junit = client.get("/api/runs/demo-run/export/junit")
    assert ET.fromstring(junit.content).attrib["tests"] == "6"

    otel = client.get("/api/runs/demo-run/export/otel")
    assert len([json.loads(line) for line in otel.text.splitlines()]) == 6

    log = client.get("/api/runs/demo-run/export/inspect")
    disposition = log.headers["content-disposition"]  # RFC 5987 form: the name has a "+"
    name = unquote(disposition.split("filename*=utf-8''")[1])
    assert name.endswith(".json") and "_demo_" in name  # Inspect's own naming
    assert json.loads(log.content)["eval"]["task"] == "demo"
    assert not list(Path(tmp_path).glob("toolproof-export-*"))


def test_unknown_runs_and_formats_are_404(client: TestClient) -> None:
    assert client.get("/api/runs/nope/export/csv").status_code == 404
    answer = client.get("/api/runs/demo-run/export/xlsx")
    assert answer.status_code == 404
    assert "valid: csv, inspect, junit, otel, parquet" in answer.json()["error"]


def test_parquet_without_pyarrow_names_the_extra(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    answer = client.get("/api/runs/demo-run/export/parquet")
    assert answer.status_code == 501
    assert "toolproof[parquet]" in answer.json()["error"]
