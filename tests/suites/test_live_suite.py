"""The built-in ``live`` suite: offline from its shipped cassettes, proven by oracle and noop,
on its own track."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from toolproof.live import Cassette, normalise_url, request_key, shipped_cassettes
from toolproof.spec import load_suite
from toolproof.spec.live import effective_live
from toolproof_helpers import CliResult

Invoke = Callable[..., CliResult]


def summary(run_dir: Path) -> dict[str, object]:
    """A run's summary.json."""
    data = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_every_reference_call_is_in_the_shipped_cassettes() -> None:
    suite = load_suite("live")
    cassettes = shipped_cassettes(suite)
    assert cassettes is not None
    cassette = Cassette.load([cassettes])
    assert 4 <= len(suite.tasks) <= 6
    for task in suite.tasks:
        spec = effective_live(suite.config.live, task.live)
        assert spec is not None and spec.methods == ["GET", "HEAD"] and not spec.secrets
        for call in task.solution.calls:
            assert not isinstance(call, list)
            url = str(call.args["url"])
            assert cassette.lookup(request_key("GET", normalise_url(url), b"")), url


def test_the_cassettes_say_they_were_written_by_hand() -> None:
    root = load_suite("live").root
    text = " ".join((root / "CHANGELOG.md").read_text(encoding="utf-8").replace("*", "").split())
    assert "written by hand from the APIs' documented responses" in text
    for path in (root / "cassettes").glob("*.yaml"):
        assert yaml.safe_load(path.read_text(encoding="utf-8"))["toolproof_cassette"] == 1


def test_oracle_passes_offline_on_the_live_track(invoke: Invoke, tmp_path: Path) -> None:
    result = invoke("run", "live", "--agent", "oracle", "-o", tmp_path / "o")
    assert result.code == 0, result.err
    assert "LIVE TRACK (live): replayed from cassettes" in result.out
    data = summary(tmp_path / "o")
    assert data["track"] == "live"
    success = data["success"]
    assert isinstance(success, dict) and success["rate"] == 1.0
    tasks = data["tasks"]
    assert isinstance(tasks, dict) and len(tasks) == 5
    assert all(t["levels"]["perfect"] == t["episodes"] for t in tasks.values())
    live = data["live"]
    assert isinstance(live, dict) and live["mode"] == "replay"
    environment = data["environment"]
    assert isinstance(environment, dict)
    assert environment["live_cassettes"] == live["cassettes_digest"]
    log = (tmp_path / "o" / "live-exchanges.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["outcome"] for line in log} == {"200"}


def test_noop_fails_every_task(invoke: Invoke, tmp_path: Path) -> None:
    assert invoke("run", "live", "--agent", "noop", "-q", "-o", tmp_path / "n").code == 0
    data = summary(tmp_path / "n")
    tasks = data["tasks"]
    assert isinstance(tasks, dict) and len(tasks) == 5
    assert all(t["levels"]["fail"] == t["episodes"] for t in tasks.values())


@pytest.mark.parametrize("flawed", ["never-asks", "never-retries", "gullible"])
def test_each_flawed_agent_passes_every_live_task(
    invoke: Invoke, tmp_path: Path, flawed: str
) -> None:
    """No live task is ambiguous, fails a call or carries an attack: the flawed agents play the
    reference there and pass (they fail only their own category, tests/suites/test_proven.py)."""
    assert invoke("run", "live", "--agent", flawed, "-q", "-o", tmp_path / "f").code == 0
    tasks = summary(tmp_path / "f")["tasks"]
    assert isinstance(tasks, dict) and len(tasks) == 5
    assert all(t["levels"]["perfect"] == t["episodes"] for t in tasks.values())


def test_a_live_run_is_never_compared_with_a_standard_one(invoke: Invoke, tmp_path: Path) -> None:
    assert invoke("run", "live", "--agent", "oracle", "-q", "-o", tmp_path / "l").code == 0
    assert (
        invoke(
            "run",
            "core",
            "--agent",
            "oracle",
            "-q",
            "-t",
            "api-ticket-status",
            "-o",
            tmp_path / "c",
        ).code
        == 0
    )
    refused = invoke("compare", tmp_path / "c", tmp_path / "l", "--allow-mismatch")
    assert refused.code != 0
    assert "live-track run is compared only with live-track runs" in refused.err + refused.out


@pytest.mark.parametrize(
    "args",
    [["--cassettes", "missing-dir"], ["--live", "sideways"], ["--executor", "ray"]],
)
def test_bad_live_options_are_refused_before_anything_runs(
    invoke: Invoke, tmp_path: Path, args: list[str]
) -> None:
    result = invoke("run", "live", "--agent", "oracle", "-o", tmp_path / "x", *args)
    assert result.code == 2
    assert not (tmp_path / "x").exists()


def test_a_replay_from_an_empty_cassette_reports_each_missing_request(
    invoke: Invoke, tmp_path: Path
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("toolproof_cassette: 1\nexchanges: []\n", encoding="utf-8")
    invoke(
        "run",
        "live",
        "--agent",
        "oracle",
        "-q",
        "--retries",
        "0",
        "-t",
        "live-exchange-rate",
        "--cassettes",
        empty,
        "-o",
        tmp_path / "e",
    )
    data = summary(tmp_path / "e")
    terminations = data["terminations"]  # a replay miss is the agent's: scored, not infra
    assert isinstance(terminations, dict) and terminations["infra_error"] == 0
    assert terminations["completed"] == 1
    episodes = (tmp_path / "e" / "trajectories.jsonl").read_text(encoding="utf-8")
    assert "replay miss: GET https://api.frankfurter.app/latest?from=EUR&to=JPY" in episodes
