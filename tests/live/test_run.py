"""Whole runs through the proxy: record, then replay offline with identical scores; secrets
never reach the run directory; a request missing from the cassette is the agent's (scored)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from toolproof.engine import RunConfig, Runner
from toolproof.live import LiveError, open_live
from toolproof.results import EpisodeRecord, RunReader
from toolproof.spec import load_suite
from toolproof.tools.toolkits.live import use_egress
from toolproof_helpers import write_suite

from .upstream import HOST, SECRET, Upstream

CHECK = "toolproof.tools.toolkits.live:answer_from_response"
LIVE = {
    "hosts": [HOST],
    "methods": ["GET"],
    "secrets": [{"env": "TEST_KEY", "host": HOST, "header": "X-Api-Key"}],
}


def task(task_id: str, paths: list[str], answer: str, path: str) -> dict[str, Any]:
    """A live task: the oracle GETs ``paths``; the check relates the answer to the first."""
    return {
        "id": task_id,
        "description": f"Fetch http://{HOST}{paths[0]} and answer with its value.",
        "type": "single_tool",
        "tools": ["http_get"],
        "success": [
            {"kind": "custom", "function": CHECK, "args": {"url_contains": paths[0], "path": path}}
        ],
        "solution": {
            "calls": [{"tool": "http_get", "args": {"url": f"http://{HOST}{p}"}} for p in paths],
            "answer": answer,
        },
    }


@pytest.fixture
def suite_path(tmp_path: Path) -> Path:
    """A two-task live suite against the stand-in host, one task needing the secret."""
    return write_suite(
        tmp_path / "suite",
        [
            task("keyed", ["/needs-key", "/echo"], "It is green.", "value"),
            task("plain", ["/data?b=2&a=1"], "The value is blue.", "value"),
        ],
        live=LIVE,
    )


def run(suite_path: Path, run_dir: Path, mode: str, **live: Any) -> list[EpisodeRecord]:
    """Run the suite with the oracle through a proxy in ``mode``; return its records."""
    suite = load_suite(suite_path)
    ids = [t.id for t in suite.tasks]
    environ = live.pop("environ", {})
    started = open_live(suite, ids, mode=mode, run_dir=run_dir, environ=environ, **live)  # type: ignore[arg-type]
    assert started is not None
    started.start()
    config = RunConfig(suite=str(suite_path), agent="oracle", live=started.info, retries=0)
    try:
        with use_egress(started.proxy.url, started.proxy.token):
            asyncio.run(Runner(config, run_dir, parallel=2).run())
    finally:
        started.close()
    with RunReader(run_dir) as reader:
        return sorted(reader.records(), key=lambda r: r.key)


def scores(records: list[EpisodeRecord]) -> list[tuple[str, bool, str, float]]:
    """What must be identical between a recording and its replay."""
    return [(r.key, r.score.passed, str(r.score.level), r.score.fraction) for r in records]


def no_secret_under(root: Path) -> list[Path]:
    """Files under ``root`` that hold the secret (must be none)."""
    return [p for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_record_then_replay_offline_gives_identical_scores(
    suite_path: Path, upstream: Upstream, tmp_path: Path
) -> None:
    recorded = run(
        suite_path,
        tmp_path / "rec",
        "record",
        environ={"TEST_KEY": SECRET},
        resolver=upstream.resolver,
    )
    assert [r.score.passed for r in recorded] == [True, True]
    assert (tmp_path / "rec" / "cassettes" / "live.yaml").is_file()
    upstream.server.shutdown()  # the replay must not need the service
    hits = len(upstream.hits)
    replayed = run(
        suite_path, tmp_path / "rep", "replay", cassettes=[tmp_path / "rec" / "cassettes"]
    )
    assert scores(replayed) == scores(recorded)
    assert len(upstream.hits) == hits
    with RunReader(tmp_path / "rep") as reader:
        meta = reader.meta()
        summary = reader.summary()
    assert meta["track"] == "live"
    assert meta["environment"]["live_cassettes"] == meta["config"]["live"]["digest"]
    assert summary is not None and summary["live"]["mode"] == "replay"


def test_the_secret_is_used_but_never_reaches_the_agent_or_the_run(
    suite_path: Path, upstream: Upstream, tmp_path: Path
) -> None:
    records = run(
        suite_path,
        tmp_path / "rec",
        "record",
        environ={"TEST_KEY": SECRET},
        resolver=upstream.resolver,
    )
    keyed = next(r for r in records if r.key.startswith("keyed"))
    assert keyed.score.passed  # the service accepted the injected key
    shown = keyed.trajectory.model_dump_json()
    assert '"auth_ok": true' in shown.replace("\\", "") and SECRET not in shown
    assert "<redacted>" in shown  # the echo of the request headers, scrubbed
    assert no_secret_under(tmp_path / "rec") == []
    assert no_secret_under(suite_path) == []


def test_an_unrecorded_request_is_the_agents_and_the_episode_is_scored(
    suite_path: Path, upstream: Upstream, tmp_path: Path
) -> None:
    run(
        suite_path,
        tmp_path / "rec",
        "record",
        environ={"TEST_KEY": SECRET},
        resolver=upstream.resolver,
    )
    cassette = tmp_path / "rec" / "cassettes" / "live.yaml"
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    data["exchanges"] = [e for e in data["exchanges"] if "/echo" not in e["request"]["url"]]
    partial = tmp_path / "partial.yaml"
    partial.write_text(yaml.safe_dump(data), encoding="utf-8")
    records = run(suite_path, tmp_path / "rep", "replay", cassettes=[partial])
    keyed = next(r for r in records if r.key.startswith("keyed"))
    plain = next(r for r in records if r.key.startswith("plain"))
    # The oracle asks for /echo, which the cassette no longer holds: the agent sees a tool
    # error naming the request, and the episode is scored (never infra_error).
    assert keyed.trajectory.termination.value == "completed"
    assert keyed.trajectory.error is None
    shown = keyed.trajectory.model_dump_json()
    assert f"replay miss: GET http://{HOST}/echo" in shown
    assert "not recorded" in shown
    assert keyed.score is not None and keyed.score.passed  # its answer came from /needs-key
    assert plain.score.passed


def test_a_record_run_without_the_secret_says_which_variable(
    suite_path: Path, tmp_path: Path
) -> None:
    suite = load_suite(suite_path)
    with pytest.raises(LiveError, match=r"task keyed: .*export TEST_KEY=") as info:
        open_live(suite, ["keyed"], mode="record", run_dir=tmp_path, environ={})
    assert SECRET not in str(info.value)


def test_a_replay_without_cassettes_names_the_fix(suite_path: Path, tmp_path: Path) -> None:
    suite = load_suite(suite_path)
    with pytest.raises(LiveError, match=r"ships no cassettes.*--live record"):
        open_live(suite, ["plain"], mode="replay", run_dir=tmp_path, environ={})
    bad = tmp_path / "bad.yaml"
    bad.write_text("exchanges: []\n", encoding="utf-8")
    with pytest.raises(LiveError, match=r"bad.yaml: not a cassette"):
        open_live(suite, ["plain"], mode="replay", run_dir=tmp_path, environ={}, cassettes=[bad])
    bad.write_text("toolproof_cassette: 1\nexchanges: [{request: {url: x}}]\n", encoding="utf-8")
    with pytest.raises(LiveError, match=r"exchanges\[0\]: needs request.method"):
        open_live(suite, ["plain"], mode="replay", run_dir=tmp_path, environ={}, cassettes=[bad])


def test_the_cli_refuses_to_record_without_the_secret_naming_only_the_variable(
    suite_path: Path, tmp_path: Path, invoke: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEST_KEY", raising=False)
    result = invoke(
        "run", suite_path, "--agent", "oracle", "--live", "record", "-o", tmp_path / "r"
    )
    assert result.code == 2
    assert "export TEST_KEY=" in result.err and "Traceback" not in result.err
    assert not (tmp_path / "r").exists()
