"""The evaluation file: ``toolproof.yaml`` with 2 agents x 2 models x 2 suites runs with
one command, one run folder per cell plus ``matrix.json``, prints a leaderboard per suite
(the viewer shows the same ranking), is resumable as a whole, and its mistakes are
``FILE:LINE: FIELD: MESSAGE`` problems.

The models are played by two scripted model servers on loopback (the real OpenAI and
Anthropic SDKs over HTTP): one answers right, the other wrong.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

pytest.importorskip("openai")
pytest.importorskip("anthropic")

from toolproof.spec import SpecError
from toolproof.spec.evalfile import load_eval_file
from toolproof.testing import ModelServer, ScriptedReply, sequence_policy
from toolproof.viewer import create_app
from toolproof_helpers import CliResult, make_task, write_suite

Invoke = Callable[..., CliResult]


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[ModelServer, ModelServer]]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    right = sequence_policy(
        [ScriptedReply("There are 7 units.", usage=(50, 5))], when_exhausted="done"
    )
    wrong = sequence_policy(
        [ScriptedReply("There are 8 units.", usage=(40, 4))], when_exhausted="done"
    )
    with ModelServer(right) as good, ModelServer(wrong) as bad:
        yield good, bad


def _write_eval(root: Path, good: ModelServer, bad: ModelServer) -> Path:
    suite_a = write_suite(root / "suite-a", [make_task(id=f"a{i}") for i in range(3)])
    suite_b = write_suite(root / "suite-b", [make_task(id=f"b{i}") for i in range(2)], name="other")
    document = {
        "name": "two-by-two",
        "suites": [str(suite_a), {"suite": str(suite_b), "tasks": ["b*"]}],
        "agents": [
            {"name": "oai", "agent": "openai:{model}", "args": {"base_url": good.base_url}},
            {
                "name": "ant",
                "agent": "anthropic:{model}",
                "args": {"base_url": bad.anthropic_base_url},
            },
        ],
        "models": ["gpt-4o-mini", "gpt-4o"],
        "epochs": 2,
        "parallel": 2,
        "gates": {"max_infra_errors": 0.0},
        "out": str(root / "runs" / "eval"),
    }
    path = root / "toolproof.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return path


def test_a_matrix_runs_with_one_command_and_prints_a_leaderboard(
    invoke: Invoke,
    servers: tuple[ModelServer, ModelServer],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good, bad = servers
    _write_eval(tmp_path, good, bad)
    monkeypatch.chdir(tmp_path)  # ./toolproof.yaml is found by itself
    result = invoke("run")
    assert result.code == 0, result.err
    folder = tmp_path / "runs" / "eval"
    matrix = json.loads((folder / "matrix.json").read_text())
    cells = {c["cell"]: c for c in matrix["cells"]}
    assert len(cells) == 8  # 2 suites x 2 agents x 2 models
    for cell in cells.values():
        assert cell["exit_code"] == 0 and cell["complete"] is True
        assert (Path(cell["run"]) / "summary.json").is_file()
        assert cell["success"] == (1.0 if "-oai-" in cell["cell"] else 0.0)
    assert result.out.count("leaderboard of 4 run(s)") == 2  # one board per suite
    board_lines = [line for line in result.out.splitlines() if line.strip()[:2] in ("1 ", "2 ")]
    assert all("openai:" in line for line in board_lines)  # the right-answering agent leads
    summary = json.loads(
        next(iter(folder.glob("*-oai-gpt-4o-mini"))).joinpath("summary.json").read_text()
    )
    assert summary["tokens"]["total"] == 55 * summary["episodes"]["finished"]
    assert summary["config"]["agent_options"]["cache"] == str((folder / "cache").resolve())

    mini = [c["run"] for c in matrix["cells"] if c["suite"].endswith("suite-a")]
    with TestClient(create_app(folder), base_url="http://127.0.0.1") as client:
        api = client.get("/api/leaderboard", params=[("run", Path(r).name) for r in mini]).json()
    assert [s["agent"] for s in api["standings"]][:2] == [
        "openai:gpt-4o",
        "openai:gpt-4o-mini",
    ] or [s["agent"] for s in api["standings"]][:2] == ["openai:gpt-4o-mini", "openai:gpt-4o"]
    assert all(s["success"] == 1.0 for s in api["standings"][:2])

    again = invoke("run")  # the matrix again: every cell complete, nothing re-run
    assert again.code == 0, again.err
    assert again.err.count("complete, skipped") == 8


def test_a_stopped_matrix_resumes_as_a_whole(
    invoke: Invoke,
    servers: tuple[ModelServer, ModelServer],
    tmp_path: Path,
) -> None:
    good, bad = servers
    path = _write_eval(tmp_path, good, bad)
    first = invoke("run", "--config", path, "--max-tokens", "100", "--parallel", "1")
    assert first.code == 3  # every cell stopped by its budget
    matrix = json.loads((tmp_path / "runs" / "eval" / "matrix.json").read_text())
    assert all(c["complete"] is False for c in matrix["cells"])
    done = invoke("run", "--config", path, "--max-tokens", "100000")
    assert done.code == 0, done.err
    matrix = json.loads((tmp_path / "runs" / "eval" / "matrix.json").read_text())
    assert all(c["complete"] is True for c in matrix["cells"])


@pytest.mark.parametrize(
    ("text", "where", "fragment"),
    [
        (
            "suites: [core]\nagents:\n  - {name: a, agent: oracle, colour: red}\n",
            ":3: agents[0].colour",
            "not a known field",
        ),
        ("suites: [core]\nagents: []\n", ":2: agents", "at least 1"),
        (
            "suites: [core]\nagents:\n  - {name: a, agent: 'openai:{model}'}\n",
            ":3: agents[0].agent",
            "add models",
        ),
        (
            "suites: [core]\nagents:\n  - {name: a, agent: oracle}\n  - {name: a, agent: noop}\n",
            ":4: agents[1].name",
            "names must differ",
        ),
        (
            "suites: [core]\nagents:\n  - {name: ../x, agent: oracle}\n",
            ":3: agents[0].name",
            "folder name",
        ),
        (
            "suites: [core]\nagents:\n  - {name: a, agent: oracle}\nbudgets: {max_cost: .nan}\n",
            ":4: budgets.max_cost",
            "",
        ),
        ("- just a list\n", ":1: ", "mapping"),
        ("suites: [core\n", ":", "YAML"),
    ],
)
def test_mistakes_are_file_line_problems(
    invoke: Invoke, tmp_path: Path, text: str, where: str, fragment: str
) -> None:
    path = tmp_path / "toolproof.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_eval_file(path)
    shown = str(caught.value)
    assert f"{path}{where}" in shown and fragment in shown, shown
    result = invoke("run", "--config", path)
    assert result.code == 2 and "Traceback" not in result.err


def test_config_with_a_suite_is_refused(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "e.yaml"
    path.write_text("suites: [core]\nagents: [{name: a, agent: oracle}]\n")
    result = invoke("run", "core", "--config", path)
    assert result.code == 2 and "--config runs an evaluation file" in result.err


_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12))
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_FIELDS = st.sampled_from(
    ["name", "suites", "agents", "models", "epochs", "seed", "budgets", "gates", "out", "x"]
)


@settings(
    max_examples=int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60")),
    derandomize=True,
    deadline=None,
)
@given(st.dictionaries(_FIELDS, _VALUES, max_size=6))
def test_any_document_loads_or_is_a_problem_of_the_file(document: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "toolproof.yaml"
        path.write_text(yaml.safe_dump(document), encoding="utf-8")
        try:
            evaluation = load_eval_file(path)
        except SpecError as exc:
            assert exc.problems and all(p.file == path for p in exc.problems)
            return
    assert evaluation.cells()  # a valid file has at least one cell
    assert all(cell.label and "/" not in cell.label for cell in evaluation.cells())
