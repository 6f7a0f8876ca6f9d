"""``toolproof run bfcl:...`` and ``toolproof list`` from the command line."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.upstream import _bfcl_upstream as upstream
from toolproof_helpers import CliResult

Invoke = Callable[..., CliResult]


def test_run_and_resume_a_bfcl_category_by_name(invoke: Invoke, tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = invoke("run", "bfcl:live_parallel", "--agent", "oracle", "--out", out, "-q")
    assert first.code == 0, first.err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["suite"]["version"] == f"bfcl-eval-{upstream.PINNED_VERSION}"
    assert summary["config"]["suite"] == "bfcl:live_parallel"
    assert summary["bfcl"]["categories"]["live_parallel"]["accuracy"] == 1.0
    again = invoke("run", "--resume", out, "-q")
    assert again.code == 0, again.err
    assert json.loads((out / "summary.json").read_text())["episodes"]["finished"] == 16


def test_unsupported_and_drifted_names_are_errors_for_people(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    skipped = invoke("run", "bfcl:memory", "--agent", "oracle", "--out", tmp_path / "m")
    assert skipped.code != 0 and "bfcl:memory: needs rank_bm25" in skipped.err
    assert "Traceback" not in skipped.err
    monkeypatch.setattr(upstream, "installed_version", lambda: "2030.1.1")
    drift = invoke("run", "bfcl:live_parallel", "--agent", "oracle", "--out", tmp_path / "d")
    assert drift.code != 0 and "--allow-drift" in drift.err and "Traceback" not in drift.err
    allowed = invoke(
        "run", "bfcl:live_parallel", "--agent", "noop", "--allow-drift", "--out", tmp_path / "a"
    )
    assert allowed.code == 0, allowed.err


def test_list_shows_the_provided_suite(invoke: Invoke) -> None:
    listed = invoke("list")
    assert listed.code == 0
    assert f"bfcl           bfcl-eval {upstream.PINNED_VERSION}" in listed.out
    one = invoke("list", "--suite", "bfcl:simple_javascript")
    assert one.code == 0 and "50 tasks" in one.out and "simple_javascript_0" in one.out


def test_list_names_the_install_command_when_the_package_is_missing(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolproof import _plugins

    real = _plugins.installed_version

    def version(name: str) -> str | None:  # what `list` asks (without importlib.metadata)
        return None if name == "bfcl-eval" else real(name)

    monkeypatch.setattr(_plugins, "installed_version", version)
    listed = invoke("list")
    assert "bfcl           not installed: pip install --no-deps 'bfcl-eval==2026.3.23'" in (
        listed.out
    )


def test_a_multi_turn_category_refuses_an_agent_that_owns_its_loop(
    invoke: Invoke, tmp_path: Path
) -> None:
    pytest.importorskip("mpmath", reason="BFCL's MathAPI backend needs mpmath==1.3.0")
    agent = "python:bfcl_test_agents:driven"
    out = tmp_path / "run"
    refused = invoke(
        "run", "bfcl:multi_turn_base", "--agent", agent, "-t", "multi_turn_base_0", "--out", out
    )
    assert refused.code != 0 and "Traceback" not in refused.err
    assert "task multi_turn_base_0 has 4 user turns; agent" in refused.err
    assert "cannot take a follow-up user message" in refused.err
