"""Named baselines per suite version: save, find, replace, list, refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from metrics_helpers import run_core

from toolproof.metrics import (
    BaselineError,
    compare_runs,
    find_baseline,
    list_baselines,
    save_baseline,
)
from toolproof.results import RunReader


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("baseline")
    tasks = ["stock-*", "calc-*", "order-*", "restock-*"]  # 7 tasks: enough for McNemar
    return {
        "oracle": run_core(root / "oracle", "oracle", tasks=tasks),
        "random": run_core(root / "random", "random", tasks=tasks),
    }


def test_save_keeps_a_copy_per_suite_version(runs: dict[str, Path], tmp_path: Path) -> None:
    path = save_baseline("main", runs["oracle"], tmp_path)
    with RunReader(runs["oracle"]) as reader:
        suite = reader.meta()["suite"]
        count = reader.count()
    assert path == tmp_path / "core" / suite["version"] / "main"
    info = json.loads((path / "baseline.json").read_text())
    assert (info["name"], info["agent"], info["digest"]) == ("main", "oracle", suite["digest"])
    with RunReader(path) as copy:
        assert copy.count() == count
    assert (path / "summary.json").is_file()
    assert find_baseline("main", runs["random"], tmp_path) == path
    assert [b["name"] for b in list_baselines(tmp_path)] == ["main"]


def test_check_against_a_baseline_is_a_comparison(runs: dict[str, Path], tmp_path: Path) -> None:
    base = save_baseline("main", runs["oracle"], tmp_path)
    comparison = compare_runs(base, runs["random"])
    assert comparison.regressed("success")
    assert comparison.a["agent"] == "oracle"


def test_saving_again_replaces_the_baseline(runs: dict[str, Path], tmp_path: Path) -> None:
    save_baseline("main", runs["oracle"], tmp_path)
    path = save_baseline("main", runs["random"], tmp_path)
    assert json.loads((path / "baseline.json").read_text())["agent"] == "random"
    assert len(list_baselines(tmp_path)) == 1
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".")]  # no staging left


def test_missing_baseline_and_bad_names_are_explained(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    save_baseline("main", runs["oracle"], tmp_path)
    with pytest.raises(BaselineError, match=r"no baseline 'nightly'.*baselines of core: main"):
        find_baseline("nightly", runs["random"], tmp_path)
    with pytest.raises(BaselineError, match="not allowed"):
        save_baseline("../escape", runs["oracle"], tmp_path)
    with pytest.raises(FileNotFoundError, match="not a toolproof run"):
        save_baseline("x", tmp_path, tmp_path / "b")
