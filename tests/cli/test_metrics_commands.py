"""``toolproof compare``, ``baseline`` and ``show --failures``: output and exit codes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from toolproof.cli import main
from toolproof.engine import RunConfig, Runner
from toolproof.spec import resolve_suite_path

TASKS = ["stock-*", "calc-*", "order-*", "restock-*"]  # 7 tasks: enough for a significant McNemar


def _run(out: Path, agent: str, seed: int | None = None) -> Path:
    config = RunConfig(
        suite=str(resolve_suite_path("core")), agent=agent, tasks=TASKS, seed=seed, snapshots=False
    )
    asyncio.run(Runner(config, out, parallel=4).run())
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("cli-runs")
    return {
        "oracle": _run(root / "oracle", "oracle"),
        "random": _run(root / "random", "random"),
        "reseeded": _run(root / "reseeded", "oracle", seed=5),
    }


def toolproof(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run the CLI as the console script does; return exit code, stdout, stderr."""
    try:
        returned = main([str(a) for a in args])  # the console script exits with this
        code = returned if isinstance(returned, int) else 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_compare_prints_the_table_and_the_flips(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = toolproof(capsys, "compare", runs["oracle"], runs["random"])
    assert code == 0  # no gate without --fail-on-regression
    assert "success*" in out and "yes, worse" in out
    assert "regressions (passed in A, failed in B): 7" in out
    assert "stock-lookup#0: perfect -> fail" in out
    assert "B is significantly worse than A on success" in out


def test_fail_on_regression_exits_1_only_when_significantly_worse(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_json = tmp_path / "cmp.json"
    code, _, _ = toolproof(
        capsys,
        "compare",
        runs["oracle"],
        runs["random"],
        "--fail-on-regression",
        "--json",
        out_json,
    )
    assert code == 1
    data = json.loads(out_json.read_text())
    assert data["gate"] == {"metric": "success", "regressed": True, "problems": []}
    assert {m["name"] for m in data["metrics"]} >= {"success", "tool_calls", "efficiency"}
    assert len(data["regressions"]) == 7
    code, out, _ = toolproof(
        capsys, "compare", runs["random"], runs["oracle"], "--fail-on-regression"
    )
    assert code == 0 and "yes, better" in out
    code, out, _ = toolproof(
        capsys, "compare", runs["oracle"], runs["oracle"], "--fail-on-regression"
    )
    assert code == 0 and "no significant regression on success" in out
    assert "yes," not in out  # nothing significant against itself
    code, _, _ = toolproof(
        capsys,
        "compare",
        runs["oracle"],
        runs["random"],
        "--fail-on-regression",
        "--metric",
        "fraction",
    )
    assert code == 1
    code, _, err = toolproof(capsys, "compare", runs["oracle"], runs["random"], "--metric", "speed")
    assert code == 2 and "unknown metric 'speed'" in err


def test_mismatched_runs_are_refused_with_the_reason(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = toolproof(capsys, "compare", runs["oracle"], runs["reseeded"])
    assert code == 2
    assert "not comparable" in err and "different seeds" in err and "--allow-mismatch" in err
    code, out, _ = toolproof(
        capsys, "compare", runs["oracle"], runs["reseeded"], "--allow-mismatch"
    )
    assert code == 0 and "warning: different seeds" in out


def test_baseline_save_and_check(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    where = tmp_path / "baselines"
    code, out, _ = toolproof(capsys, "baseline", "save", "main", runs["oracle"], "--dir", where)
    assert code == 0 and "saved baseline 'main'" in out
    code, out, _ = toolproof(capsys, "baseline", "list", "--dir", where)
    assert "core v" in out and "main" in out and "oracle" in out
    code, _, _ = toolproof(
        capsys, "baseline", "check", "main", runs["random"], "--dir", where, "--fail-on-regression"
    )
    assert code == 1
    code, out, _ = toolproof(
        capsys, "baseline", "check", "main", runs["oracle"], "--dir", where, "--fail-on-regression"
    )
    assert code == 0 and "no significant regression" in out
    code, _, err = toolproof(capsys, "baseline", "check", "nightly", runs["oracle"], "--dir", where)
    assert code == 2 and "no baseline 'nightly'" in err and "toolproof baseline save nightly" in err


def test_show_failures_groups_failed_episodes_by_mode(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = toolproof(capsys, "show", runs["random"], "--failures")
    assert code == 0
    assert "7 failed episodes of 7 scored (7 episodes)" in out
    lines = out.splitlines()
    modes = [
        line.split(" (")[0]
        for line in lines[1:]
        if line and not line.startswith(" ") and "(" in line
    ]
    assert modes and set(modes) <= {
        "wrong_tool",
        "ignored_tool_error",
        "invalid_arguments",
        "hallucinated_answer",
        "incomplete_state",
        "wrong_answer",
        "collateral_damage",
        "forbidden_action_or_output",
    }
    assert any(line.startswith("  stock-lookup#0  step ") for line in lines)
    assert any(line.startswith("    check ") for line in lines)  # the failing check says what
    code, out, _ = toolproof(capsys, "show", runs["oracle"], "--failures")
    assert code == 0 and "0 failed episodes of 7 scored (7 episodes)" in out
    assert "infrastructure" not in out
