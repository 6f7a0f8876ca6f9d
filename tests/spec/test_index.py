"""The suite index: used only while every file matches, rebuilt when wrong, never trusted
over the files, and harmless when hostile."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from toolproof.spec import SpecError, loader
from toolproof.spec.index import INDEX_VERSION, SuiteIndex, SuiteInfo, suite_infos
from toolproof_helpers import make_task, write_suite, write_yaml


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every full load of a suite the index makes (a hit makes none)."""
    seen: list[Path] = []
    real = loader.load_suite

    def counting(name_or_path: Any, **kwargs: Any) -> Any:
        seen.append(Path(name_or_path))
        return real(name_or_path, **kwargs)

    monkeypatch.setattr(loader, "load_suite", counting)
    return seen


def _suite(tmp_path: Path, n: int = 2) -> Path:
    tasks = [make_task(id=f"t{i}") for i in range(n)]
    return write_suite(tmp_path / "suite", tasks, description="A test suite.")


def test_a_second_listing_reads_the_index_and_matches_a_full_load(
    tmp_path: Path, loads: list[Path]
) -> None:
    root, index = _suite(tmp_path), tmp_path / "cache" / "index.json"
    first = suite_infos([str(root)], index)
    assert first == [SuiteInfo("mini", "1", "A test suite.", 2)] and len(loads) == 1
    assert suite_infos([str(root)], index) == first
    assert len(loads) == 1  # answered from the index


def test_any_change_to_the_suite_rebuilds_its_entry(tmp_path: Path, loads: list[Path]) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    suite_infos([str(root)], index)
    write_yaml(root / "tasks" / "t9.yaml", make_task(id="t9"))  # a task added
    assert suite_infos([str(root)], index)[0].tasks == 3
    (root / "tasks" / "t9.yaml").unlink()  # and removed again
    assert suite_infos([str(root)], index)[0].tasks == 2
    text = (root / "suite.yaml").read_text()
    (root / "suite.yaml").write_text(text.replace("version: '1'", "version: '7'"))
    assert suite_infos([str(root)], index)[0].version == "7"
    st = (root / "tasks" / "t0.yaml").stat()  # same bytes, only touched: still a miss
    os.utime(root / "tasks" / "t0.yaml", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    suite_infos([str(root)], index)
    assert len(loads) == 5


def test_a_broken_suite_is_reported_every_time_and_never_recorded(
    tmp_path: Path, loads: list[Path]
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    write_yaml(root / "tasks" / "bad.yaml", make_task(id="bad", description=None))
    for _ in range(2):
        with pytest.raises(SpecError, match="description"):
            suite_infos([str(root)], index)
    assert len(loads) == 2
    assert not index.exists() or str(root.resolve()) not in index.read_text()


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[]",
        json.dumps({"version": INDEX_VERSION + 1, "suites": {}}),
        json.dumps({"version": INDEX_VERSION, "suites": []}),
        "\0" * 64,
    ],
)
def test_a_corrupt_or_foreign_index_is_ignored_and_rewritten(
    tmp_path: Path, loads: list[Path], content: str
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    index.write_text(content)
    assert suite_infos([str(root)], index)[0].tasks == 2
    assert json.loads(index.read_text())["version"] == INDEX_VERSION
    suite_infos([str(root)], index)
    assert len(loads) == 1


@pytest.mark.parametrize(
    "lie",
    [
        {"tasks": -1},
        {"tasks": True},
        {"tasks": "155"},
        {"name": ["x"]},
        {"description": None},
        {"fingerprint": "0" * 64, "tasks": 999},
    ],
)
def test_an_entry_with_wrong_types_or_fingerprint_is_not_believed(
    tmp_path: Path, loads: list[Path], lie: dict[str, Any]
) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    suite_infos([str(root)], index)
    data = json.loads(index.read_text())
    data["suites"][str(root.resolve())].update(lie)
    index.write_text(json.dumps(data))
    assert suite_infos([str(root)], index) == [SuiteInfo("mini", "1", "A test suite.", 2)]
    assert len(loads) == 2


def test_a_huge_index_is_not_read(tmp_path: Path, loads: list[Path]) -> None:
    root, index = _suite(tmp_path), tmp_path / "index.json"
    with index.open("wb") as out:
        out.truncate(8 * 1024 * 1024)  # sparse: 8 MiB of zeros without writing them
    assert suite_infos([str(root)], index)[0].tasks == 2
    assert index.stat().st_size < 4096


def test_an_unwritable_index_only_costs_time(tmp_path: Path, loads: list[Path]) -> None:
    root = _suite(tmp_path)
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    assert suite_infos([str(root)], blocker / "index.json")[0].tasks == 2
    assert suite_infos([str(root)], None)[0].tasks == 2
    assert len(loads) == 2
    assert list(tmp_path.glob("**/.index.json*")) == []  # no temporary file left


def test_no_index_means_every_lookup_misses(tmp_path: Path) -> None:
    index = SuiteIndex(None)
    index.put(tmp_path, "f", SuiteInfo("a", "1", "", 0))
    index.save()  # nowhere to write: nothing happens
    assert SuiteIndex(None).get(tmp_path, "f") is None
