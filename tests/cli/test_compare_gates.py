"""Gates that cannot pass on nothing: ``compare`` and ``baseline check`` on runs that scored
too little, or other tasks, fail with exit 1 and say why."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

if str(Path(__file__).parents[1] / "metrics") not in sys.path:  # metrics_helpers
    sys.path.insert(0, str(Path(__file__).parents[1] / "metrics"))
from metrics_helpers import call, record, step

from toolproof.cli import main
from toolproof.metrics import summarize
from toolproof.results import EpisodeRecord, RunStore

REFUSED = "connection refused: http://127.0.0.1:9/act ([Errno 111] Connection refused)"

Make = Callable[..., Path]


def episode(task: str, *, infra: bool = False, passed: bool = True) -> EpisodeRecord:
    """A passed episode of ``task``, or an infra error carrying :data:`REFUSED`."""
    if infra:
        rec = record(task, passed=False, termination="infra_error", answer=None, attempts=3)
        rec.trajectory.error = REFUSED
        return rec
    return record(task, passed=passed, steps=[step(0, [call("get", {"id": task})])])


@pytest.fixture
def make_run(tmp_path: Path) -> Make:
    """``make_run(name, records)`` writes a finished run of the suite ``gates`` v1."""

    def make(name: str, records: list[EpisodeRecord]) -> Path:
        meta: dict[str, Any] = {
            "config": {"agent": name},
            "track": "standard",
            "planned": len(records),
            "suite": {"name": "gates", "version": "1", "seed": 0, "digest": "d"},
        }
        store = RunStore(tmp_path / name)
        try:
            store.set_meta(meta)
            for r in records:
                store.append(r)
            store.finalize(summarize(records, meta))
        finally:
            store.close()
        return tmp_path / name

    return make


def toolproof(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """Run the CLI as the console script does; return exit code, stdout, stderr."""
    try:
        returned = main([str(a) for a in args])
        code = returned if isinstance(returned, int) else 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


TASKS = ["t0", "t1", "t2"]


def test_an_all_infra_error_candidate_fails_compare_and_baseline_check(
    make_run: Make, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = make_run("good", [episode(t) for t in TASKS])
    broken = make_run("broken", [episode(t, infra=True) for t in TASKS])
    for flags in ([], ["--fail-on-regression"], ["--fail-on-regression", "--allow-partial"]):
        code, out, _ = toolproof(capsys, "compare", good, broken, *flags)
        assert code == 1, flags
        assert "B: 0 scored of 3 episodes (3 infrastructure errors)" in out
        assert "the comparison cannot gate" in out
        assert "B has no scored episodes: 3 of 3 were infrastructure errors" in out
        assert "Connection refused" in out  # the first recorded error says why
        assert "no significant regression" not in out
    code, out, _ = toolproof(capsys, "compare", broken, good, "--fail-on-regression")
    assert code == 1 and "A has no scored episodes" in out
    where = tmp_path / "baselines"
    assert toolproof(capsys, "baseline", "save", "main", good, "--dir", where)[0] == 0
    out_json = tmp_path / "gate.json"
    code, out, _ = toolproof(
        capsys,
        "baseline",
        "check",
        "main",
        broken,
        "--dir",
        where,
        "--fail-on-regression",
        "--json",
        out_json,
    )
    assert code == 1 and "B has no scored episodes" in out
    gate = json.loads(out_json.read_text())["gate"]
    assert gate["regressed"] is False and gate["problems"][0].startswith("B has no scored")
    data = json.loads(out_json.read_text())
    assert data["coverage_b"] == {
        "episodes": 3,
        "scored": 0,
        "infra_errors": 3,
        "tasks": [],
        "first_infra_error": REFUSED,
    }


def test_an_all_infra_error_run_cannot_be_saved_as_a_baseline(
    make_run: Make, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    broken = make_run("broken", [episode(t, infra=True) for t in TASKS])
    code, _, err = toolproof(capsys, "baseline", "save", "main", broken, "--dir", tmp_path / "b")
    assert code == 2
    assert "no scored episodes (3 of 3 were infrastructure errors)" in err
    assert "--failures" in err and not (tmp_path / "b" / "gates").exists()


def test_a_candidate_with_fewer_scored_episodes_fails_the_gate(
    make_run: Make, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    good = make_run("good", [episode(t) for t in TASKS])
    fewer = make_run("fewer", [episode("t0"), episode("t1"), episode("t2", infra=True)])
    code, out, _ = toolproof(capsys, "compare", good, fewer)
    assert code == 0  # not gated: a warning, the table still shown
    assert "warning: B scored fewer episodes than A: 2 against 3" in out
    code, out, _ = toolproof(capsys, "compare", good, fewer, "--fail-on-regression")
    assert code == 1
    assert "B scored fewer episodes than A: 2 against 3" in out
    assert "tasks scored only in A (1): t2" in out
    assert "--allow-partial" in out and "no significant regression" not in out
    code, out, _ = toolproof(
        capsys, "compare", good, fewer, "--fail-on-regression", "--allow-partial"
    )
    assert code == 0 and "no significant regression on success" in out
    assert "warning: B scored fewer episodes" in out
    where = tmp_path / "baselines"
    toolproof(capsys, "baseline", "save", "main", good, "--dir", where)
    code, out, _ = toolproof(
        capsys, "baseline", "check", "main", fewer, "--dir", where, "--fail-on-regression"
    )
    assert code == 1 and "B scored fewer episodes than A" in out


def test_runs_of_different_tasks_fail_the_gate_naming_them(
    make_run: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    a = make_run("a", [episode(t) for t in TASKS])
    hostile = "t9-[bold red]boom[/]"  # rich markup in a task id is printed, not rendered
    b = make_run("b", [episode("t0"), episode("t1"), episode(hostile)])
    code, out, _ = toolproof(capsys, "compare", a, b, "--fail-on-regression")
    assert code == 1
    assert "tasks scored only in A (1): t2" in out
    assert f"tasks scored only in B (1): {hostile}" in out


def test_a_sound_gate_still_passes_and_regressions_still_fail(
    make_run: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = [f"t{i}" for i in range(8)]
    a = make_run("a", [episode(t) for t in tasks])
    worse = make_run("worse", [episode(t, passed=False) for t in tasks])
    code, out, _ = toolproof(capsys, "compare", a, a, "--fail-on-regression")
    assert code == 0 and "no significant regression on success" in out
    assert "cannot gate" not in out and "warning" not in out
    code, out, _ = toolproof(capsys, "compare", a, worse, "--fail-on-regression")
    assert code == 1 and "B is significantly worse than A on success" in out
    # the table states each metric's direction
    better = {w[0]: w[1] for w in (line.split() for line in out.splitlines()) if len(w) > 2}
    assert better["success*"] == "higher" and better["hallucination"] == "lower"
    assert better["efficiency"] == "lower" and better["valid_arguments_rate"] == "higher"


def test_a_gate_too_small_to_ever_fail_says_so(
    make_run: Make, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = ["t0", "t1", "t2", "t3"]
    a = make_run("a", [episode(t) for t in tasks])
    worse = make_run("worse", [episode(t, passed=False) for t in tasks])
    code, out, _ = toolproof(capsys, "compare", a, worse, "--fail-on-regression")
    assert code == 0  # 4 of 4 lost is p = 0.125: not significant
    assert "no significant regression on success" in out
    assert "note: 4 instances lost on success" in out and "at least 6 discordant" in out
    code, out, _ = toolproof(capsys, "compare", a, a, "--fail-on-regression")
    assert "note:" not in out
