"""The Inspect AI export: Inspect's own reader, lister and viewer bundle accept it."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.export import default_name, export_run

inspect_log = pytest.importorskip("inspect_ai.log")


def _export(run: Path, folder: Path) -> Path:
    folder.mkdir(exist_ok=True)
    target = folder / default_name(run, "inspect")
    with target.open("wb") as fh:
        export_run(run, "inspect", fh)
    return target


def test_read_eval_log_loads_every_episode_with_its_scores(
    varied_run: Path, tmp_path: Path
) -> None:
    log = inspect_log.read_eval_log(str(_export(varied_run, tmp_path / "logs")))
    assert log.status == "success"
    assert log.eval.task == "demo"
    assert log.eval.model == "gpt-4o-mini"
    assert log.eval.solver == "openai:gpt-4o-mini"
    samples = {(s.id, s.epoch): s for s in log.samples or []}
    assert len(samples) == 6
    good = samples[("alpha", 1)]
    assert good.scores is not None
    assert good.scores["passed"].value == 1
    assert good.scores["fraction"].value == 1.0
    assert good.scores["level"].value == "perfect"
    # The transcript: prompt, the call turn, both tool results (one an error), the answer.
    roles = [m.role for m in good.messages]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]
    call_turn = good.messages[2]
    assert [c.function for c in call_turn.tool_calls or []] == ["lookup", "update"]
    assert call_turn.tool_calls[1].arguments == {"sku": "A1", "qty": 3}  # type: ignore[index]
    failed_tool = good.messages[4]
    assert failed_tool.error is not None and "below 3" in failed_tool.error.message
    usage = good.model_usage["gpt-4o-mini"]
    assert (usage.input_tokens, usage.output_tokens) == (280, 35)
    assert usage.total_cost == pytest.approx(0.0021)

    failed = samples[("alpha", 2)]
    assert failed.scores is not None and failed.scores["passed"].value == 0
    assert failed.scores["fraction"].value == 0.25
    checks = failed.scores["passed"].metadata["checks"]  # type: ignore[index]
    assert [c["name"] for c in checks] == ["stock_updated", "said_sku"]
    assert failed.metadata["failure_mode"] == "wrong_value"

    infra = samples[("beta", 1)]
    assert infra.error is not None and "HTTP 503" in infra.error.message

    # Accuracy over the scored episodes: infra errors are out of the denominator.
    (passed, fraction) = log.results.scores  # type: ignore[union-attr]
    assert passed.metrics["accuracy"].value == pytest.approx(2 / 5)
    assert passed.scored_samples == 5 and passed.unscored_samples == 1
    assert fraction.metrics["mean"].value == pytest.approx((1 + 0.25 * 2 + 1 + 0.25) / 5)


def test_inspect_lists_the_log_and_bundles_it_for_its_viewer(
    varied_run: Path, tmp_path: Path
) -> None:
    logs = tmp_path / "logs"
    target = _export(varied_run, logs)
    listed = inspect_log.list_eval_logs(str(logs))
    assert [Path(info.name).name for info in listed] == [target.name]
    assert inspect_log.read_eval_log(listed[0], header_only=True).eval.task == "demo"
    # The same through Inspect's command line (`inspect log list`, `inspect view bundle`).
    cli = shutil.which("inspect", path=str(Path(sys.executable).parent))
    assert cli is not None
    out = subprocess.run(
        [cli, "log", "list", "--log-dir", str(logs), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert target.name in out.stdout
    bundle = tmp_path / "bundle"
    subprocess.run(
        [cli, "view", "bundle", "--log-dir", str(logs), "--output-dir", str(bundle)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert (bundle / "index.html").is_file()
    assert (bundle / "logs" / target.name).is_file()


def test_an_empty_run_is_a_log_with_no_samples(tmp_path: Path) -> None:
    from .runs import write_run

    run = write_run(tmp_path / "empty", [])
    buffer = io.BytesIO()
    assert export_run(run, "inspect", buffer) == (0, [])
    path = tmp_path / default_name(run, "inspect")
    path.write_bytes(buffer.getvalue())
    log = inspect_log.read_eval_log(str(path))
    assert log.samples == []
    assert log.results is not None and log.results.total_samples == 0


def test_a_stopped_run_is_a_cancelled_log(tmp_path: Path) -> None:
    import json

    from .runs import varied_records, write_run

    run = write_run(tmp_path / "stopped", varied_records()[:2])
    (run / "summary.json").write_text(json.dumps({"episodes": {"complete": False}}))
    path = _export(run, tmp_path / "logs")
    log = inspect_log.read_eval_log(str(path))
    assert log.status == "cancelled"
    assert len(log.samples or []) == 2
