"""The viewer's JSON API and page routes, through Starlette's TestClient."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from report_helpers import record
from starlette.testclient import TestClient

from toolproof.metrics import summarize
from toolproof.results import RunStore
from toolproof.viewer import create_app


def episodes(client: TestClient, run: str = "core-random", **params: Any) -> dict[str, Any]:
    response = client.get(f"/api/runs/{run}/episodes", params=params)
    assert response.status_code == 200, response.text
    data: dict[str, Any] = response.json()
    return data


def test_runs_lists_each_run_with_its_headline(client: TestClient) -> None:
    runs = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert set(runs) == {"core-oracle", "core-random"}
    random = runs["core-random"]
    assert random["suite"] == "core" and random["agent"] == "random" and random["finished"]
    assert random["success"]["successes"] == 0
    assert 0 <= random["success"]["ci_low"] <= random["success"]["ci_high"] <= 1
    assert random["episodes"]["finished"] == random["episodes"]["planned"] > 0


def test_run_overview_has_breakdowns_distributions_and_facets(client: TestClient) -> None:
    data = client.get("/api/runs/core-random").json()
    assert {"category", "type", "difficulty"} <= set(data["breakdowns"])
    group = data["breakdowns"]["category"][0]
    assert {"key", "rate", "ci_low", "ci_high", "n"} <= set(group)
    steps = data["distributions"]["steps"]
    assert sum(steps["counts"]) == data["episodes"]["finished"]
    assert "fail" in data["facets"]["level"]
    assert sum(data["failure_modes"].values()) == data["success"]["n"]
    assert any(name.startswith("latency.") for name, _ in data["extras"])


def test_episode_pages_cover_the_run_once(client: TestClient) -> None:
    first = episodes(client, limit=5)
    total = first["total"]
    keys: list[str] = []
    for offset in range(0, total, 5):
        keys += [r["key"] for r in episodes(client, limit=5, offset=offset)["rows"]]
    assert len(keys) == len(set(keys)) == total
    assert "record" not in first["rows"][0]  # rows only, never the record JSON


def test_filters_and_sorting(client: TestClient) -> None:
    failed = episodes(client, run="core-oracle", passed="0")
    passed = episodes(client, run="core-oracle", passed="1")
    assert failed["total"] + passed["total"] == episodes(client, run="core-oracle")["total"]
    partial = episodes(client, level="partial", limit=500)
    assert all(r["level"] == "partial" for r in partial["rows"])
    hello = episodes(client, q="hello")
    assert hello["total"] == 2 and all("hello" in r["key"] for r in hello["rows"])
    by_steps = [
        r["n_steps"] for r in episodes(client, sort="n_steps", dir="desc", limit=500)["rows"]
    ]
    assert by_steps == sorted(by_steps, reverse=True)
    mode = episodes(client, limit=1)["rows"][0]["failure_mode"]
    assert all(r["failure_mode"] == mode for r in episodes(client, failure_mode=mode)["rows"])
    assert episodes(client, q="%")["total"] == 0  # LIKE wildcards are literal


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"sort": "record"}, "sort must be one of"),
        ({"dir": "up"}, "dir must be asc or desc"),
        ({"limit": "ten"}, "limit must be an integer"),
        ({"passed": "yes"}, "passed must be 0 or 1"),
    ],
)
def test_bad_query_is_a_clear_400(client: TestClient, params: dict[str, str], message: str) -> None:
    response = client.get("/api/runs/core-random/episodes", params=params)
    assert response.status_code == 400
    assert message in response.json()["error"]


def test_episode_detail_pairs_calls_with_results(client: TestClient) -> None:
    response = client.get("/api/runs/core-oracle/episodes/hello-file%230")
    assert response.status_code == 200
    data = response.json()
    assert data["key"] == "hello-file#0" and data["score"]["passed"]
    calls = [c for s in data["steps"] for c in s["calls"]]
    assert calls and all(c["result"] is not None for c in calls)
    assert all(c["id"] and isinstance(c["arguments"], dict) for c in calls)
    assert data["score"]["checks"] and all("detail" in c for c in data["score"]["checks"])
    changed = [s for s in data["steps"] if s["diff"]]
    assert changed and "data/hello.txt" in str(changed[0]["diff"])


def test_step_files_show_the_text_diff(client: TestClient) -> None:
    data = client.get("/api/runs/core-oracle/episodes/hello-file%230").json()
    step = next(s for s in data["steps"] if s["diff"] and s["diff"]["files_modified"])
    files = client.get(f"/api/runs/core-oracle/episodes/hello-file%230/steps/{step['index']}/files")
    body = files.json()
    assert body["available"]
    hello = next(f for f in body["files"] if f["path"].endswith("hello.txt"))
    assert any(line.startswith("+") and "Hello" in line for line in hello["diff"])
    quiet = next(s for s in data["steps"] if not s["diff"])
    url = f"/api/runs/core-oracle/episodes/hello-file%230/steps/{quiet['index']}/files"
    assert client.get(url).json() == {"available": False, "files": []}


def test_compare_pairs_episodes(client: TestClient) -> None:
    data = client.get("/api/compare", params={"a": "core-oracle", "b": "core-random"}).json()
    success = next(m for m in data["metrics"] if m["name"] == "success")
    assert success["verdict"] == "worse" and success["change"] < 0
    assert data["regressions_total"] == len(data["regressions"]) > 0
    assert data["improvements_total"] == 0
    assert data["run_a"]["id"] == "core-oracle" and data["run_b"]["id"] == "core-random"
    assert any(t["change"] == "broke" for t in data["tasks"])


@pytest.mark.parametrize(
    "url",
    [
        "/api/runs/nope",
        "/api/runs/nope/episodes",
        "/api/runs/core-random/episodes/nope%230",
        "/api/runs/..%2F..%2Fetc/episodes",
        "/api/compare?a=core-random&b=nope",
    ],
)
def test_unknown_things_are_404_json(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert response.status_code == 404
    assert "error" in response.json()


def test_pages_render_and_unknown_pages_explain(client: TestClient) -> None:
    for url in [
        "/",
        "/runs/core-random",
        "/runs/core-random/episodes/hello-file%230",
        "/compare?a=core-oracle&b=core-random",
    ]:
        response = client.get(url)
        assert response.status_code == 200 and "text/html" in response.headers["content-type"]
        assert "script-src 'self'" in response.headers["content-security-policy"]
    missing = client.get("/runs/nope")
    assert missing.status_code == 404 and "no run &#39;nope&#39;" in missing.text
    assert client.get("/runs/core-random/episodes/nope%230").status_code == 404
    assert client.get("/no/such/page").status_code == 404
    assert client.get("/compare").status_code == 400
    assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")


def test_other_hosts_are_refused(runs_dir: Path) -> None:
    with TestClient(create_app(runs_dir), base_url="http://evil.example") as other:
        assert other.get("/api/runs").status_code == 400


def test_run_names_and_content_are_escaped(tmp_path: Path) -> None:
    evil = "<img src=x onerror=alert(1)>"
    store = RunStore(tmp_path / evil)
    store.set_meta({"config": {"agent": evil}, "planned": 1})
    rec = record("t1", text=evil)
    store.append(rec)
    store.finalize(summarize([rec], {"config": {"agent": evil}, "planned": 1}))
    store.close()
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        page = client.get(f"/runs/{evil}")
        assert page.status_code == 200
        assert evil not in page.text and "&lt;img src=x onerror=alert(1)&gt;" in page.text
        data = client.get(f"/api/runs/{evil}/episodes/t1%230").json()
        assert data["final_answer"] == evil  # served as JSON data; the page sets it as text


def test_unfinished_and_broken_runs_are_listed(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "running")
    store.set_meta({"config": {"agent": "a"}, "planned": 4})
    store.append(record("t1", passed=True))
    store.close()
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "run.db").write_text("not a database")
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        runs = {r["id"]: r for r in client.get("/api/runs").json()["runs"]}
        assert runs["running"]["finished"] is False
        assert runs["running"]["episodes"] == {
            "planned": 4,
            "finished": 1,
            "infra_errors": 0,
            "complete": False,
        }
        assert "error" in runs["broken"]
        assert client.get("/api/runs/running/episodes").json()["total"] == 1


def test_a_single_run_directory_is_a_catalog_of_one(runs_dir: Path) -> None:
    with TestClient(create_app(runs_dir / "core-oracle"), base_url="http://127.0.0.1") as client:
        assert [r["id"] for r in client.get("/api/runs").json()["runs"]] == ["core-oracle"]


def test_overview_says_live_and_banners_infra_errors(tmp_path: Path) -> None:
    from toolproof.trajectory import Termination

    down = record("t2", text="x")
    down.score.termination = down.trajectory.termination = Termination.INFRA_ERROR
    down.trajectory.error = "refused <script>alert(1)</script>"
    store = RunStore(tmp_path / "run")
    meta: dict[str, Any] = {"config": {"agent": "a"}, "planned": 3}
    store.set_meta(meta)
    store.append(record("t1", passed=True))
    store.append(down)
    with TestClient(create_app(tmp_path), base_url="http://127.0.0.1") as client:
        live = client.get("/api/runs/run").json()
        assert live["live"] is True  # no summary.json yet: the page polls
        assert live["banner"] == (
            "1 of 2 episodes were infrastructure errors: not scored; "
            "first error: refused <script>alert(1)</script>"  # JSON data, set as text
        )
        store.append(record("t3", passed=True))
        store.finalize(summarize(store_records(tmp_path / "run"), meta))
        store.close()
        done = client.get("/api/runs/run").json()
        assert done["live"] is False and done["banner"].startswith("1 of 3 episodes")
        page = client.get("/runs/run").text
        assert 'id="banner"' in page and 'id="live"' in page


def store_records(run_dir: Path) -> list[Any]:
    from toolproof.results import RunReader

    with RunReader(run_dir) as reader:
        return list(reader.records())
